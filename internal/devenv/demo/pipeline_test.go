//go:build !unit

package demo

import (
	"bytes"
	"context"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	authorizationv1 "k8s.io/api/authorization/v1"
	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	metricsserver "sigs.k8s.io/controller-runtime/pkg/metrics/server"

	"github.com/release-controller/release-controller/api/v1alpha1"
	"github.com/release-controller/release-controller/internal/manager"
	"github.com/release-controller/release-controller/internal/pipeline"
)

// The demo pipeline is set up once and kept across restarts: the approval key stays, the
// remote cluster's kubeconfig is renewed, and a user's edit of the Pipeline survives.
func TestSetupPipelineIsIdempotent(t *testing.T) {
	ctx := context.Background()
	opts := options(t)
	key, err := SetupPipeline(ctx, env.Client, opts, env.Config)
	if err != nil {
		t.Fatalf("SetupPipeline: %v", err)
	}
	if len(key) != 64 {
		t.Errorf("approval key %q, want 64 hex digits", key)
	}
	var p v1alpha1.Pipeline
	if err := env.Client.Get(ctx, types.NamespacedName{Namespace: opts.namespace(), Name: PipelineName}, &p); err != nil {
		t.Fatal(err)
	}
	if got := len(p.Spec.Environments); got != 3 || p.Spec.Environments[2].Approval == nil || p.Spec.Source.ReleaseStream != StreamName {
		t.Errorf("pipeline spec %+v", p.Spec)
	}
	p.Spec.Environments[0].Targets[0].Namespace = "edited"
	if err := env.Client.Update(ctx, &p); err != nil {
		t.Fatal(err)
	}
	first := remoteKubeconfigOf(t, opts)

	again, err := SetupPipeline(ctx, env.Client, opts, env.Config)
	if err != nil {
		t.Fatalf("second SetupPipeline: %v", err)
	}
	if !bytes.Equal(key, again) {
		t.Errorf("the approval key changed from %s to %s", key, again)
	}
	if err := env.Client.Get(ctx, client.ObjectKeyFromObject(&p), &p); err != nil {
		t.Fatal(err)
	}
	if p.Spec.Environments[0].Targets[0].Namespace != "edited" {
		t.Errorf("the second setup overwrote the pipeline: %+v", p.Spec.Environments[0])
	}
	if bytes.Equal(first, remoteKubeconfigOf(t, opts)) {
		t.Error("the remote cluster's kubeconfig was not renewed")
	}
}

// The account the controller acts as for the demo pipeline (its namespace's default, the
// controller's --default-service-account) may get and apply the dev app and read the remote cluster's
// kubeconfig, the API server reads prod's approval key as it, and nothing the pipeline does
// not need: not staging's app (the remote cluster's account applies it), no other Secret.
func TestPipelineAccountGrants(t *testing.T) {
	ctx := context.Background()
	opts := options(t)
	if _, err := SetupPipeline(ctx, env.Client, opts, env.Config); err != nil {
		t.Fatalf("SetupPipeline: %v", err)
	}
	cfg := rest.CopyConfig(env.Config)
	cfg.Impersonate = rest.ImpersonationConfig{UserName: pipeline.TenantOf(Pipeline(opts), "default")}
	tenant, err := client.New(cfg, client.Options{Scheme: manager.NewScheme()})
	if err != nil {
		t.Fatal(err)
	}
	d := App(opts, opts.EnvironmentNamespace("dev"))
	if err := tenant.Get(ctx, client.ObjectKeyFromObject(d), &appsv1.Deployment{}); err != nil {
		t.Errorf("getting the dev app as the pipeline's account (the controller shows a local target only then): %v", err)
	}
	if err := tenant.Patch(ctx, d, client.MergeFrom(d.DeepCopy()), client.DryRunAll); err != nil {
		t.Errorf("patching the dev app as the pipeline's account: %v", err)
	}
	var s corev1.Secret
	if err := tenant.Get(ctx, types.NamespacedName{Namespace: opts.namespace(), Name: RemoteClusterSecret}, &s); err != nil {
		t.Errorf("reading the remote cluster's kubeconfig as the pipeline's account: %v", err)
	}
	d = App(opts, opts.EnvironmentNamespace("staging"))
	if err := tenant.Patch(ctx, d, client.MergeFrom(d.DeepCopy()), client.DryRunAll); !apierrors.IsForbidden(err) {
		t.Errorf("patching the staging app as the pipeline's account: %v, want forbidden", err)
	}
	if err := tenant.Get(ctx, types.NamespacedName{Namespace: opts.namespace(), Name: ApprovalSecret}, &s); err != nil {
		t.Errorf("reading the approval key as the pipeline's account (the approval route does): %v", err)
	}
	if err := tenant.Get(ctx, types.NamespacedName{Namespace: opts.namespace(), Name: "other"}, &s); !apierrors.IsForbidden(err) {
		t.Errorf("reading another Secret as the pipeline's account: %v, want forbidden", err)
	}
	// dev's smoke check Jobs are created and deleted as the account.
	run := &batchv1.Job{ObjectMeta: metav1.ObjectMeta{Namespace: opts.namespace(), Name: "smoke"}, Spec: batchv1.JobSpec{Template: checkJob(CheckSmoke, "check").Template.Spec.Template}}
	if err := tenant.Create(ctx, run, client.DryRunAll); err != nil {
		t.Errorf("creating a verification Job as the pipeline's account: %v", err)
	}
	if err := tenant.Delete(ctx, run, client.DryRunAll); !apierrors.IsNotFound(err) {
		t.Errorf("deleting a verification Job as the pipeline's account: %v, want not found (allowed)", err)
	}
}

