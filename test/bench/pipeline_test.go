//go:build !unit

package bench

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"golang.org/x/sync/errgroup"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/util/retry"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/release-controller/release-controller/api/v1alpha1"
	"github.com/release-controller/release-controller/internal/pipeline"
	"github.com/release-controller/release-controller/internal/releaselog"
	"github.com/release-controller/release-controller/internal/testenv"
)

const (
	// benchPipelines, each with the environments below, each with benchTargets targets.
	benchPipelines = 100
	benchTargets   = 2
	// pipelineNamespace holds the pipelines and the leaves' kubeconfig Secrets (one Secret
	// per leaf, shared by every pipeline: one cluster each).
	pipelineNamespace = "pipelines"
	// appImage is the apps' image; the revision is its tag.
	appImage = "registry.example.com/app"
	// promoteWorkers change pipelines at once.
	promoteWorkers = 8
)

// benchEnvironments: dev on leaf a, staging on leaf b, prod on the management cluster (its
// clusterRef empty).
var benchEnvironments = []struct{ name, clusterRef string }{
	{"dev", "leaf-a"}, {"staging", "leaf-b"}, {"prod", ""},
}

// BenchmarkShippedPipelines runs the built binary as `release-controller controller
// --kubeconfig FILE` against a management API server and two leaf API servers (reached
// through kubeconfig Secrets), with 100 pipelines × 3 environments (dev on leaf a, staging on
// leaf b, prod on the management cluster) × 2 targets, each an apps/v1 Deployment promoted by
// the patch strategy, no approvals. Per pipeline it moves dev's two Deployments to a new image
// and rolls them out (the status the Deployment controller writes), then measures the time
// from the last of those writes returning to the informer event showing the new image on both
// staging Deployments; then the same from staging's rollout on leaf b to prod's patch (8
// pipelines at a time). One line per run:
//
//	BENCH pipelines pipelines=100 environments=3 targets=2 clusters=3 informers=… p50_ms=…
//	p99_ms=… max_ms=… rss_mb=… …
//
// informers and clusters are the controller's own gauges (release_controller_pipeline_*).
func BenchmarkShippedPipelines(b *testing.B) { loopShippedPipelines(b, false) }

// BenchmarkShippedPipelinesWithPolicies is BenchmarkShippedPipelines with promotion policies
// on: every environment soaks benchSoak; prod's approval policy needs two approvers (the
// signed key and a ServiceAccount's token) under separation of duties, approved through the
// approval route of the built binary's `api` once prod waits (8 pipelines at a time); a
// ReleaseFreeze (a stop-the-line) holds benchFrozen more pipelines of the namespace, whose dev
// the benchmark moves too and which must not move further; and a ClusterReleaseFreeze's weekly
// window in Europe/Berlin, not open during the run, covers every pipeline's prod. A promotion
// is timed from the moment it became due: dev's rollout plus the soak, or the sending of the
// approval that met prod's policy. One line per run, as BenchmarkShippedPipelines's, named
// pipelines-policies; the progress lines give each hop's p50 and p99.
func BenchmarkShippedPipelinesWithPolicies(b *testing.B) { loopShippedPipelines(b, true) }

func loopShippedPipelines(b *testing.B, policies bool) {
	binary := releaseControllerBinary(b)
	for b.Loop() {
		p50, p99 := runShippedPipelines(b, binary, policies)
		b.ReportMetric(float64(p50.Milliseconds()), "p50-ms")
		b.ReportMetric(float64(p99.Milliseconds()), "p99-ms")
	}
}

