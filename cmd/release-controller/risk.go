package main

import (
	"cmp"
	"context"
	"fmt"
	"io"
	"net/url"
	"regexp"
	"slices"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/spf13/cobra"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/duration"
	"k8s.io/apimachinery/pkg/util/validation"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/yaml"

	"github.com/release-controller/release-controller/api/v1alpha1"
	"github.com/release-controller/release-controller/internal/conditions"
	"github.com/release-controller/release-controller/internal/jira"
	"github.com/release-controller/release-controller/internal/kubeclient"
	"github.com/release-controller/release-controller/internal/manager"
)

func newRiskCommand() *cobra.Command {
	cmd := &cobra.Command{
		Use:   "risk",
		Short: "Declare and list the upgrade risks the update service (/graph) serves",
	}
	cmd.AddCommand(newRiskDeclareCommand(), newRiskListCommand())
	return cmd
}

// riskRequest is what `risk declare` was asked for, before the payload is read.
type riskRequest struct {
	// Name is the UpgradeRisk object's name.
	Name string
	// Stream, when set, must be the payload's stream; the risk is limited to it either way.
	Stream                                string
	From, RiskName, Message, URL, FixedIn string
	// Server is the release-controller API server's URL, for a link to the payload's page.
	Server string
	PromQL []string
	Always bool
}

// Bounds the UpgradeRisk CRD sets (api/v1alpha1/upgraderisk_types.go), checked here so that
// a mistake is named before the API server is asked.
const (
	maxRiskMessage = 1024
	maxRiskRules   = 16
	maxRiskQuery   = 4096
)

// riskNamePattern is Cincinnati's risk name, which the cluster-version operator uses as a
// condition reason.
var riskNamePattern = regexp.MustCompile(`^[A-Z][A-Za-z0-9]*$`)

func newRiskDeclareCommand() *cobra.Command {
	var (
		kube      kubeclient.Options
		req       riskRequest
		tag       string
		namespace string
		dryRun    bool
	)
	cmd := &cobra.Command{
		Use:   "declare NAME --payload TAG [flags]",
		Short: "Declare an upgrade risk into a payload from what the payload records",
		Long: `Create the UpgradeRisk NAME for the upgrades into the payload TAG (its version is the
risk's "to"), from the facts its page shows:

  --message   default: the verifications that failed on the payload, with their runs; refused
              when the payload records none (say what goes wrong and who is exposed)
  --url       default: the payload's page on --server, else the first failed run's URL
  --risk-name default: NAME in CamelCase (aws-boot-images: AwsBootImages)
  --stream    default: the payload's stream (the risk is limited to it)

Each --promql QUERY is a PromQL matching rule (1: the cluster is exposed, 0: it is not), in
order; --always adds an Always rule after them (alone: every cluster is exposed, and the
edges stay offered as not recommended). With no rule at all the edges are blocked: /graph
leaves them out for every cluster instead of serving them as conditional edges.
--from limits the risk to upgrades from the versions an anchored regular expression
(^…$) matches. --dry-run prints the UpgradeRisk as YAML (for kubectl apply -f -) and creates
nothing.

NAME may be NAMESPACE/NAME; otherwise --namespace, else the kubeconfig context's namespace.
The payload is read from the same namespace.`,
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			key, err := reconcileKey(args[0], namespace, kube.Kubeconfig)
			if err != nil {
				return err
			}
			req.Name = key.Name
			if err := checkRiskRequest(req); err != nil {
				return err
			}
			c, err := kubeClient(kube)
			if err != nil {
				return err
			}
			var p v1alpha1.ReleasePayload
			if err := c.Get(cmd.Context(), types.NamespacedName{Namespace: key.Namespace, Name: tag}, &p); err != nil {
				if apierrors.IsNotFound(err) {
					return fmt.Errorf("release payload %s/%s not found", key.Namespace, tag)
				}
				return fmt.Errorf("reading release payload %s/%s: %w", key.Namespace, tag, err)
			}
			risk, err := declaredRisk(&p, req)
			if err != nil {
				return err
			}
			if dryRun {
				return printYAML(cmd.OutOrStdout(), risk)
			}
			return createRisk(cmd.Context(), c, risk, cmd.OutOrStdout())
		},
	}
	f := cmd.Flags()
	f.StringVar(&tag, "payload", "", "the payload (its tag) the risky upgrades lead into (required)")
	f.StringVar(&req.Stream, "stream", "", "the stream the risk is limited to; must be the payload's (default: the payload's)")
	f.StringVar(&req.From, "from", "", "anchored regular expression (^…$) of the versions the risky upgrades start from (default: every version)")
	f.StringVar(&req.RiskName, "risk-name", "", "the risk's name clusters see, CamelCase (default: NAME in CamelCase)")
	f.StringVar(&req.Message, "message", "", "what goes wrong and who is exposed (default: the payload's failed verifications)")
	f.StringVar(&req.URL, "url", "", "an http(s) link describing the risk (default: the payload's page on --server, else a failed run's URL)")
	f.StringVar(&req.Server, "server", "", "URL of the release-controller API server, whose page of the payload the risk links by default")
	f.StringArrayVar(&req.PromQL, "promql", nil, "a PromQL matching rule, answering 1 for exposed clusters (repeatable, in order)")
	f.BoolVar(&req.Always, "always", false, "add an Always matching rule after the PromQL ones (alone: every cluster is exposed, the edges stay as not recommended)")
	f.StringVar(&req.FixedIn, "fixed-in", "", "the first version without the problem, for readers")
	f.StringVarP(&namespace, "namespace", "n", "", "namespace of the risk and the payload; default: the kubeconfig context's")
	f.BoolVar(&dryRun, "dry-run", false, "print the UpgradeRisk as YAML and create nothing")
	kube.AddFlags(f)
	_ = cmd.MarkFlagRequired("payload")
	return cmd
}

