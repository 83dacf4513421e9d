package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"strings"
	"time"

	"github.com/spf13/cobra"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/tools/clientcmd"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/release-controller/release-controller/api/v1alpha1"
	"github.com/release-controller/release-controller/internal/kubeclient"
	"github.com/release-controller/release-controller/internal/manager"
)

// reconcilePoll is how often `reconcile` reads the object while it waits.
const reconcilePoll = time.Second

func newReconcileCommand() *cobra.Command {
	var kube kubeclient.Options
	var namespace string
	var timeout time.Duration
	cmd := &cobra.Command{
		Use:   "reconcile stream|pipeline NAME",
		Short: "Ask the controller to reconcile a stream or pipeline now and wait for the result",
		Long: `Ask the controller to reconcile the stream or pipeline NAME now (it sets the
release-controller.dev/reconcile-requested-at annotation, as flux reconcile does), wait until
the controller says it has (status.lastHandledReconcileAt), and print its Ready condition.

NAME may be NAMESPACE/NAME; otherwise --namespace, else the kubeconfig context's namespace.
It exits non-zero when the object is suspended, when the reconcile leaves it not Ready or
Stalled, or when --timeout passes first.`,
		Args: cobra.ExactArgs(2),
		RunE: func(cmd *cobra.Command, args []string) error {
			obj, err := reconcileTarget(args[0])
			if err != nil {
				return err
			}
			key, err := reconcileKey(args[1], namespace, kube.Kubeconfig)
			if err != nil {
				return err
			}
			cfg, err := kube.Config()
			if err != nil {
				return err
			}
			c, err := client.New(cfg, client.Options{Scheme: manager.NewScheme()})
			if err != nil {
				return err
			}
			ctx, cancel := context.WithTimeout(cmd.Context(), timeout)
			defer cancel()
			return reconcileNow(ctx, c, obj, key, time.Now().UTC().Format(time.RFC3339Nano), cmd.OutOrStdout())
		},
	}
	kube.AddFlags(cmd.Flags())
	cmd.Flags().StringVarP(&namespace, "namespace", "n", "", "namespace of NAME; default: the kubeconfig context's")
	cmd.Flags().DurationVar(&timeout, "timeout", 5*time.Minute, "how long to wait for the controller")
	return cmd
}

// reconcileTarget is an empty object of the kind named on the command line.
func reconcileTarget(kind string) (client.Object, error) {
	switch kind {
	case "stream", "streams", "releasestream", "releasestreams":
		return &v1alpha1.ReleaseStream{}, nil
	case "pipeline", "pipelines":
		return &v1alpha1.Pipeline{}, nil
	}
	return nil, fmt.Errorf("reconcile takes stream or pipeline, not %q", kind)
}

// reconcileKey is NAME's namespace and name: NAMESPACE/NAME, else --namespace, else the
// kubeconfig context's namespace, else "default".
func reconcileKey(arg, namespace, kubeconfig string) (types.NamespacedName, error) {
	if ns, name, ok := strings.Cut(arg, "/"); ok {
		if ns == "" || name == "" || strings.Contains(name, "/") {
			return types.NamespacedName{}, fmt.Errorf("NAME is NAME or NAMESPACE/NAME, not %q", arg)
		}
		if namespace != "" && namespace != ns {
			return types.NamespacedName{}, fmt.Errorf("%q names namespace %s, --namespace %s", arg, ns, namespace)
		}
		return types.NamespacedName{Namespace: ns, Name: name}, nil
	}
	return types.NamespacedName{Namespace: contextNamespace(namespace, kubeconfig), Name: arg}, nil
}

// contextNamespace is namespace when set, else the kubeconfig context's namespace, else
// "default", as kubectl chooses.
func contextNamespace(namespace, kubeconfig string) string {
	if namespace != "" {
		return namespace
	}
	rules := clientcmd.NewDefaultClientConfigLoadingRules()
	rules.ExplicitPath = kubeconfig
	ns, _, err := clientcmd.NewNonInteractiveDeferredLoadingClientConfig(rules, &clientcmd.ConfigOverrides{}).Namespace()
	if err != nil || ns == "" {
		return metav1.NamespaceDefault
	}
	return ns
}

