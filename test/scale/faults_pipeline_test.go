//go:build !unit

package scale

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	eventsv1 "k8s.io/api/events/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/util/retry"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/release-controller/release-controller/api/v1alpha1"
	"github.com/release-controller/release-controller/internal/testenv"
)

// leafCluster is the name of the remote cluster's kubeconfig Secret (the targets' clusterRef).
const leafCluster = "leaf"

// TestFaultRemoteCluster (case 6): pipelines promote dev (the management cluster) to staging,
// half of them on a remote cluster ("leaf", reached through a kubeconfig Secret), half on the
// management cluster. The leaf's API server is killed, then dev moves to a new revision: the
// local pipelines promote meanwhile, the remote ones say ClusterUnreachable naming the leaf,
// with an Event; once the leaf is back every remote staging is promoted, each exactly once.
func TestFaultRemoteCluster(t *testing.T) {
	sc := scaleOf(t)
	n := max(2, sc.streams/4) // pipelines of each kind
	ctx := context.Background()
	leaf, err := testenv.Start()
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = leaf.Stop() })
	ns := env.Namespace(t)
	t.Cleanup(func() { deleteReleaseObjects(t, ns) }) // after the controller stops
	localStaging := env.Namespace(t)                  // the local stagings' namespace
	logNS := env.Namespace(t)
	leafKubeconfig := filepath.Join(t.TempDir(), "leaf-kubeconfig")
	if err := leaf.WriteKubeconfig(leafKubeconfig); err != nil {
		t.Fatal(err)
	}
	data, err := os.ReadFile(leafKubeconfig)
	if err != nil {
		t.Fatal(err)
	}
	if err := env.Client.Create(ctx, &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: leafCluster},
		Data: map[string][]byte{v1alpha1.SecretKeyKubeconfig: data}}); err != nil {
		t.Fatal(err)
	}
	// The same namespace name on the leaf holds the remote stagings.
	if err := leaf.Client.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}); err != nil {
		t.Fatal(err)
	}
	type pipelineCase struct {
		name             string
		staging          client.Client // where its staging runs
		stagingNamespace string
		remote           bool
	}
	var pipelines []pipelineCase
	for i := range 2 * n {
		pc := pipelineCase{name: fmt.Sprintf("local-%02d", i), staging: env.Client, stagingNamespace: localStaging}
		if i%2 == 1 {
			pc = pipelineCase{name: fmt.Sprintf("remote-%02d", i), staging: leaf.Client, stagingNamespace: ns, remote: true}
		}
		pipelines = append(pipelines, pc)
		if err := createRolledOut(ctx, env.Client, ns, pc.name, "1"); err != nil {
			t.Fatal(err)
		}
		if err := createRolledOut(ctx, pc.staging, pc.stagingNamespace, pc.name, "1"); err != nil {
			t.Fatal(err)
		}
	}
	// The controller acts as the pipelines' account (their namespace's default, the binary's
	// --default-service-account): it reads the leaf's kubeconfig, sees the local devs (a
	// local target the account may not get is hidden) and sees and patches local stagings.
	subjects := []rbacv1.Subject{{Kind: rbacv1.ServiceAccountKind, Namespace: ns, Name: "default"}}
	for namespace, rules := range map[string][]rbacv1.PolicyRule{
		ns: {{APIGroups: []string{""}, Resources: []string{"secrets"}, ResourceNames: []string{leafCluster}, Verbs: []string{"get"}},
			{APIGroups: []string{"apps"}, Resources: []string{"deployments"}, Verbs: []string{"get"}}},
		localStaging: {{APIGroups: []string{"apps"}, Resources: []string{"deployments"}, Verbs: []string{"get", "patch"}}},
	} {
		for _, obj := range []client.Object{
			&rbacv1.Role{ObjectMeta: metav1.ObjectMeta{Namespace: namespace, Name: "pipelines"}, Rules: rules},
			&rbacv1.RoleBinding{ObjectMeta: metav1.ObjectMeta{Namespace: namespace, Name: "pipelines"},
				RoleRef: rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "Role", Name: "pipelines"}, Subjects: subjects},
		} {
			if err := env.Client.Create(ctx, obj); err != nil {
				t.Fatal(err)
			}
		}
	}
	c := startFaultController(t, logNS)
	for _, pc := range pipelines {
		clusterRef := ""
		if pc.remote {
			clusterRef = leafCluster
		}
		p := &v1alpha1.Pipeline{
			ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: pc.name},
			Spec: v1alpha1.PipelineSpec{
				AppRef: v1alpha1.AppReference{APIVersion: "apps/v1", Kind: "Deployment", Name: pc.name, Container: "app"},
				Environments: []v1alpha1.Environment{
					{Name: "dev", Targets: []v1alpha1.Target{{Namespace: ns}}},
					{Name: "staging", Targets: []v1alpha1.Target{{Namespace: pc.stagingNamespace, ClusterRef: clusterRef}}},
				},
			},
		}
		if err := env.Client.Create(ctx, p); err != nil {
			t.Fatalf("creating pipeline %s: %v", pc.name, err)
		}
	}
	pipelineStatus := func(ctx context.Context, name string) (*v1alpha1.Pipeline, error) {
		var p v1alpha1.Pipeline
		err := env.Client.Get(ctx, client.ObjectKey{Namespace: ns, Name: name}, &p)
		return &p, err
	}
	waitFor(t, "every pipeline observes revision 1", convergeTimeout, []*replica{c.r}, func(ctx context.Context) (bool, string, error) {
		for _, pc := range pipelines {
			p, err := pipelineStatus(ctx, pc.name)
			if err != nil {
				return false, "", err
			}
			if !pipelineAt(p, "1") {
				return false, fmt.Sprintf("%s: %+v", pc.name, p.Status), nil
			}
		}
		return true, "", nil
	})

	if err := leaf.Kill(testenv.APIServer); err != nil {
		t.Fatal(err)
	}
	killed := time.Now()
	from := c.mark()
	for _, pc := range pipelines {
		if err := setImageRolledOut(ctx, env.Client, ns, pc.name, "2"); err != nil {
			t.Fatal(err)
		}
	}
	var said string
	waitFor(t, "the local stagings are promoted and the remote pipelines name the leaf as unreachable", convergeTimeout, nil, func(ctx context.Context) (bool, string, error) {
		c.keepRunning()
		for _, pc := range pipelines {
			if pc.remote {
				p, err := pipelineStatus(ctx, pc.name)
				if err != nil {
					return false, "", err
				}
				cond := meta.FindStatusCondition(p.Status.Conditions, v1alpha1.ConditionClusterUnreachable)
				if cond == nil || cond.Status != metav1.ConditionTrue || !strings.Contains(cond.Message, leafCluster) {
					return false, fmt.Sprintf("%s: ClusterUnreachable %+v", pc.name, cond), nil
				}
				said = cond.Reason + ": " + cond.Message
				continue
			}
			image, err := appImageOf(ctx, env.Client, pc.stagingNamespace, pc.name)
			if err != nil || !strings.HasSuffix(image, ":2") {
				return false, fmt.Sprintf("%s staging runs %s (%v)", pc.name, image, err), err
			}
		}
		return true, "", nil
	})
	localDone := time.Since(killed)
	unreachableEvents := len(reasonEvents(t, ns, v1alpha1.EventClusterUnreachable))
	if err := leaf.Restart(testenv.APIServer, filepath.Join(t.TempDir(), "leaf-apiserver.log")); err != nil {
		t.Fatal(err)
	}
	restored := time.Now()
	errs, _ := c.saidSince(from)
	waitFor(t, "every remote staging is promoted", convergeTimeout, nil, func(ctx context.Context) (bool, string, error) {
		c.keepRunning()
		for _, pc := range pipelines {
			// Roll out what the controller patched, as the Deployment controller would.
			if image, err := appImageOf(ctx, pc.staging, pc.stagingNamespace, pc.name); err == nil && strings.HasSuffix(image, ":2") {
				if err := setImageRolledOut(ctx, pc.staging, pc.stagingNamespace, pc.name, "2"); err != nil {
					return false, "", err
				}
			}
			p, err := pipelineStatus(ctx, pc.name)
			if err != nil {
				return false, "", err
			}
			if !pipelineAt(p, "2") {
				return false, fmt.Sprintf("%s: %+v", pc.name, p.Status), nil
			}
		}
		return true, "", nil
	})
	took := time.Since(restored)
	promotions := promotedEvents(t, ns)
	for _, pc := range pipelines {
		if got := promotions[pc.name]; got != 1 {
			t.Errorf("pipeline %s: %d promotions, want 1", pc.name, got)
		}
		image, err := appImageOf(ctx, pc.staging, pc.stagingNamespace, pc.name)
		if err != nil || !strings.HasSuffix(image, ":2") {
			t.Errorf("pipeline %s: staging runs %s (%v)", pc.name, image, err)
		}
	}
	if unreachableEvents == 0 {
		t.Errorf("no %s Event", v1alpha1.EventClusterUnreachable)
	}
	faultLine(t, "remote-cluster", "pipelines", 2*n, "remote", n, "local_promoted_while_down_s", localDone.Round(time.Second).Seconds(),
		"down_s", restored.Sub(killed).Round(time.Second).Seconds(), "unreachable_events", unreachableEvents, "controller_errors", errs,
		"controller_restarts", len(c.restarts), "converge_s", took.Round(time.Second).Seconds(), "said", strconv.Quote(said))
}