// The policies of BenchmarkShippedPipelinesWithPolicies.
const (
	// benchSoak is every environment's minSoak: longer than the burst of the 100 dev rollouts
	// (about 4 s), as a real soak (minutes, hours) is, so that the soaks end, and the
	// promotions follow, in a burst of the same shape as BenchmarkShippedPipelines's. With
	// 2 s, the first soaks end while the later rollouts are still being observed, and the
	// promotions wait in the queue behind them (p99 2–4 s on the shared two cores).
	benchSoak = 10 * time.Second
	// benchFrozen pipelines, after the benchPipelines measured, are held by a ReleaseFreeze.
	benchFrozen = 10
	// frozenLabel marks them; the freeze selects it.
	frozenLabel = "bench.release-controller.dev/frozen"
	// approvalSecret holds prod's approval key; approverAccount is prod's second approver.
	approvalSecret  = "prod-approvals"
	approverAccount = "approver"
)

// appName is pipeline i's app: a Deployment of that name in every target namespace.
func appName(i int) string { return fmt.Sprintf("app-%03d", i) }

// targetNamespace is the namespace of target t of every environment on its cluster.
func targetNamespace(t int) string { return fmt.Sprintf("target-%d", t) }

func runShippedPipelines(b *testing.B, binary string, policies bool) (p50, p99 time.Duration) {
	runStart := time.Now()
	ctx := context.Background()
	dir := runDir(b)
	name, apps := "pipelines", benchPipelines
	if policies {
		name, apps = "pipelines-policies", benchPipelines+benchFrozen
	}
	progressf("shipped %s: %d pipelines x %d environments x %d targets over 3 clusters; binary %s",
		name, benchPipelines, len(benchEnvironments), benchTargets, binary)

	mgmt, kubeconfig := startAPIServer(b, dir)
	defer stopAPIServer(mgmt)
	createNamespace(b, mgmt, pipelineNamespace)
	createNamespace(b, mgmt, releaselog.DefaultNamespace)
	clusters := map[string]*testenv.Env{"": mgmt}
	for _, e := range benchEnvironments {
		if e.clusterRef == "" {
			continue
		}
		leafDir := filepath.Join(dir, e.clusterRef)
		if err := os.Mkdir(leafDir, 0o700); err != nil {
			b.Fatal(err)
		}
		leaf, leafKubeconfig := startAPIServer(b, leafDir)
		defer stopAPIServer(leaf)
		clusters[e.clusterRef] = leaf
		data, err := os.ReadFile(leafKubeconfig)
		if err != nil {
			b.Fatal(err)
		}
		secret := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: pipelineNamespace, Name: e.clusterRef},
			Data: map[string][]byte{v1alpha1.SecretKeyKubeconfig: data}}
		if err := mgmt.Client.Create(ctx, secret); err != nil {
			b.Fatal(err)
		}
	}
	for _, env := range clusters {
		for t := range benchTargets {
			createNamespace(b, env, targetNamespace(t))
		}
	}
	grantPipelineAccount(b, mgmt)
	var approvals *benchApprovals
	if policies {
		approvals = setUpPolicies(b, mgmt)
	}

	// Every app at revision 1 and rolled out on every target.
	parallelPlain(b, apps, setupWorkers, func(i int) error {
		for _, e := range benchEnvironments {
			for t := range benchTargets {
				if err := createApp(ctx, clusters[e.clusterRef].Client, targetNamespace(t), appName(i), "1"); err != nil {
					return err
				}
			}
		}
		return nil
	})

	metricsAddr, probeAddr, pprofAddr := freeAddr(b), freeAddr(b), freeAddr(b)
	ctl := startProcess(b, binary, filepath.Join(dir, "controller.log"),
		"controller", "--kubeconfig", kubeconfig,
		"--metrics-bind-address", metricsAddr, "--health-probe-bind-address", probeAddr,
		"--pprof-bind-address", pprofAddr,
		"--leader-election-namespace", "default", "--build-image", "release-controller:bench")
	defer ctl.stop()
	ctl.waitReady(b, probeAddr)
	waitLeader(b, mgmt, ctl)
	progressf("release-controller pid %d ready and leader after %s", ctl.Pid(), time.Since(runStart).Round(time.Millisecond))
	rssBefore := rssKB(ctl.Pid())

	parallelPlain(b, apps, setupWorkers, func(i int) error {
		return mgmt.Client.Create(ctx, benchPipeline(i, policies))
	})
	waitPipelines(b, mgmt, ctl, "all observed at 1", func(p *v1alpha1.Pipeline) bool {
		return meta.IsStatusConditionTrue(p.Status.Conditions, v1alpha1.ConditionReady) && atRevision(p, "1", len(benchEnvironments))
	})
	progressf("%d pipelines observed at revision 1 on every target (%s into the run)", benchPipelines, time.Since(runStart).Round(time.Millisecond))
	if policies {
		// The frozen pipelines' dev moves to 2 as the others' will; their freeze holds it there.
		parallelPlain(b, benchFrozen, promoteWorkers, func(j int) error {
			c := clusters[benchEnvironments[0].clusterRef].Client
			for t := range benchTargets {
				if err := setAppImage(ctx, c, targetNamespace(t), appName(benchPipelines+j), "2"); err != nil {
					return err
				}
				if err := rollOutApp(ctx, c, targetNamespace(t), appName(benchPipelines+j)); err != nil {
					return err
				}
			}
			return nil
		})
	}

	if policies {
		// Revision 1's soaks, started when the pipelines were created, and the frozen
		// pipelines' dev's end before the hops start: their writes are the setup's, not the
		// promotions'.
		waitNoSoak(b, mgmt, ctl)
	}

	// Two hops: dev's rollout on leaf a → staging patched on leaf b; staging's rollout on
	// leaf b → prod patched on the management cluster.
	profiled := profileCPU(b, pprofAddr)
	writesBefore := scrapeAPIServerCounts(b, mgmt.Config, "pipelines")
	reconcilesBefore := scrapeReconciles(b, metricsAddr, "pipeline")
	var latencies []time.Duration
	for hop := range len(benchEnvironments) - 1 {
		from, to := benchEnvironments[hop], benchEnvironments[hop+1]
		w := watchImages(b, clusters[to.clusterRef], "2")
		changed := make([]time.Time, benchPipelines)
		hopStart := time.Now()
		parallel(b, ctl, benchPipelines, promoteWorkers, func(i int) error {
			c := clusters[from.clusterRef].Client
			var g errgroup.Group
			for t := range benchTargets {
				g.Go(func() error {
					if hop == 0 {
						if err := setAppImage(ctx, c, targetNamespace(t), appName(i), "2"); err != nil {
							return err
						}
					}
					return rollOutApp(ctx, c, targetNamespace(t), appName(i))
				})
			}
			err := g.Wait()
			changed[i] = time.Now()
			return err
		})
		// With policies, a promotion is due once the soak is over, or (prod) once the
		// approvals met the policy: the latency is timed from then, not from the rollout, so
		// that it leaves out the soak's wait (policy, not latency) and takes in a soak that
		// ends late. The controller counts the soak from when it saw every target ready,
		// after the rollout writes returned (or a few ms before, when a watch event beats the
		// write's answer), and keeps it exact (pipeline.ExactSoakTimes), so a promotion that
		// came before changed[i] would be a soak cut short.
		switch {
		case policies && hop == len(benchEnvironments)-2:
			approvals.approveAll(b, mgmt, ctl, binary, dir, kubeconfig, changed)
		case policies:
			for i := range changed {
				changed[i] = changed[i].Add(benchSoak)
			}
		}
		w.waitAll(b, ctl, to.name+" patched")
		w.stop()
		hopLatencies := make([]time.Duration, benchPipelines)
		for i := range benchPipelines {
			hopLatencies[i] = w.patchedAt(i).Sub(changed[i])
		}
		latencies = append(latencies, hopLatencies...)
		slices.Sort(hopLatencies)
		progressf("%s → %s: every pipeline's %s patched %s after the first %s change; p50 %s, p99 %s",
			from.name, to.name, to.name, w.last().Sub(hopStart).Round(time.Millisecond), from.name,
			percentile(hopLatencies, 50).Round(time.Millisecond), percentile(hopLatencies, 99).Round(time.Millisecond))
	}
	waitPipelines(b, mgmt, ctl, "all promoted to prod", func(p *v1alpha1.Pipeline) bool {
		lp := envStatusOf(p, "prod").LastPromotion
		return lp != nil && lp.Revision == "2"
	})
	profiled()
	if policies {
		checkFrozen(b, mgmt)
	}
	writes := scrapeAPIServerCounts(b, mgmt.Config, "pipelines")
	reconciles := scrapeReconciles(b, metricsAddr, "pipeline") - reconcilesBefore
	rss := rssKB(ctl.Pid())
	stats := scrapePipelineStats(b, metricsAddr)
	slices.Sort(latencies)
	ctl.checkAlive(b)
	queue := scrapeQueue(b, metricsAddr, "pipeline")
	p50, p99 = percentile(latencies, 50), percentile(latencies, 99)
	// The approval route writes each approval into the status too (two per pipeline with
	// policies): the controller's own writes are the rest.
	approvalWrites := 0.0
	if policies {
		approvalWrites = 2 * benchPipelines
	}
	benchLine(name,
		"pipelines", benchPipelines, "environments", len(benchEnvironments), "targets", benchTargets,
		"clusters", stats.Clusters, "informers", stats.Informers,
		"p50_ms", p50.Milliseconds(), "p99_ms", p99.Milliseconds(), "max_ms", latencies[len(latencies)-1].Milliseconds(),
		"rss_mb", rss>>10, "rss_before_mb", rssBefore>>10, "promotions", len(latencies),
		"status_writes_per_promotion", fmt.Sprintf("%.2f", (writes.ok-writesBefore.ok)/float64(len(latencies))),
		"controller_writes_per_promotion", fmt.Sprintf("%.2f", (writes.ok-writesBefore.ok-approvalWrites)/float64(len(latencies))),
		"conflicts", writes.conflicts-writesBefore.conflicts,
		"reconciles_per_promotion", fmt.Sprintf("%.2f", reconciles/float64(len(latencies))),
		"pipeline_queue_ms", fmt.Sprintf("%.0f", queue.waitMS), "pipeline_reconcile_ms", fmt.Sprintf("%.1f", queue.workMS),
		"seconds", fmt.Sprintf("%.0f", time.Since(runStart).Seconds()),
	)
	return p50, p99
}

