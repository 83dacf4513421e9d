package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"slices"
	"strings"
	"text/tabwriter"
	"time"

	// A freeze's schedule names an IANA time zone: the binary carries them, so that they
	// work on a machine (or an image) without a zone database.
	_ "time/tzdata"

	"github.com/spf13/cobra"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/release-controller/release-controller/api/v1alpha1"
	"github.com/release-controller/release-controller/internal/freeze"
	"github.com/release-controller/release-controller/internal/kubeclient"
	"github.com/release-controller/release-controller/internal/manager"
)

// freezeFlags are the flags every freeze verb takes: where the API server is, and which
// freeze a name means.
type freezeFlags struct {
	kube      kubeclient.Options
	namespace string
	cluster   bool
}

func (f *freezeFlags) bind(cmd *cobra.Command) {
	f.kube.AddFlags(cmd.Flags())
	cmd.Flags().StringVarP(&f.namespace, "namespace", "n", "", "namespace of the ReleaseFreeze; default: the kubeconfig context's")
	cmd.Flags().BoolVar(&f.cluster, "cluster", false, "a ClusterReleaseFreeze, of every namespace's pipelines")
}

func (f *freezeFlags) client() (client.Client, error) {
	cfg, err := f.kube.Config()
	if err != nil {
		return nil, err
	}
	return client.New(cfg, client.Options{Scheme: manager.NewScheme()})
}

// object is an empty ReleaseFreeze (NAME, NAMESPACE/NAME) or, with --cluster, an empty
// ClusterReleaseFreeze, named.
func (f *freezeFlags) object(arg string) (client.Object, error) {
	if f.cluster {
		if f.namespace != "" || strings.Contains(arg, "/") {
			return nil, fmt.Errorf("a ClusterReleaseFreeze has a name and no namespace, not %q (--namespace %q)", arg, f.namespace)
		}
		return &v1alpha1.ClusterReleaseFreeze{ObjectMeta: metav1.ObjectMeta{Name: arg}}, nil
	}
	key, err := reconcileKey(arg, f.namespace, f.kube.Kubeconfig)
	if err != nil {
		return nil, err
	}
	return &v1alpha1.ReleaseFreeze{ObjectMeta: metav1.ObjectMeta{Namespace: key.Namespace, Name: key.Name}}, nil
}

func newFreezeCommand() *cobra.Command {
	cmd := &cobra.Command{
		Use:   "freeze",
		Short: "Start, end and list release freezes: what holds the pipelines' promotions",
		Long: `A release freeze holds the promotions of the pipelines it covers: a ReleaseFreeze those of its
namespace, a ClusterReleaseFreeze (--cluster) those of every namespace, narrowed by the
pipelines' labels and by environment. While it is active its environments are promoted
nothing; each start and end goes into the release log. A freeze without an end is a
stop-the-line: it holds until "freeze end". Recurring freezes (a cron schedule in a time
zone) are written as objects (kubectl apply); see docs/pipelines.md.`,
	}
	cmd.AddCommand(newFreezeStartCommand(), newFreezeEndCommand(), newFreezeListCommand())
	return cmd
}

func newFreezeStartCommand() *cobra.Command {
	var flags freezeFlags
	var reason, pipelines, until string
	var environments []string
	var duration time.Duration
	cmd := &cobra.Command{
		Use:   "start NAME --reason REASON",
		Short: "Freeze promotions now, until a time, for a while, or until ended",
		Long: `Create the freeze NAME (NAMESPACE/NAME, or --namespace, else the kubeconfig context's namespace;
--cluster for a ClusterReleaseFreeze), active from now. Without --until or --for it is a
stop-the-line, held until "release-controller freeze end NAME".`,
		Example: `  release-controller freeze start incident-42 --reason "payments down" -n shop
  release-controller freeze start holidays --cluster --reason "end of year" --environments prod --until 2027-01-04T08:00:00Z
  release-controller freeze start release-day --reason "launch" --pipelines team=web --for 6h`,
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			if strings.TrimSpace(reason) == "" {
				return errors.New("--reason is required: it is shown on every environment the freeze holds and in the release log")
			}
			now := time.Now()
			spec := v1alpha1.ReleaseFreezeSpec{Reason: reason, Environments: environments}
			end, err := freezeEnd(until, duration, now)
			if err != nil {
				return err
			}
			spec.End = end
			if pipelines != "" {
				if spec.Pipelines, err = metav1.ParseToLabelSelector(pipelines); err != nil {
					return fmt.Errorf("--pipelines: %w", err)
				}
			}
			obj, err := flags.object(args[0])
			if err != nil {
				return err
			}
			into, _ := freeze.Parts(obj)
			*into = spec
			c, err := flags.client()
			if err != nil {
				return err
			}
			return startFreeze(cmd.Context(), c, obj, cmd.OutOrStdout())
		},
	}
	flags.bind(cmd)
	cmd.Flags().StringVar(&reason, "reason", "", "why: shown on every environment the freeze holds and in the release log")
	cmd.Flags().StringVar(&pipelines, "pipelines", "", "label selector of the pipelines it holds, e.g. team=web,tier!=batch; default: every pipeline")
	cmd.Flags().StringSliceVar(&environments, "environments", nil, "the environments it holds, e.g. staging,prod; default: every environment")
	cmd.Flags().StringVar(&until, "until", "", "when it ends, RFC 3339, e.g. 2027-01-04T08:00:00Z")
	cmd.Flags().DurationVar(&duration, "for", 0, "how long it holds from now, e.g. 6h")
	cmd.MarkFlagsMutuallyExclusive("until", "for")
	return cmd
}