// reconcileNow sets obj's reconcile-requested-at annotation to requested and waits until the
// controller answers it, printing progress to out.
func reconcileNow(ctx context.Context, c client.Client, obj client.Object, key types.NamespacedName, requested string, out io.Writer) error {
	kind := kindOf(obj)
	if err := c.Get(ctx, key, obj); err != nil {
		if apierrors.IsNotFound(err) {
			return fmt.Errorf("%s %s not found", kind, key)
		}
		return fmt.Errorf("reading %s %s: %w", kind, key, err)
	}
	if suspended(obj) {
		return fmt.Errorf("%s %s is suspended (spec.suspend): set it to false to reconcile", kind, key)
	}
	fmt.Fprintf(out, "► asking for a reconcile of %s %s\n", kind, key)
	patch := fmt.Appendf(nil, `{"metadata":{"annotations":{%q:%q}}}`, v1alpha1.AnnotationReconcileRequestedAt, requested)
	if err := c.Patch(ctx, obj, client.RawPatch(types.MergePatchType, patch)); err != nil {
		return fmt.Errorf("annotating %s %s: %w", kind, key, err)
	}
	fmt.Fprintf(out, "◎ waiting for the controller\n")
	for {
		if err := c.Get(ctx, key, obj); err != nil {
			return fmt.Errorf("reading %s %s: %w", kind, key, err)
		}
		handled, conds, generation, observed := reconcileStatus(obj)
		done, summary, err := reconcileOutcome(requested, handled, conds, generation, observed)
		if done {
			if err != nil {
				fmt.Fprintf(out, "✗ %s %s: %v\n", kind, key, err)
				return err
			}
			fmt.Fprintf(out, "✔ %s %s reconciled: %s\n", kind, key, summary)
			return nil
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("%s %s: the controller has not answered the reconcile request %s (status.lastHandledReconcileAt is %q): %w",
				kind, key, requested, handled, context.Cause(ctx))
		case <-time.After(reconcilePoll):
		}
	}
}

func kindOf(obj client.Object) string {
	if _, ok := obj.(*v1alpha1.Pipeline); ok {
		return "pipeline"
	}
	return "stream"
}

func suspended(obj client.Object) bool {
	switch o := obj.(type) {
	case *v1alpha1.ReleaseStream:
		return o.Spec.Suspend
	case *v1alpha1.Pipeline:
		return o.Spec.Suspend
	}
	return false
}

func reconcileStatus(obj client.Object) (handled string, conds []metav1.Condition, generation, observed int64) {
	switch o := obj.(type) {
	case *v1alpha1.ReleaseStream:
		return o.Status.LastHandledReconcileAt, o.Status.Conditions, o.Generation, o.Status.ObservedGeneration
	case *v1alpha1.Pipeline:
		return o.Status.LastHandledReconcileAt, o.Status.Conditions, o.Generation, o.Status.ObservedGeneration
	}
	return "", nil, 0, 0
}

// reconcileOutcome decides, from what the object's status says, whether the reconcile asked
// for at requested is done (the controller copied the value and has seen the current
// generation) and how it went: an error when the object is Stalled or not Ready, else Ready's
// reason and message (and what it is still working on, when Reconciling).
func reconcileOutcome(requested, handled string, conds []metav1.Condition, generation, observed int64) (done bool, summary string, err error) {
	if handled != requested || observed < generation {
		return false, "", nil
	}
	if s := meta.FindStatusCondition(conds, v1alpha1.ConditionStalled); s != nil && s.Status == metav1.ConditionTrue {
		return true, "", fmt.Errorf("stalled: %s: %s", s.Reason, s.Message)
	}
	ready := meta.FindStatusCondition(conds, v1alpha1.ConditionReady)
	switch {
	case ready == nil:
		return true, "", errors.New("reconciled, but the status has no Ready condition")
	case ready.Status != metav1.ConditionTrue:
		return true, "", fmt.Errorf("not ready: %s: %s", ready.Reason, ready.Message)
	}
	summary = ready.Reason + ": " + ready.Message
	if r := meta.FindStatusCondition(conds, v1alpha1.ConditionReconciling); r != nil && r.Status == metav1.ConditionTrue {
		summary += fmt.Sprintf(" (still %s: %s)", r.Reason, r.Message)
	}
	return true, summary, nil
}