// benchPipeline is pipeline i; with policies, every environment soaks benchSoak, prod needs
// two approvers under separation of duties, and pipelines past benchPipelines carry
// frozenLabel.
func benchPipeline(i int, policies bool) *v1alpha1.Pipeline {
	p := &v1alpha1.Pipeline{
		ObjectMeta: metav1.ObjectMeta{Namespace: pipelineNamespace, Name: appName(i)},
		Spec: v1alpha1.PipelineSpec{
			AppRef: v1alpha1.AppReference{APIVersion: "apps/v1", Kind: "Deployment", Name: appName(i), Container: "app"},
		},
	}
	for _, e := range benchEnvironments {
		env := v1alpha1.Environment{Name: e.name}
		for t := range benchTargets {
			env.Targets = append(env.Targets, v1alpha1.Target{Namespace: targetNamespace(t), ClusterRef: e.clusterRef})
		}
		p.Spec.Environments = append(p.Spec.Environments, env)
	}
	if policies {
		p.Spec.Promotion = &v1alpha1.Promotion{MinSoak: &metav1.Duration{Duration: benchSoak}}
		p.Spec.Environments[len(p.Spec.Environments)-1].Approval = &v1alpha1.Approval{
			SecretRef: &v1alpha1.SecretKeyReference{Name: approvalSecret}, MinApprovers: 2, SeparationOfDuties: true,
		}
		if i >= benchPipelines {
			p.Labels = map[string]string{frozenLabel: "true"}
		}
	}
	return p
}

