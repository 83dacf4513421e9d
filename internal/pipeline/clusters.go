package pipeline

import (
	"context"
	"fmt"
	"maps"
	"slices"
	"sync"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/rest"
	toolscache "k8s.io/client-go/tools/cache"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/cluster"

	"github.com/release-controller/release-controller/api/v1alpha1"
	"github.com/release-controller/release-controller/internal/clusters"
)

// ClusterKey names a cluster: the kubeconfig Secret namespace/name, or zero for the local
// cluster (the one the controller runs against).
type ClusterKey = clusters.Key

// appKey is one entry of the apps index: an app object on a cluster.
type appKey struct {
	cluster         ClusterKey
	gvk             schema.GroupVersionKind
	namespace, name string
}

type informerKey struct {
	cluster ClusterKey
	gvk     schema.GroupVersionKind
}

// Clusters is the apps watcher and the apps index over the clusters the pipelines use: a
// clusters.Manager runs a controller-runtime cluster.Cluster (client and cache) per cluster
// that at least one pipeline uses; on each, Clusters keeps one shared informer per app kind
// however many pipelines watch that kind there, and the index (cluster, namespace, app) →
// pipelines that routes an informer's events. An update event enqueues a pipeline only when
// its app's revision or readiness moved between the event's old and new objects; nothing polls
// a cluster for apps.
//
// The Manager probes each cluster in use (its /version, a cheap request every user may make);
// each change of reachability enqueues its pipelines, whose status then says so
// (ClusterUnreachable).
type Clusters struct {
	clusters *clusters.Manager
	enqueue  func(types.NamespacedName)
	// HealthInterval spaces the probes of a cluster that answers; set it before Start.
	HealthInterval time.Duration
	// InsecureKubeconfigExec lets the kubeconfigs run plugins and name files (see
	// clusters.CheckKubeconfig); set it before Start.
	InsecureKubeconfigExec bool
	// tenants are the clients that act as the pipelines' service accounts on the local
	// cluster (TenantOf).
	tenants *tenantClients

	mu sync.Mutex
	// inUse: the clusters the pipelines use, with what runs on each.
	inUse map[ClusterKey]*clusterEntry
	// index: app → pipelines watching it, with how each reads it.
	index map[appKey]map[types.NamespacedName]App
	// uses: pipeline → the apps it watches (to update the index when the pipeline changes).
	uses map[types.NamespacedName][]appKey
}

type clusterEntry struct {
	key ClusterKey
	// cluster is the one the informers run on: when the Manager rebuilt it (its Secret
	// changed), they went with it.
	cluster cluster.Cluster
	ctx     context.Context // ends when the cluster stops
	// readers are the service accounts seen allowed to read that Secret, and when: a
	// pipeline acting as another account (or as one last checked ReaderRecheck ago) is
	// checked again before it may use the cluster.
	readers   map[string]time.Time
	informers map[schema.GroupVersionKind]*informerEntry
}

type informerEntry struct {
	informer     cache.Informer
	registration toolscache.ResourceEventHandlerRegistration
	// stopWaiting ends the wait for the informer's first sync when it is removed first.
	stopWaiting context.CancelFunc
}

// NewClusters returns a clusters manager. local is the controller's own cluster; secretMeta
// reads kubeconfig Secrets' metadata (a manager's client: from its metadata cache) and secrets
// their data (an API reader); enqueue is called with a pipeline whose apps or clusters changed.
func NewClusters(local *rest.Config, secretMeta, secrets client.Reader, enqueue func(types.NamespacedName)) *Clusters {
	c := &Clusters{
		enqueue:        enqueue,
		HealthInterval: clusters.DefaultHealthInterval,
		tenants:        newTenantClients(local),
		inUse:          map[ClusterKey]*clusterEntry{},
		index:          map[appKey]map[types.NamespacedName]App{},
		uses:           map[types.NamespacedName][]appKey{},
	}
	c.clusters = clusters.NewManager(local, secretMeta, secrets, c.reachabilityChanged)
	return c
}

// Start runs until ctx ends, then stops every cluster. It is a manager Runnable (leader only:
// only the leader promotes).
func (c *Clusters) Start(ctx context.Context) error {
	c.clusters.HealthInterval, c.clusters.InsecureKubeconfigExec = c.HealthInterval, c.InsecureKubeconfigExec
	setRunning(c, true)
	defer setRunning(c, false)
	err := c.clusters.Start(ctx)
	c.mu.Lock()
	defer c.mu.Unlock()
	clear(c.inUse)
	return err
}