// The release manager's token may approve and reject the demo pipeline's revisions (what the
// approval route asks RBAC), and nothing else; a second call gives a new token of the account.
func TestReleaseManagerToken(t *testing.T) {
	ctx := context.Background()
	opts := options(t)
	if _, err := SetupPipeline(ctx, env.Client, opts, env.Config); err != nil {
		t.Fatalf("SetupPipeline: %v", err)
	}
	token, err := ReleaseManagerToken(ctx, env.Client, opts)
	if err != nil {
		t.Fatalf("ReleaseManagerToken: %v", err)
	}
	again, err := ReleaseManagerToken(ctx, env.Client, opts)
	if err != nil || again == token {
		t.Fatalf("second ReleaseManagerToken: %v (the same token: %t)", err, again == token)
	}
	cfg := rest.AnonymousClientConfig(env.Config)
	cfg.BearerToken = token
	rm, err := client.New(cfg, client.Options{Scheme: manager.NewScheme()})
	if err != nil {
		t.Fatal(err)
	}
	may := func(resource, subresource, name, verb string) bool {
		t.Helper()
		review := &authorizationv1.SelfSubjectAccessReview{Spec: authorizationv1.SelfSubjectAccessReviewSpec{ResourceAttributes: &authorizationv1.ResourceAttributes{
			Namespace: opts.namespace(), Group: v1alpha1.GroupVersion.Group, Resource: resource, Subresource: subresource, Name: name, Verb: verb,
		}}}
		if err := rm.Create(ctx, review); err != nil {
			t.Fatal(err)
		}
		return review.Status.Allowed
	}
	if !may("pipelines", "approval", PipelineName, "update") {
		t.Error("the release manager may not update pipelines/approval of the demo pipeline")
	}
	if may("pipelines", "approval", "other", "update") || may("pipelines", "", PipelineName, "update") || may("pipelines", "status", PipelineName, "update") {
		t.Error("the release manager may do more than approve the demo pipeline")
	}
}

// The remote cluster's kubeconfig reaches the API server as a service account that may watch
// Deployments everywhere and apply them in staging and prod only.
func TestRemoteClusterKubeconfig(t *testing.T) {
	ctx := context.Background()
	opts := options(t)
	if _, err := SetupPipeline(ctx, env.Client, opts, env.Config); err != nil {
		t.Fatalf("SetupPipeline: %v", err)
	}
	cfg, err := clientcmd.RESTConfigFromKubeConfig(remoteKubeconfigOf(t, opts))
	if err != nil {
		t.Fatal(err)
	}
	remote, err := client.New(cfg, client.Options{Scheme: manager.NewScheme()})
	if err != nil {
		t.Fatal(err)
	}
	var list appsv1.DeploymentList
	if err := remote.List(ctx, &list); err != nil {
		t.Fatalf("listing Deployments remotely: %v", err)
	}
	for _, env := range []string{"staging", "prod"} {
		d := App(opts, opts.EnvironmentNamespace(env))
		if err := remote.Patch(ctx, d, client.MergeFrom(d.DeepCopy()), client.DryRunAll); err != nil {
			t.Errorf("patching the %s app remotely: %v", env, err)
		}
	}
	d := App(opts, opts.EnvironmentNamespace("dev"))
	if err := remote.Patch(ctx, d, client.MergeFrom(d.DeepCopy()), client.DryRunAll); !apierrors.IsForbidden(err) {
		t.Errorf("patching the dev app remotely: %v, want forbidden", err)
	}
	var s corev1.Secret
	if err := remote.Get(ctx, types.NamespacedName{Namespace: opts.namespace(), Name: ApprovalSecret}, &s); !apierrors.IsForbidden(err) {
		t.Errorf("reading the approval key remotely: %v, want forbidden", err)
	}
}