// freezeEnd is the end --until or --for give at now (nil: none, a stop-the-line).
func freezeEnd(until string, duration time.Duration, now time.Time) (*metav1.Time, error) {
	var end time.Time
	switch {
	case until != "":
		t, err := time.Parse(time.RFC3339, until)
		if err != nil {
			return nil, fmt.Errorf("--until is a time in RFC 3339, e.g. 2027-01-04T08:00:00Z: %w", err)
		}
		end = t
	case duration < 0:
		return nil, fmt.Errorf("--for %s: a freeze holds for a positive duration", duration)
	case duration > 0:
		end = now.Add(duration)
	default:
		return nil, nil
	}
	if !end.After(now) {
		return nil, fmt.Errorf("--until %s has passed: the freeze would never hold", end.UTC().Format(time.RFC3339))
	}
	t := metav1.NewTime(end)
	return &t, nil
}

// startFreeze creates obj and says what it holds.
func startFreeze(ctx context.Context, c client.Client, obj client.Object, out io.Writer) error {
	name := freeze.Name(obj.GetNamespace(), obj.GetName())
	if err := c.Create(ctx, obj); err != nil {
		if apierrors.IsAlreadyExists(err) {
			return fmt.Errorf("freeze %s exists: see it with `release-controller freeze list`, end it with `release-controller freeze end`, or choose another name", name)
		}
		return fmt.Errorf("creating freeze %s: %w", name, err)
	}
	spec, _ := freeze.Parts(obj)
	until := "until `release-controller freeze end " + freezeArg(obj) + "`"
	if spec.End != nil {
		until = "until " + spec.End.UTC().Format(time.RFC3339)
	}
	_, err := fmt.Fprintf(out, "✔ freeze %s started: %s; %s, %s\n", name, spec.Reason, freeze.Covers(*spec), until)
	return err
}

// freezeArg is how the freeze verbs name obj on the command line.
func freezeArg(obj client.Object) string {
	if obj.GetNamespace() == "" {
		return obj.GetName() + " --cluster"
	}
	return obj.GetNamespace() + "/" + obj.GetName()
}

func newFreezeEndCommand() *cobra.Command {
	var flags freezeFlags
	cmd := &cobra.Command{
		Use:   "end NAME",
		Short: "End a freeze now; it stays for the record",
		Long: `End the freeze NAME now: its end is set to now, the pipelines it held promote what is due, and
the object stays, with its start and end, for the record (kubectl delete removes it). A
recurring freeze is not ended this way: edit or delete its schedule.`,
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			obj, err := flags.object(args[0])
			if err != nil {
				return err
			}
			c, err := flags.client()
			if err != nil {
				return err
			}
			return endFreeze(cmd.Context(), c, obj, time.Now(), cmd.OutOrStdout())
		},
	}
	flags.bind(cmd)
	return cmd
}

// endFreeze sets obj's end to now (whole seconds, as the API keeps it).
func endFreeze(ctx context.Context, c client.Client, obj client.Object, now time.Time, out io.Writer) error {
	name := freeze.Name(obj.GetNamespace(), obj.GetName())
	if err := c.Get(ctx, client.ObjectKeyFromObject(obj), obj); err != nil {
		if apierrors.IsNotFound(err) {
			return fmt.Errorf("freeze %s not found", name)
		}
		return fmt.Errorf("reading freeze %s: %w", name, err)
	}
	spec, _ := freeze.Parts(obj)
	now = now.Truncate(time.Second)
	switch {
	case spec.Schedule != nil:
		return fmt.Errorf("freeze %s recurs (%q in %s): edit its schedule or delete it", name, spec.Schedule.Cron, zoneOf(spec.Schedule))
	case spec.End != nil && !spec.End.After(now):
		return fmt.Errorf("freeze %s ended at %s already", name, spec.End.UTC().Format(time.RFC3339))
	case spec.Start != nil && !spec.Start.Before(&metav1.Time{Time: now}):
		return fmt.Errorf("freeze %s has not started (it starts at %s): delete it instead", name, spec.Start.UTC().Format(time.RFC3339))
	}
	base := obj.DeepCopyObject().(client.Object)
	end := metav1.NewTime(now)
	spec.End = &end
	// Against the version read: an edit meanwhile is not overwritten.
	if err := c.Patch(ctx, obj, client.MergeFromWithOptions(base, client.MergeFromWithOptimisticLock{})); err != nil {
		return fmt.Errorf("ending freeze %s: %w", name, err)
	}
	_, err := fmt.Fprintf(out, "✔ freeze %s ended at %s: %s; it stays for the record\n", name, now.UTC().Format(time.RFC3339), spec.Reason)
	return err
}