// grantPipelineAccount lets the account the controller acts as for the pipelines (their
// namespace's default, the binary's --default-service-account) do what they do on the
// management cluster: read the leaves' kubeconfig Secrets and patch prod's Deployments.
func grantPipelineAccount(b *testing.B, mgmt *testenv.Env) {
	b.Helper()
	subjects := []rbacv1.Subject{{Kind: rbacv1.ServiceAccountKind, Namespace: pipelineNamespace, Name: "default"}}
	grants := map[string]rbacv1.PolicyRule{pipelineNamespace: {APIGroups: []string{""}, Resources: []string{"secrets"}, Verbs: []string{"get"}}}
	for t := range benchTargets {
		grants[targetNamespace(t)] = rbacv1.PolicyRule{APIGroups: []string{"apps"}, Resources: []string{"deployments"}, Verbs: []string{"get", "patch"}}
	}
	for namespace, rule := range grants {
		for _, obj := range []client.Object{
			&rbacv1.Role{ObjectMeta: metav1.ObjectMeta{Namespace: namespace, Name: "pipelines"}, Rules: []rbacv1.PolicyRule{rule}},
			&rbacv1.RoleBinding{ObjectMeta: metav1.ObjectMeta{Namespace: namespace, Name: "pipelines"},
				RoleRef: rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "Role", Name: "pipelines"}, Subjects: subjects},
		} {
			if err := mgmt.Client.Create(context.Background(), obj); err != nil {
				b.Fatal(err)
			}
		}
	}
}