// pipelineAt: both environments at rev and ready.
func pipelineAt(p *v1alpha1.Pipeline, rev string) bool {
	if len(p.Status.Environments) != 2 {
		return false
	}
	for _, e := range p.Status.Environments {
		if !e.Ready || e.Revision != rev {
			return false
		}
	}
	return true
}

// promotedEvents counts the Promoted Events (with their repeats) per pipeline of ns.
func promotedEvents(t testing.TB, ns string) map[string]int {
	t.Helper()
	var list eventsv1.EventList
	if err := env.Client.List(context.Background(), &list, client.InNamespace(ns)); err != nil {
		t.Fatal(err)
	}
	counts := map[string]int{}
	for _, e := range list.Items {
		if e.Reason != v1alpha1.EventPromoted {
			continue
		}
		n := 1
		if e.Series != nil {
			n = int(e.Series.Count)
		}
		counts[e.Regarding.Name] += n
	}
	return counts
}

// createRolledOut creates a Deployment whose container app runs image :tag, with the status the
// Deployment controller writes once it rolled out (none runs with envtest).
func createRolledOut(ctx context.Context, c client.Client, namespace, name, tag string) error {
	labels := map[string]string{"app": name}
	d := &appsv1.Deployment{
		ObjectMeta: metav1.ObjectMeta{Namespace: namespace, Name: name},
		Spec: appsv1.DeploymentSpec{
			Selector: &metav1.LabelSelector{MatchLabels: labels},
			Template: corev1.PodTemplateSpec{ObjectMeta: metav1.ObjectMeta{Labels: labels},
				Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "app", Image: "registry.example.com/app:" + tag}}}},
		},
	}
	if err := c.Create(ctx, d); err != nil {
		return fmt.Errorf("creating deployment %s/%s: %w", namespace, name, err)
	}
	return setImageRolledOut(ctx, c, namespace, name, tag)
}

// setImageRolledOut sets the Deployment's image to :tag and writes its rolled-out status.
func setImageRolledOut(ctx context.Context, c client.Client, namespace, name, tag string) error {
	return retry.RetryOnConflict(retry.DefaultRetry, func() error {
		var d appsv1.Deployment
		if err := c.Get(ctx, client.ObjectKey{Namespace: namespace, Name: name}, &d); err != nil {
			return err
		}
		if image := "registry.example.com/app:" + tag; d.Spec.Template.Spec.Containers[0].Image != image {
			d.Spec.Template.Spec.Containers[0].Image = image
			if err := c.Update(ctx, &d); err != nil {
				return err
			}
		}
		d.Status = appsv1.DeploymentStatus{ObservedGeneration: d.Generation, Replicas: 1, UpdatedReplicas: 1, ReadyReplicas: 1, AvailableReplicas: 1}
		return c.Status().Update(ctx, &d)
	})
}

func appImageOf(ctx context.Context, c client.Client, namespace, name string) (string, error) {
	var d appsv1.Deployment
	if err := c.Get(ctx, client.ObjectKey{Namespace: namespace, Name: name}, &d); err != nil {
		return "", err
	}
	return d.Spec.Template.Spec.Containers[0].Image, nil
}