// The rollout step makes a demo app ready, by the pipeline's own test, after every change of
// its spec; Deployments without the label are left alone.
func TestRolloutMakesAppsReady(t *testing.T) {
	ctx := context.Background()
	opts := options(t)
	if _, err := SetupPipeline(ctx, env.Client, opts, env.Config); err != nil {
		t.Fatalf("SetupPipeline: %v", err)
	}
	other := App(opts, opts.EnvironmentNamespace("dev"))
	other.Name, other.Labels = "unlabelled", nil
	if err := env.Client.Create(ctx, other); err != nil {
		t.Fatal(err)
	}
	mgr, err := ctrl.NewManager(env.Config, ctrl.Options{Scheme: manager.NewScheme(), Metrics: metricsserver.Options{BindAddress: "0"}})
	if err != nil {
		t.Fatal(err)
	}
	if err := (&Rollout{Client: mgr.GetClient()}).SetupWithManager(mgr); err != nil {
		t.Fatal(err)
	}
	mgrCtx, cancel := context.WithCancel(ctx)
	done := make(chan error, 1)
	go func() { done <- mgr.Start(mgrCtx) }()
	t.Cleanup(func() {
		cancel()
		if err := <-done; err != nil {
			t.Error(err)
		}
	})

	app, err := pipeline.AppOf(Pipeline(opts).Spec.AppRef)
	if err != nil {
		t.Fatal(err)
	}
	key := types.NamespacedName{Namespace: opts.EnvironmentNamespace("prod"), Name: AppName}
	waitReady := func(revision string) {
		t.Helper()
		deadline := time.Now().Add(30 * time.Second)
		for {
			var d appsv1.Deployment
			if err := env.Client.Get(ctx, key, &d); err != nil {
				t.Fatal(err)
			}
			o := app.Observe(toUnstructured(t, &d))
			if o.Ready && o.Revision == revision {
				return
			}
			if time.Now().After(deadline) {
				t.Fatalf("the app is %+v, want ready at %s; status %+v", o, revision, d.Status)
			}
			time.Sleep(100 * time.Millisecond)
		}
	}
	waitReady("latest")
	var d appsv1.Deployment
	if err := env.Client.Get(ctx, key, &d); err != nil {
		t.Fatal(err)
	}
	d.Spec.Template.Spec.Containers[0].Image = pipeline.WithRevision(d.Spec.Template.Spec.Containers[0].Image, "1.0.0-1")
	if err := env.Client.Update(ctx, &d); err != nil {
		t.Fatal(err)
	}
	waitReady("1.0.0-1")

	if err := env.Client.Get(ctx, client.ObjectKeyFromObject(other), other); err != nil {
		t.Fatal(err)
	}
	if other.Status.ObservedGeneration != 0 || len(other.Status.Conditions) != 0 {
		t.Errorf("the rollout step wrote the status of an unlabelled Deployment: %+v", other.Status)
	}
}

func remoteKubeconfigOf(t *testing.T, opts Options) []byte {
	t.Helper()
	var s corev1.Secret
	if err := env.Client.Get(context.Background(), types.NamespacedName{Namespace: opts.namespace(), Name: RemoteClusterSecret}, &s); err != nil {
		t.Fatal(err)
	}
	return s.Data[v1alpha1.SecretKeyKubeconfig]
}

func toUnstructured(t *testing.T, d *appsv1.Deployment) *unstructured.Unstructured {
	t.Helper()
	m, err := runtime.DefaultUnstructuredConverter.ToUnstructured(d)
	if err != nil {
		t.Fatal(err)
	}
	return &unstructured.Unstructured{Object: m}
}