// createApp creates a Deployment whose container app runs tag, rolled out.
func createApp(ctx context.Context, c client.Client, namespace, name, tag string) error {
	labels := map[string]string{"app": name}
	d := &appsv1.Deployment{
		ObjectMeta: metav1.ObjectMeta{Namespace: namespace, Name: name},
		Spec: appsv1.DeploymentSpec{
			Selector: &metav1.LabelSelector{MatchLabels: labels},
			Template: corev1.PodTemplateSpec{
				ObjectMeta: metav1.ObjectMeta{Labels: labels},
				Spec:       corev1.PodSpec{Containers: []corev1.Container{{Name: "app", Image: appImage + ":" + tag}}},
			},
		},
	}
	if err := c.Create(ctx, d); err != nil {
		return fmt.Errorf("creating deployment %s/%s: %w", namespace, name, err)
	}
	return rollOutApp(ctx, c, namespace, name)
}

// setAppImage deploys a new tag by hand (as a CI system would), not rolled out yet.
func setAppImage(ctx context.Context, c client.Client, namespace, name, tag string) error {
	err := retry.RetryOnConflict(retry.DefaultRetry, func() error {
		var d appsv1.Deployment
		if err := c.Get(ctx, client.ObjectKey{Namespace: namespace, Name: name}, &d); err != nil {
			return err
		}
		d.Spec.Template.Spec.Containers[0].Image = appImage + ":" + tag
		return c.Update(ctx, &d)
	})
	if err != nil {
		return fmt.Errorf("setting the image of %s/%s: %w", namespace, name, err)
	}
	return nil
}

// rollOutApp writes the status the Deployment controller writes once a rollout is done (no
// such controller runs with envtest): the generation observed, every replica updated, ready
// and available.
func rollOutApp(ctx context.Context, c client.Client, namespace, name string) error {
	err := retry.RetryOnConflict(retry.DefaultRetry, func() error {
		var d appsv1.Deployment
		if err := c.Get(ctx, client.ObjectKey{Namespace: namespace, Name: name}, &d); err != nil {
			return err
		}
		replicas := int32(1)
		if d.Spec.Replicas != nil {
			replicas = *d.Spec.Replicas
		}
		d.Status = appsv1.DeploymentStatus{ObservedGeneration: d.Generation, Replicas: replicas,
			UpdatedReplicas: replicas, ReadyReplicas: replicas, AvailableReplicas: replicas}
		return c.Status().Update(ctx, &d)
	})
	if err != nil {
		return fmt.Errorf("rolling out %s/%s: %w", namespace, name, err)
	}
	return nil
}

