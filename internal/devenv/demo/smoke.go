package demo

import (
	"context"
	"fmt"
	"io"
	"slices"
	"strings"

	"github.com/google/go-containerregistry/pkg/v1/remote"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/tools/clientcmd"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/release-controller/release-controller/api/v1alpha1"
	"github.com/release-controller/release-controller/internal/pipeline"
	"github.com/release-controller/release-controller/internal/registryclient"
	"github.com/release-controller/release-controller/internal/releaseimage"
)

// appRef is the demo pipeline's app: the Deployment AppName whose container AppContainer runs
// the payload image.
var appRef = v1alpha1.AppReference{APIVersion: "apps/v1", Kind: "Deployment", Name: AppName, Container: AppContainer}

// checkSmoke is the check the demo pipeline runs against its dev environment after each
// rollout, with the job contract of an environment's verification (RELEASE_REVISION,
// RELEASE_TARGETS): in every target it reads the demo app from the cluster (KUBECONFIG, else
// the pod's in-cluster account), which must run RELEASE_REVISION and be rolled out by the
// pipeline's own test, then reads the payload image the app runs, and fails when a component's
// commit message carries MarkerBreaksSmoke. The stream's checks let such a payload through.
func checkSmoke(ctx context.Context, env func(string) string, out io.Writer, remoteOpts []remote.Option) error {
	revision, targets := env(v1alpha1.EnvRevision), env(v1alpha1.EnvTargets)
	if revision == "" || targets == "" {
		return fmt.Errorf("%s and %s are not set: the smoke check runs as a pipeline environment's verification", v1alpha1.EnvRevision, v1alpha1.EnvTargets)
	}
	cfg, err := clientcmd.BuildConfigFromFlags("", env("KUBECONFIG"))
	if err != nil {
		return fmt.Errorf("reaching the cluster: %w", err)
	}
	c, err := client.New(cfg, client.Options{})
	if err != nil {
		return fmt.Errorf("reaching the cluster: %w", err)
	}
	app, err := pipeline.AppOf(appRef)
	if err != nil {
		return err
	}
	fmt.Fprintf(out, "smoke: %s in %s of pipeline %s/%s\n", revision, env(v1alpha1.EnvEnvironment), env(v1alpha1.EnvPipelineNamespace), env(v1alpha1.EnvPipeline))
	var broken []string
	for _, target := range strings.Split(targets, ",") {
		if strings.Contains(target, ":") {
			return fmt.Errorf("target %s is on another cluster: the demo's smoke check reads targets of its own cluster only", target)
		}
		var d appsv1.Deployment
		if err := c.Get(ctx, client.ObjectKey{Namespace: target, Name: AppName}, &d); err != nil {
			return fmt.Errorf("target %s: reading the app: %w", target, err)
		}
		obj, err := runtime.DefaultUnstructuredConverter.ToUnstructured(&d)
		if err != nil {
			return err
		}
		// Rolled out at the revision by the pipeline's own test, as the controller saw it.
		o := app.Observe(&unstructured.Unstructured{Object: obj})
		if o.Revision != revision || !o.Ready {
			return fmt.Errorf("target %s: the app is at %q (ready: %t; %s), not rolled out at %s", target, o.Revision, o.Ready, o.Message, revision)
		}
		i := slices.IndexFunc(d.Spec.Template.Spec.Containers, func(c corev1.Container) bool { return c.Name == AppContainer })
		info, err := releaseimage.PlatformInfo(ctx, d.Spec.Template.Spec.Containers[i].Image, env(v1alpha1.EnvReleasePlatform), remoteOpts...)
		if registryclient.IsNotFound(err) && revision == PlaceholderRevision {
			// The app as the demo made it, before the stream accepted anything: no payload
			// runs, so nothing breaks it. Failing would hold the pipeline before its start.
			fmt.Fprintf(out, "target %s: %s runs the placeholder :%s, which no payload is yet: nothing to check\n", target, AppName, revision)
			continue
		}
		if err != nil {
			return fmt.Errorf("target %s: reading the payload the app runs: %w", target, err)
		}
		fmt.Fprintf(out, "target %s: %s rolled out, running payload %s (%d components)\n", target, AppName, info.Metadata.Version, len(info.References.Components))
		found, err := marked(ctx, info, MarkerBreaksSmoke, "BREAKS SMOKE", out, remoteOpts)
		if err != nil {
			return err
		}
		for _, f := range found {
			broken = append(broken, f+" in "+target)
		}
	}
	if len(broken) > 0 {
		fmt.Fprintf(out, "smoke: FAIL\n")
		return fmt.Errorf("smoke failed: %s breaks the rolled-out app", strings.Join(broken, ", "))
	}
	fmt.Fprintf(out, "smoke: PASS\n")
	return nil
}