// checkRiskRequest refuses what the API server would refuse, saying which flag is wrong.
func checkRiskRequest(req riskRequest) error {
	if errs := validation.IsDNS1123Subdomain(req.Name); len(errs) > 0 {
		return fmt.Errorf("NAME %q is no object name: %s", req.Name, strings.Join(errs, "; "))
	}
	if req.From != "" {
		if !strings.HasPrefix(req.From, "^") || !strings.HasSuffix(req.From, "$") {
			return fmt.Errorf(`--from %q is not anchored: write a regular expression from ^ to $, e.g. ^4\.15\..*$`, req.From)
		}
		if _, err := regexp.Compile(req.From); err != nil {
			return fmt.Errorf("--from %q does not compile: %w", req.From, err)
		}
	}
	if req.RiskName != "" && !riskNamePattern.MatchString(req.RiskName) {
		return fmt.Errorf("--risk-name %q must be CamelCase: a capital letter, then letters and digits (e.g. AWSOldBootImages)", req.RiskName)
	}
	if len(req.Message) > maxRiskMessage {
		return fmt.Errorf("--message is %d bytes; at most %d", len(req.Message), maxRiskMessage)
	}
	for _, flag := range []struct{ name, value string }{{"--url", req.URL}, {"--server", req.Server}} {
		if flag.value == "" {
			continue
		}
		if err := checkHTTPURL(flag.value); err != nil {
			return fmt.Errorf("%s: %w", flag.name, err)
		}
	}
	if n := len(req.PromQL) + boolCount(req.Always); n > maxRiskRules {
		return fmt.Errorf("%d matching rules; a risk has at most %d", n, maxRiskRules)
	}
	for i, q := range req.PromQL {
		if strings.TrimSpace(q) == "" || len(q) > maxRiskQuery {
			return fmt.Errorf("--promql #%d must be a query of 1 to %d bytes", i+1, maxRiskQuery)
		}
	}
	return nil
}

func checkHTTPURL(s string) error {
	u, err := url.Parse(s)
	if err != nil {
		return err
	}
	if (u.Scheme != "http" && u.Scheme != "https") || u.Hostname() == "" {
		return fmt.Errorf("%q is not an absolute http or https URL", s)
	}
	return nil
}

func boolCount(b bool) int {
	if b {
		return 1
	}
	return 0
}