func envStatusOf(p *v1alpha1.Pipeline, name string) v1alpha1.EnvironmentStatus {
	for _, e := range p.Status.Environments {
		if e.Name == name {
			return e
		}
	}
	return v1alpha1.EnvironmentStatus{}
}

// atRevision: n environments observed, every one ready at rev.
func atRevision(p *v1alpha1.Pipeline, rev string, n int) bool {
	if len(p.Status.Environments) != n {
		return false
	}
	for _, e := range p.Status.Environments {
		if !e.Ready || e.Revision != rev {
			return false
		}
	}
	return true
}

// waitPipelines polls the measured pipelines (not the frozen ones) until ok holds for every
// one of them; it fails on a stall of stallTimeout, at the benchmark's deadline, or when the
// controller exits.
func waitPipelines(b *testing.B, env *testenv.Env, ctl *process, what string, ok func(*v1alpha1.Pipeline) bool) {
	b.Helper()
	end := deadline()
	last, lastMoved := -1, time.Now()
	for {
		var list v1alpha1.PipelineList
		if err := env.Client.List(context.Background(), &list, client.InNamespace(pipelineNamespace)); err != nil {
			b.Fatalf("listing the pipelines: %v", err)
		}
		done := 0
		var notDone *v1alpha1.Pipeline
		for i := range list.Items {
			if list.Items[i].Labels[frozenLabel] == "true" {
				continue
			}
			if ok(&list.Items[i]) {
				done++
			} else if notDone == nil {
				notDone = &list.Items[i]
			}
		}
		if done == benchPipelines {
			return
		}
		if done != last {
			last, lastMoved = done, time.Now()
		}
		ctl.checkAlive(b)
		if time.Since(lastMoved) > stallTimeout || time.Now().After(end) {
			status := ""
			if notDone != nil {
				status = fmt.Sprintf("%s: %+v", notDone.Name, notDone.Status)
			}
			b.Fatalf("%s: stuck at %d of %d pipelines (e.g. %s); the end of the controller's log:\n%s", what, done, benchPipelines, status, ctl.Tail(40))
		}
		time.Sleep(200 * time.Millisecond)
	}
}

// waitNoSoak polls every pipeline of the namespace, the frozen ones too, until none has a soak
// running (soakUntil) and the controller wrote that; it fails as waitPipelines does.
func waitNoSoak(b *testing.B, env *testenv.Env, ctl *process) {
	b.Helper()
	end := deadline()
	for {
		var list v1alpha1.PipelineList
		if err := env.Client.List(context.Background(), &list, client.InNamespace(pipelineNamespace)); err != nil {
			b.Fatalf("listing the pipelines: %v", err)
		}
		soaking := ""
		for _, p := range list.Items {
			for _, e := range p.Status.Environments {
				if e.SoakUntil != nil && soaking == "" {
					soaking = p.Name + "'s " + e.Name
				}
			}
		}
		if soaking == "" {
			return
		}
		ctl.checkAlive(b)
		if time.Now().After(end) {
			b.Fatalf("%s still soaking at the deadline; the end of the controller's log:\n%s", soaking, ctl.Tail(40))
		}
		time.Sleep(200 * time.Millisecond)
	}
}

// imageWatch follows the Deployments of one cluster's target namespaces through an informer
// and notes when each target first showed the wanted tag.
type imageWatch struct {
	mu      sync.Mutex
	tag     string
	seen    map[client.ObjectKey]time.Time
	changed chan struct{}
	cancel  context.CancelFunc
}