// ClusterView is what a reconcile needs of one cluster.
type ClusterView struct {
	// Problem is set when the cluster cannot be read; the rest is then unset.
	Problem *ClusterProblem
	// Reader reads the app objects from the cluster's informers; Writer writes to the cluster.
	Reader client.Reader
	Writer client.Client
	synced func(schema.GroupVersionKind) bool
}

// Synced reports whether the app kind's informer on the cluster has synced: until then,
// nothing is known of the cluster's apps of that kind.
func (v ClusterView) Synced(gvk schema.GroupVersionKind) bool {
	return v.synced != nil && v.synced(gvk)
}

// ClusterKeyOf is the cluster of a target of a pipeline in namespace.
func ClusterKeyOf(namespace string, t v1alpha1.Target) ClusterKey {
	if t.ClusterRef == "" {
		return ClusterKey{}
	}
	return ClusterKey{Namespace: namespace, Secret: t.ClusterRef}
}

// Sync makes the watches match the pipeline: its app on each of its targets' clusters. It
// returns a view of each cluster the pipeline uses, for tenant (TenantOf; "" the
// controller itself): the local cluster's writer acts as tenant, and a kubeconfig Secret is
// read as tenant. A nil pipeline (deleted) releases everything the pipeline held: clusters
// and informers that no other pipeline needs stop.
func (c *Clusters) Sync(ctx context.Context, key types.NamespacedName, p *v1alpha1.Pipeline, app App, tenant string) (map[ClusterKey]ClusterView, error) {
	select {
	case <-c.clusters.Started():
	default:
		return nil, clusters.ErrNotStarted
	}
	var wanted []appKey
	if p != nil {
		seen := map[appKey]bool{}
		for _, env := range p.Spec.Environments {
			for _, t := range env.Targets {
				k := appKey{cluster: ClusterKeyOf(p.Namespace, t), gvk: app.GVK, namespace: t.Namespace, name: app.Name}
				if !seen[k] {
					seen[k] = true
					wanted = append(wanted, k)
				}
			}
		}
	}

	c.mu.Lock()
	defer c.mu.Unlock()
	// The index first: events from now on route to the pipeline's current apps.
	for _, k := range c.uses[key] {
		delete(c.index[k], key)
		if len(c.index[k]) == 0 {
			delete(c.index, k)
		}
	}
	for _, k := range wanted {
		if c.index[k] == nil {
			c.index[k] = map[types.NamespacedName]App{}
		}
		c.index[k][key] = app
	}
	if len(wanted) == 0 {
		delete(c.uses, key)
	} else {
		c.uses[key] = wanted
	}

	views := map[ClusterKey]ClusterView{}
	for _, k := range wanted {
		if _, done := views[k.cluster]; done {
			continue
		}
		views[k.cluster] = c.ensure(ctx, k.cluster, app.GVK, tenant)
	}
	c.collect(ctx)
	return views, nil
}

// ensure starts the cluster and the informer of gvk on it unless they run; c.mu is held.
func (c *Clusters) ensure(ctx context.Context, key ClusterKey, gvk schema.GroupVersionKind, tenant string) ClusterView {
	e, problem, err := c.ensureCluster(ctx, key, tenant)
	if err != nil {
		return ClusterView{Problem: &ClusterProblem{Cluster: key.Secret, Invalid: true, Forbidden: isTenantForbidden(err), Message: err.Error()}}
	}
	if problem != nil {
		return ClusterView{Problem: &ClusterProblem{Cluster: key.Secret, Message: problem.Error()}}
	}
	if _, ok := e.informers[gvk]; !ok {
		if err := c.startInformer(ctx, e, gvk); err != nil {
			// Discovery failed (the cluster went away since its last probe, or does not
			// serve the kind): retried with the next reconcile of the pipeline.
			return ClusterView{Problem: &ClusterProblem{Cluster: key.Secret, Message: err.Error()}}
		}
	}
	informers := e.informers
	view := ClusterView{
		Reader: e.cluster.GetCache(), Writer: e.cluster.GetClient(),
		synced: func(gvk schema.GroupVersionKind) bool {
			i, ok := informers[gvk]
			return ok && i.registration.HasSynced()
		},
	}
	if key.IsLocal() && tenant != "" {
		// The tenant's writes go with the tenant's rights: the API server's RBAC decides.
		// (A remote cluster's are the kubeconfig's own identity, which the tenant supplied.)
		w, err := c.tenants.get(tenant)
		if err != nil {
			return ClusterView{Problem: &ClusterProblem{Message: err.Error()}}
		}
		view.Writer = w
	}
	return view
}