// declaredRisk is the UpgradeRisk req declares into payload p: its version as "to", its
// stream, and what the flags leave out taken from what p records (see risk declare's help).
// It is pure.
func declaredRisk(p *v1alpha1.ReleasePayload, req riskRequest) (*v1alpha1.UpgradeRisk, error) {
	version := cmp.Or(p.Spec.PayloadCoordinates.Tag, p.Name)
	stream := p.Spec.PayloadCoordinates.Stream
	if req.Stream != "" && req.Stream != stream {
		return nil, fmt.Errorf("payload %s belongs to stream %s, not %s", p.Name, stream, req.Stream)
	}
	riskName := req.RiskName
	if riskName == "" {
		riskName = camelCase(req.Name)
		if !riskNamePattern.MatchString(riskName) {
			return nil, fmt.Errorf("NAME %q gives no CamelCase risk name (%q): give --risk-name", req.Name, riskName)
		}
	}
	failed := failedVerifications(p)
	message := req.Message
	if message == "" {
		if len(failed) == 0 {
			return nil, fmt.Errorf("payload %s records no failed verification to describe the risk: give --message saying what goes wrong and who is exposed", p.Name)
		}
		message = failureMessage(version, failed)
	}
	link := req.URL
	switch {
	case link != "":
	case req.Server != "":
		link = jira.PayloadPageURL(req.Server)(p)
	default:
		link = failedRunURL(failed)
		if link == "" {
			return nil, fmt.Errorf("no link for the risk: give --url, or --server (the release-controller API server) to link the payload's page")
		}
	}
	rules := make([]v1alpha1.MatchingRule, 0, len(req.PromQL)+1)
	for _, q := range req.PromQL {
		rules = append(rules, v1alpha1.MatchingRule{Type: v1alpha1.MatchingRulePromQL, PromQL: &v1alpha1.PromQLRule{PromQL: q}})
	}
	if req.Always {
		rules = append(rules, v1alpha1.MatchingRule{Type: v1alpha1.MatchingRuleAlways})
	}
	if len(rules) == 0 {
		rules = nil
	}
	return &v1alpha1.UpgradeRisk{
		TypeMeta:   metav1.TypeMeta{APIVersion: v1alpha1.GroupVersion.String(), Kind: "UpgradeRisk"},
		ObjectMeta: metav1.ObjectMeta{Namespace: p.Namespace, Name: req.Name},
		Spec: v1alpha1.UpgradeRiskSpec{
			Stream: stream, To: version, From: req.From, Name: riskName, Message: message, URL: link,
			MatchingRules: rules, FixedIn: req.FixedIn,
		},
	}, nil
}

// camelCase turns an object name (aws-boot-images) into a risk name (AwsBootImages): each
// word, split at '-' and '.', capitalised.
func camelCase(name string) string {
	var b strings.Builder
	for _, word := range strings.FieldsFunc(name, func(r rune) bool { return r == '-' || r == '.' }) {
		b.WriteString(strings.ToUpper(word[:1]) + word[1:])
	}
	return b.String()
}

// failedVerifications are the verifications p records as failed, in its order.
func failedVerifications(p *v1alpha1.ReleasePayload) []v1alpha1.VerificationStatus {
	var out []v1alpha1.VerificationStatus
	for _, v := range p.Status.Verifications {
		if v.State == v1alpha1.JobFailure {
			out = append(out, v)
		}
	}
	return out
}

// failureMessage says which verifications failed on version and in which runs, bounded to what
// the CRD takes.
func failureMessage(version string, failed []v1alpha1.VerificationStatus) string {
	parts := make([]string, 0, len(failed))
	for _, v := range failed {
		var runs []string
		for _, r := range v.Runs {
			if r.State != v1alpha1.JobFailure {
				continue
			}
			run := r.Name
			if r.UpgradeFrom != "" {
				run += " (upgrading from " + r.UpgradeFrom + ")"
			}
			runs = append(runs, run)
		}
		part := strings.TrimSpace(strings.ToLower(string(v.Type)) + " " + v.Name + " failed")
		if len(runs) > 0 {
			part += " in " + strings.Join(runs, ", ")
		}
		parts = append(parts, part)
	}
	return conditions.Truncate(fmt.Sprintf("Verifications failed on %s: %s.", version, strings.Join(parts, "; ")), maxRiskMessage)
}

// failedRunURL is the URL of the first failed run that has one.
func failedRunURL(failed []v1alpha1.VerificationStatus) string {
	for _, v := range failed {
		for _, r := range v.Runs {
			if r.State == v1alpha1.JobFailure && r.URL != "" {
				return r.URL
			}
		}
	}
	return ""
}

// createRisk creates risk and says what /graph does with it.
func createRisk(ctx context.Context, c client.Client, risk *v1alpha1.UpgradeRisk, out io.Writer) error {
	key := client.ObjectKeyFromObject(risk)
	if err := c.Create(ctx, risk); err != nil {
		if apierrors.IsAlreadyExists(err) {
			return fmt.Errorf("upgrade risk %s exists: delete it (kubectl delete upgraderisk -n %s %s) or choose another NAME", key, key.Namespace, key.Name)
		}
		return fmt.Errorf("creating upgrade risk %s: %w", key, err)
	}
	from := "any version"
	if risk.Spec.From != "" {
		from = risk.Spec.From
	}
	fmt.Fprintf(out, "upgrade risk %s declared: %s, upgrades of stream %s into %s from %s\n", key, risk.Spec.Name, risk.Spec.Stream, risk.Spec.To, from)
	if len(risk.Spec.MatchingRules) == 0 {
		fmt.Fprintln(out, "no matching rules: /graph leaves these upgrades out for every cluster")
		return nil
	}
	fmt.Fprintf(out, "/graph serves these upgrades as conditional edges; clusters evaluate %s\n", rulesSummary(risk.Spec.MatchingRules))
	return nil
}