func watchImages(b *testing.B, env *testenv.Env, tag string) *imageWatch {
	b.Helper()
	namespaces := map[string]cache.Config{}
	for t := range benchTargets {
		namespaces[targetNamespace(t)] = cache.Config{}
	}
	w := &imageWatch{tag: tag, seen: map[client.ObjectKey]time.Time{}, changed: make(chan struct{}, 1)}
	observe := func(obj any) {
		d, ok := obj.(*appsv1.Deployment)
		if !ok || len(d.Spec.Template.Spec.Containers) == 0 || !strings.HasSuffix(d.Spec.Template.Spec.Containers[0].Image, ":"+tag) {
			return
		}
		received := time.Now()
		w.mu.Lock()
		if _, done := w.seen[client.ObjectKeyFromObject(d)]; !done {
			w.seen[client.ObjectKeyFromObject(d)] = received
		}
		w.mu.Unlock()
		select {
		case w.changed <- struct{}{}:
		default:
		}
	}
	w.cancel = watch(b, env.Config, cache.Options{Scheme: env.Client.Scheme(), DefaultNamespaces: namespaces}, &appsv1.Deployment{}, observe, "deployment")
	return w
}

// patchedAt is when the last target of pipeline i showed the tag (zero: not yet).
func (w *imageWatch) patchedAt(i int) time.Time {
	w.mu.Lock()
	defer w.mu.Unlock()
	var last time.Time
	for t := range benchTargets {
		at, ok := w.seen[client.ObjectKey{Namespace: targetNamespace(t), Name: appName(i)}]
		if !ok {
			return time.Time{}
		}
		if at.After(last) {
			last = at
		}
	}
	return last
}

func (w *imageWatch) last() time.Time {
	w.mu.Lock()
	defer w.mu.Unlock()
	var last time.Time
	for _, at := range w.seen {
		if at.After(last) {
			last = at
		}
	}
	return last
}

// waitAll waits until every pipeline's targets show the tag; it fails on a stall of
// stallTimeout, at the benchmark's deadline, or when the controller exits.
func (w *imageWatch) waitAll(b *testing.B, ctl *process, what string) {
	b.Helper()
	end := deadline()
	check := time.NewTicker(time.Second)
	defer check.Stop()
	last, lastMoved := -1, time.Now()
	for {
		w.mu.Lock()
		done := len(w.seen)
		w.mu.Unlock()
		if done == benchPipelines*benchTargets {
			return
		}
		if done != last {
			last, lastMoved = done, time.Now()
		}
		select {
		case <-w.changed:
		case <-check.C:
		case <-ctl.Exited():
		}
		ctl.checkAlive(b)
		if time.Since(lastMoved) > stallTimeout || time.Now().After(end) {
			b.Fatalf("%s: %d of %d targets; the end of the controller's log:\n%s", what, done, benchPipelines*benchTargets, ctl.Tail(40))
		}
	}
}

func (w *imageWatch) stop() { w.cancel() }

// scrapeReconciles reads how many reconciles the controller named name has run, from the
// metrics endpoint at addr.
func scrapeReconciles(b *testing.B, addr, name string) float64 {
	b.Helper()
	metrics := scrapeControllerMetrics(b, addr)
	n, _ := metrics.Sum("controller_runtime_reconcile_total", map[string]string{"controller": name})
	return n
}

// scrapePipelineStats reads the pipeline controller's clusters and informers gauges from its
// /metrics.
func scrapePipelineStats(b *testing.B, addr string) pipeline.Stats {
	b.Helper()
	metrics := scrapeControllerMetrics(b, addr)
	clusters, ok1 := metrics.Sum(pipeline.MetricClusters, nil)
	informers, ok2 := metrics.Sum(pipeline.MetricInformers, nil)
	if !ok1 || !ok2 {
		b.Fatalf("the controller's /metrics has no %s or %s", pipeline.MetricClusters, pipeline.MetricInformers)
	}
	return pipeline.Stats{Clusters: int(clusters), Informers: int(informers)}
}