// ReaderRecheck is how long a service account seen allowed to read a kubeconfig Secret is
// taken to still be, before it is checked again (a revoked grant shows within it).
const ReaderRecheck = 5 * time.Minute

// ensureCluster returns the running cluster of key (clusters.Manager.Ensure: built from its
// Secret, read as tenant, when there is none or the Secret changed) with its last probe's
// problem; a cluster built already is returned to a tenant only once it was seen allowed to
// read the Secret. Its error says why the Secret gives no cluster; c.mu is held.
func (c *Clusters) ensureCluster(ctx context.Context, key ClusterKey, tenant string) (*clusterEntry, error, error) {
	var secrets client.Reader
	if tenant != "" && !key.IsLocal() {
		tc, err := c.tenants.get(tenant)
		if err != nil {
			return nil, nil, err
		}
		secrets = tc
	}
	run, err := c.clusters.Ensure(ctx, key, secrets)
	if err != nil {
		if e := c.inUse[key]; e != nil {
			c.forget(e) // its cluster stopped
		}
		if tenant != "" && apierrors.IsForbidden(err) {
			return nil, nil, tenantSecretError(err, tenant, key)
		}
		return nil, nil, err
	}
	e := c.inUse[key]
	if e != nil && e.cluster == run.Cluster {
		if tenant != "" && !key.IsLocal() && time.Since(e.readers[tenant]) > ReaderRecheck {
			if err := c.tenants.mayRead(ctx, tenant, key); err != nil {
				return nil, nil, err // the cluster stays for the pipelines that may read it
			}
			e.readers[tenant] = time.Now()
		}
		return e, run.Problem, nil
	}
	if e != nil {
		c.forget(e) // rebuilt: its informers went with the old cluster
	}
	// Built now, from the Secret read as tenant.
	e = &clusterEntry{key: key, cluster: run.Cluster, ctx: run.Ctx, readers: map[string]time.Time{}, informers: map[schema.GroupVersionKind]*informerEntry{}}
	if tenant != "" && !key.IsLocal() {
		e.readers[tenant] = time.Now()
	}
	c.inUse[key] = e
	return e, run.Problem, nil
}

// startInformer adds the shared informer of gvk on e's cluster, and routes its events
// through the index; c.mu is held.
func (c *Clusters) startInformer(ctx context.Context, e *clusterEntry, gvk schema.GroupVersionKind) error {
	obj := &unstructured.Unstructured{}
	obj.SetGroupVersionKind(gvk)
	inf, err := e.cluster.GetCache().GetInformer(ctx, obj, cache.BlockUntilSynced(false))
	if err != nil {
		return fmt.Errorf("watching %s: %w", gvk.Kind, err)
	}
	reg, err := inf.AddEventHandler(toolscache.ResourceEventHandlerFuncs{
		AddFunc:    func(o any) { c.route(e.key, gvk, nil, asUnstructured(o)) },
		UpdateFunc: func(old, o any) { c.route(e.key, gvk, asUnstructured(old), asUnstructured(o)) },
		DeleteFunc: func(o any) {
			if d, ok := o.(toolscache.DeletedFinalStateUnknown); ok {
				o = d.Obj
			}
			c.route(e.key, gvk, asUnstructured(o), nil)
		},
	})
	if err != nil {
		return err
	}
	waitCtx, stopWaiting := context.WithCancel(e.ctx)
	e.informers[gvk] = &informerEntry{informer: inf, registration: reg, stopWaiting: stopWaiting}
	go c.enqueueWhenSynced(waitCtx, e.key, gvk, reg)
	ctrl.LoggerFrom(ctx).Info("watching app kind", "cluster", e.key.String(), "kind", gvk.String())
	return nil
}