// rulesSummary names a risk's matching rules in order, or "blocked" when it has none.
func rulesSummary(rules []v1alpha1.MatchingRule) string {
	if len(rules) == 0 {
		return "blocked"
	}
	types := make([]string, len(rules))
	for i, r := range rules {
		types[i] = r.Type
	}
	return strings.Join(types, ",")
}

func printYAML(out io.Writer, obj any) error {
	data, err := yaml.Marshal(obj)
	if err != nil {
		return err
	}
	_, err = out.Write(data)
	return err
}

func newRiskListCommand() *cobra.Command {
	var (
		kube          kubeclient.Options
		namespace     string
		allNamespaces bool
		stream        string
	)
	cmd := &cobra.Command{
		Use:   "list [-n NAMESPACE | -A] [--stream S]",
		Short: "List the upgrade risks: what they lead into and from, and which clusters they apply to",
		Long: `List the UpgradeRisks of a namespace (--namespace, else the kubeconfig context's) or of
every namespace (-A). RULES lists a risk's matching rules in order; "blocked" is a risk
without rules, whose edges /graph leaves out for every cluster. --stream keeps the risks
that apply to that stream (those limited to it and those of every stream).`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			opts := []client.ListOption{}
			if !allNamespaces {
				opts = append(opts, client.InNamespace(contextNamespace(namespace, kube.Kubeconfig)))
			}
			c, err := kubeClient(kube)
			if err != nil {
				return err
			}
			var list v1alpha1.UpgradeRiskList
			if err := c.List(cmd.Context(), &list, opts...); err != nil {
				return fmt.Errorf("listing upgrade risks: %w", err)
			}
			return printRisks(cmd.OutOrStdout(), list.Items, stream, allNamespaces, time.Now())
		},
	}
	f := cmd.Flags()
	f.StringVarP(&namespace, "namespace", "n", "", "namespace to list; default: the kubeconfig context's")
	f.BoolVarP(&allNamespaces, "all-namespaces", "A", false, "list the risks of every namespace")
	f.StringVar(&stream, "stream", "", "only the risks that apply to this stream")
	kube.AddFlags(f)
	cmd.MarkFlagsMutuallyExclusive("namespace", "all-namespaces")
	return cmd
}

// printRisks writes risks as a table, sorted by namespace and name, keeping those that apply
// to stream when it is set.
func printRisks(out io.Writer, risks []v1alpha1.UpgradeRisk, stream string, withNamespace bool, now time.Time) error {
	risks = slices.DeleteFunc(slices.Clone(risks), func(r v1alpha1.UpgradeRisk) bool {
		return stream != "" && r.Spec.Stream != "" && r.Spec.Stream != stream
	})
	if len(risks) == 0 {
		_, err := fmt.Fprintln(out, "no upgrade risks")
		return err
	}
	slices.SortFunc(risks, func(a, b v1alpha1.UpgradeRisk) int {
		return cmp.Or(cmp.Compare(a.Namespace, b.Namespace), cmp.Compare(a.Name, b.Name))
	})
	tw := tabwriter.NewWriter(out, 0, 4, 2, ' ', 0)
	header := "NAME\tRISK\tTO\tFROM\tSTREAM\tRULES\tAGE"
	if withNamespace {
		header = "NAMESPACE\t" + header
	}
	fmt.Fprintln(tw, header)
	for _, r := range risks {
		if withNamespace {
			fmt.Fprintf(tw, "%s\t", r.Namespace)
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t%s\t%s\n", r.Name, r.Spec.Name, r.Spec.To, cmp.Or(r.Spec.From, "*"), cmp.Or(r.Spec.Stream, "*"),
			rulesSummary(r.Spec.MatchingRules), duration.HumanDuration(now.Sub(r.CreationTimestamp.Time)))
	}
	return tw.Flush()
}

// kubeClient connects to the cluster kube names with the controller's scheme.
func kubeClient(kube kubeclient.Options) (client.Client, error) {
	cfg, err := kube.Config()
	if err != nil {
		return nil, err
	}
	c, err := client.New(cfg, client.Options{Scheme: manager.NewScheme()})
	if err != nil {
		return nil, fmt.Errorf("connecting to the cluster: %w", err)
	}
	return c, nil
}
