package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"strings"

	"github.com/spf13/cobra"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/release-controller/release-controller/api/v1alpha1"
	"github.com/release-controller/release-controller/internal/kubeclient"
)

func newPayloadTombstoneCommand() *cobra.Command {
	var (
		kube      kubeclient.Options
		namespace string
		reason    string
		undo      bool
	)
	cmd := &cobra.Command{
		Use:   "tombstone TAG (--reason REASON | --undo)",
		Short: "Withdraw a payload from the update service, or bring it back",
		Long: `Tombstone the payload TAG: set its release-controller.dev/tombstone annotation to REASON.
The update service (/graph) keeps its node in the channels it is in, so clusters running it
still find their way off it, but offers no upgrade into it and promotes it into no further
channel; the payload controller records when (the PayloadTombstoned condition). --undo
removes the annotation.

TAG may be NAMESPACE/TAG; otherwise --namespace, else the kubeconfig context's namespace.`,
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			reason = strings.TrimSpace(reason)
			if undo == (reason != "") {
				return errors.New("give --reason saying why the payload is withdrawn, or --undo")
			}
			if undo && cmd.Flags().Changed("reason") {
				return errors.New("--undo takes no --reason")
			}
			key, err := reconcileKey(args[0], namespace, kube.Kubeconfig)
			if err != nil {
				return err
			}
			c, err := kubeClient(kube)
			if err != nil {
				return err
			}
			return tombstone(cmd.Context(), c, key, reason, undo, cmd.OutOrStdout())
		},
	}
	f := cmd.Flags()
	f.StringVar(&reason, "reason", "", "why the payload is withdrawn (shown on its page and in PayloadTombstoned)")
	f.BoolVar(&undo, "undo", false, "remove the tombstone")
	f.StringVarP(&namespace, "namespace", "n", "", "namespace of the payload; default: the kubeconfig context's")
	kube.AddFlags(f)
	return cmd
}

// tombstone sets (or, with undo, removes) the tombstone annotation of the payload key, with a
// merge patch as kubectl annotate does, and says what it did.
func tombstone(ctx context.Context, c client.Client, key types.NamespacedName, reason string, undo bool, out io.Writer) error {
	p := &v1alpha1.ReleasePayload{}
	if err := c.Get(ctx, key, p); err != nil {
		if apierrors.IsNotFound(err) {
			return fmt.Errorf("release payload %s not found", key)
		}
		return fmt.Errorf("reading release payload %s: %w", key, err)
	}
	old, was := p.Annotations[v1alpha1.AnnotationTombstone]
	if undo && !was {
		_, err := fmt.Fprintf(out, "payload %s is not tombstoned\n", key)
		return err
	}
	value := []byte("null")
	if !undo {
		var err error
		if value, err = json.Marshal(reason); err != nil {
			return err
		}
	}
	patch := fmt.Appendf(nil, `{"metadata":{"annotations":{%q:%s}}}`, v1alpha1.AnnotationTombstone, value)
	if err := c.Patch(ctx, p, client.RawPatch(types.MergePatchType, patch)); err != nil {
		return fmt.Errorf("annotating release payload %s: %w", key, err)
	}
	switch {
	case undo:
		_, err := fmt.Fprintf(out, "payload %s is no longer tombstoned (it was: %s); /graph offers upgrades into it again\n", key, old)
		return err
	case was:
		_, err := fmt.Fprintf(out, "payload %s stays tombstoned, now because: %s\n", key, reason)
		return err
	}
	_, err := fmt.Fprintf(out, "payload %s tombstoned: %s\n/graph keeps its node and offers no upgrade into it\n", key, reason)
	return err
}