// enqueueWhenSynced enqueues the pipelines watching gvk on the cluster once the informer's
// handler has seen its first list. Until then their reconciles say "waiting for the cache"
// and nothing else would call them back: the list's add events may be handled before the
// informer counts as synced, and an app that does not exist sends no event at all.
func (c *Clusters) enqueueWhenSynced(ctx context.Context, cluster ClusterKey, gvk schema.GroupVersionKind, reg toolscache.ResourceEventHandlerRegistration) {
	if !toolscache.WaitForCacheSync(ctx.Done(), reg.HasSynced) {
		return
	}
	c.mu.Lock()
	users := c.usersOf(cluster, gvk)
	c.mu.Unlock()
	for _, p := range users {
		c.enqueue(p)
	}
}

func asUnstructured(o any) *unstructured.Unstructured {
	u, _ := o.(*unstructured.Unstructured)
	return u
}

// route enqueues the pipelines whose app an event is about, when its revision or readiness
// moved between oldObj and newObj (nil: absent).
func (c *Clusters) route(cluster ClusterKey, gvk schema.GroupVersionKind, oldObj, newObj *unstructured.Unstructured) {
	obj := newObj
	if obj == nil {
		obj = oldObj
	}
	if obj == nil {
		return
	}
	k := appKey{cluster: cluster, gvk: gvk, namespace: obj.GetNamespace(), name: obj.GetName()}
	c.mu.Lock()
	var due []types.NamespacedName
	for p, app := range c.index[k] {
		if app.Changed(oldObj, newObj) {
			due = append(due, p)
		}
	}
	c.mu.Unlock()
	for _, p := range due {
		c.enqueue(p)
	}
}

// collect stops the informers and clusters no pipeline uses any more; c.mu is held.
func (c *Clusters) collect(ctx context.Context) {
	used := map[informerKey]bool{}
	for k := range c.index {
		used[informerKey{k.cluster, k.gvk}] = true
	}
	usedClusters := map[ClusterKey]bool{}
	for k := range used {
		usedClusters[k.cluster] = true
	}
	for key, e := range c.inUse {
		if !usedClusters[key] {
			c.stopCluster(ctx, e)
			continue
		}
		for gvk, i := range e.informers {
			if used[informerKey{key, gvk}] {
				continue
			}
			i.stopWaiting()
			_ = i.informer.RemoveEventHandler(i.registration)
			obj := &unstructured.Unstructured{}
			obj.SetGroupVersionKind(gvk)
			if err := e.cluster.GetCache().RemoveInformer(ctx, obj); err != nil {
				ctrl.LoggerFrom(ctx).Error(err, "stopping an informer", "cluster", key.String(), "kind", gvk.String())
			}
			delete(e.informers, gvk)
			ctrl.LoggerFrom(ctx).Info("stopped watching app kind", "cluster", key.String(), "kind", gvk.String())
		}
	}
}

// stopCluster stops e's cluster and forgets it; c.mu is held.
func (c *Clusters) stopCluster(ctx context.Context, e *clusterEntry) {
	c.forget(e)
	c.clusters.Stop(ctx, e.key)
}

// forget drops e, whose informers stop with its cluster; c.mu is held.
func (c *Clusters) forget(e *clusterEntry) {
	for _, i := range e.informers {
		i.stopWaiting()
	}
	delete(c.inUse, e.key)
}

// reachabilityChanged enqueues the pipelines of a cluster whose reachability changed (or
// that first answered). (An informer retries a refused connection by itself without a word,
// so only the Manager's probe tells an unreachable cluster.)
func (c *Clusters) reachabilityChanged(key ClusterKey) {
	c.mu.Lock()
	users := c.usersOf(key, schema.GroupVersionKind{})
	c.mu.Unlock()
	for _, p := range users {
		c.enqueue(p)
	}
}

// usersOf lists the pipelines with an app on the cluster, of kind gvk unless it is zero;
// c.mu is held.
func (c *Clusters) usersOf(key ClusterKey, gvk schema.GroupVersionKind) []types.NamespacedName {
	set := map[types.NamespacedName]bool{}
	for k, ps := range c.index {
		if k.cluster == key && (gvk.Empty() || k.gvk == gvk) {
			for p := range ps {
				set[p] = true
			}
		}
	}
	return slices.Collect(maps.Keys(set))
}

// Stats counts what runs: clusters and informers (the benchmark's informer count).
type Stats struct {
	Clusters, Informers int
}

// Stats returns the counts of running clusters and informers.
func (c *Clusters) Stats() Stats {
	c.mu.Lock()
	defer c.mu.Unlock()
	s := Stats{Clusters: len(c.inUse)}
	for _, e := range c.inUse {
		s.Informers += len(e.informers)
	}
	return s
}