func zoneOf(s *v1alpha1.FreezeSchedule) string {
	if s.TimeZone == "" {
		return "UTC"
	}
	return s.TimeZone
}

func newFreezeListCommand() *cobra.Command {
	var flags freezeFlags
	var all bool
	cmd := &cobra.Command{
		Use:   "list",
		Short: "List the freezes: the namespace's and the cluster's, and where each stands",
		Long: `List the ReleaseFreezes of the namespace (--namespace, else the kubeconfig context's;
--all-namespaces for every one) and the ClusterReleaseFreezes, with where the controller
says each stands: active, scheduled (its next window to come), ended, or invalid.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			namespace := ""
			if !all {
				// The namespace a freeze's NAME would be in.
				key, err := reconcileKey("-", flags.namespace, flags.kube.Kubeconfig)
				if err != nil {
					return err
				}
				namespace = key.Namespace
			}
			c, err := flags.client()
			if err != nil {
				return err
			}
			return listFreezes(cmd.Context(), c, namespace, cmd.OutOrStdout())
		},
	}
	flags.kube.AddFlags(cmd.Flags())
	cmd.Flags().StringVarP(&flags.namespace, "namespace", "n", "", "namespace of the ReleaseFreezes; default: the kubeconfig context's")
	cmd.Flags().BoolVarP(&all, "all-namespaces", "A", false, "the ReleaseFreezes of every namespace")
	return cmd
}

// listFreezes prints the ReleaseFreezes of namespace ("": every one) and the
// ClusterReleaseFreezes, a line each.
func listFreezes(ctx context.Context, c client.Client, namespace string, out io.Writer) error {
	var local v1alpha1.ReleaseFreezeList
	var opts []client.ListOption
	if namespace != "" {
		opts = append(opts, client.InNamespace(namespace))
	}
	if err := c.List(ctx, &local, opts...); err != nil {
		return fmt.Errorf("listing ReleaseFreezes: %w", err)
	}
	var cluster v1alpha1.ClusterReleaseFreezeList
	if err := c.List(ctx, &cluster); err != nil {
		return fmt.Errorf("listing ClusterReleaseFreezes: %w", err)
	}
	type row struct {
		name   string
		spec   v1alpha1.ReleaseFreezeSpec
		status v1alpha1.ReleaseFreezeStatus
	}
	var rows []row
	for _, f := range cluster.Items {
		rows = append(rows, row{f.Name + " (cluster)", f.Spec, f.Status})
	}
	for _, f := range local.Items {
		rows = append(rows, row{f.Namespace + "/" + f.Name, f.Spec, f.Status})
	}
	slices.SortFunc(rows, func(a, b row) int { return strings.Compare(a.name, b.name) })
	if len(rows) == 0 {
		_, err := fmt.Fprintln(out, "no freezes")
		return err
	}
	w := tabwriter.NewWriter(out, 0, 4, 2, ' ', 0)
	fmt.Fprintln(w, "NAME\tSTATE\tSINCE\tUNTIL\tNEXT\tHOLDS\tREASON")
	for _, r := range rows {
		fmt.Fprintf(w, "%s\t%s\t%s\t%s\t%s\t%s\t%s\n", r.name, freezeState(&r.status), stampOrDash(r.status.ActiveSince),
			stampOrDash(r.status.ActiveUntil), stampOrDash(r.status.NextStart), freeze.Covers(r.spec), r.spec.Reason)
	}
	return w.Flush()
}

// freezeState is where the controller says a freeze stands, in a word.
func freezeState(s *v1alpha1.ReleaseFreezeStatus) string {
	active := meta.FindStatusCondition(s.Conditions, v1alpha1.ConditionFreezeActive)
	switch {
	case active == nil:
		return "pending"
	case active.Status == metav1.ConditionTrue:
		return "active"
	case active.Reason == v1alpha1.ReasonInvalidFreeze:
		return "invalid"
	case active.Reason == v1alpha1.ReasonOutsideWindow:
		return "scheduled"
	}
	return "ended"
}

func stampOrDash(t *metav1.Time) string {
	if t == nil {
		return "-"
	}
	return t.UTC().Format(time.RFC3339)
}
