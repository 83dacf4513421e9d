package clusters

import (
	"context"
	"fmt"
	"maps"
	"slices"
	"sync"
	"time"

	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/types"
	toolscache "k8s.io/client-go/tools/cache"
	"k8s.io/client-go/util/workqueue"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/cluster"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"
	"sigs.k8s.io/controller-runtime/pkg/source"

	"github.com/release-controller/release-controller/internal/jobcache"
)

// Jobs runs verification jobs on remote clusters. For each cluster that a verification names
// (spec.verification[].cluster), and only while one does, it keeps a cluster.Cluster built from
// the kubeconfig Secret (to create and delete Jobs there; its Manager runs and probes it) and
// a jobcache.Cache of the controller's Jobs in the namespaces used there. The cache
// keeps what it last saw while its cluster is away, so nothing recorded is lost; each change of
// reachability, and each cache's first sync, enqueues the objects that use the cluster.
//
// Users (the payload and stream controllers) declare what they use with Use; the clusters and
// caches nobody uses stop.
type Jobs struct {
	clusters *Manager
	selector labels.Selector
	// HealthInterval spaces the probes of a cluster that answers; set it before Start.
	HealthInterval time.Duration
	// InsecureKubeconfigExec lets the kubeconfigs run plugins and name files (see
	// CheckKubeconfig); set it before Start.
	InsecureKubeconfigExec bool

	mu sync.Mutex
	// caches: the clusters in use, with their job caches.
	caches map[Key]*jobsCluster
	// uses: user → cluster → namespaces there.
	uses map[user]map[Key][]string
	// kinds: a kind of user → what to call when one of its objects should be reconciled.
	kinds map[string]func(types.NamespacedName)
	// sources are the controllers' job-record handlers, added to every cache.
	sources []recordHandler
}

type user struct {
	kind string
	types.NamespacedName
}

type recordHandler struct {
	changed func(*jobcache.Record, workqueue.TypedRateLimitingInterface[reconcile.Request])
	queue   workqueue.TypedRateLimitingInterface[reconcile.Request]
}

// jobsCluster is the job cache of a cluster in use.
type jobsCluster struct {
	key Key
	// cluster is the one the cache was built on: when the Manager rebuilt it, the cache goes.
	cluster cluster.Cluster
	// namespaces the cache watches; cache and stopCache are nil until it is built.
	namespaces []string
	cache      *jobcache.Cache
	stopCache  context.CancelFunc
}

// NewJobs returns a jobs manager; selector selects the controller's jobs (the contract labels).
func NewJobs(secretMeta, secrets client.Reader, selector labels.Selector) *Jobs {
	j := &Jobs{
		selector:       selector,
		HealthInterval: DefaultHealthInterval,
		caches:         map[Key]*jobsCluster{},
		uses:           map[user]map[Key][]string{},
		kinds:          map[string]func(types.NamespacedName){},
	}
	j.clusters = NewManager(nil, secretMeta, secrets, j.notify)
	return j
}

// Start runs until ctx ends, then stops every cluster. It is a manager Runnable (leader only,
// as the controllers that use it).
func (j *Jobs) Start(ctx context.Context) error {
	j.clusters.HealthInterval, j.clusters.InsecureKubeconfigExec = j.HealthInterval, j.InsecureKubeconfigExec
	err := j.clusters.Start(ctx)
	j.mu.Lock()
	defer j.mu.Unlock()
	clear(j.caches) // stopped with their clusters
	return err
}

// Source is a controller source for the users of kind (e.g. "payload"): it calls changed with
// every job record of every remote cache, now and later, as jobcache.Cache.Source does for one
// cache, and enqueues kind's objects that use a cluster whose reachability changes or whose
// jobs are first listed. It waits for no sync: a remote cache syncs when its cluster answers,
// and a View says whether it has.
func (j *Jobs) Source(kind string, changed func(*jobcache.Record, workqueue.TypedRateLimitingInterface[reconcile.Request])) source.Source {
	return source.Func(func(ctx context.Context, q workqueue.TypedRateLimitingInterface[reconcile.Request]) error {
		j.mu.Lock()
		defer j.mu.Unlock()
		j.kinds[kind] = func(obj types.NamespacedName) { q.Add(reconcile.Request{NamespacedName: obj}) }
		h := recordHandler{changed: changed, queue: q}
		j.sources = append(j.sources, h)
		for _, e := range j.caches {
			if e.cache != nil {
				if err := e.cache.Source(h.changed).Start(ctx, q); err != nil {
					return err
				}
			}
		}
		return nil
	})
}

// View is what a reconcile needs of one remote cluster.
type View struct {
	// Problem says why the cluster's jobs cannot be read or written now ("" when they can);
	// Invalid says the Secret itself gives no cluster (rather than a cluster that does not
	// answer).
	Problem string
	Invalid bool
	// Client writes to the cluster; Jobs holds the controller's jobs there. Both are nil while
	// Problem is set.
	Client client.Client
	Jobs   *jobcache.Cache
}

// Synced reports whether the cluster's jobs have been listed: until then nothing is known of
// them, and a missing job is not a lost one.
func (v View) Synced() bool {
	return v.Problem == "" && v.Jobs != nil && v.Jobs.HasSynced()
}

// Use records that the object obj of kind uses the clusters of want, each in the namespaces
// given there (nil or empty want: none), starts what is missing, stops what nobody uses any
// more, and returns a view of each cluster of want.
func (j *Jobs) Use(ctx context.Context, kind string, obj types.NamespacedName, want map[Key][]string) (map[Key]View, error) {
	select {
	case <-j.clusters.Started():
	case <-ctx.Done():
		return nil, fmt.Errorf("waiting for the job clusters manager to start: %w", context.Cause(ctx))
	}
	j.mu.Lock()
	defer j.mu.Unlock()
	u := user{kind: kind, NamespacedName: obj}
	if views, ok := j.unchanged(ctx, u, want); ok {
		return views, nil
	}
	if len(want) == 0 {
		if _, ok := j.uses[u]; !ok {
			return nil, nil
		}
		delete(j.uses, u)
	} else {
		j.uses[u] = want
	}
	used := j.used()
	views := make(map[Key]View, len(want))
	for key := range want {
		views[key] = j.ensure(ctx, key, used[key])
	}
	for key, e := range j.caches {
		if _, ok := used[key]; !ok {
			e.stop()
			delete(j.caches, key)
			j.clusters.Stop(ctx, key)
		}
	}
	return views, nil
}

// unchanged returns the views of want when u used exactly want already and each of its
// clusters runs with its cache, so that what everyone uses need not be gathered again (the
// common case: a payload reconciled again); j.mu is held.
func (j *Jobs) unchanged(ctx context.Context, u user, want map[Key][]string) (map[Key]View, bool) {
	before, ok := j.uses[u]
	if !ok || len(before) != len(want) {
		return nil, false
	}
	for key, namespaces := range want {
		e := j.caches[key]
		if e == nil || e.cache == nil || !slices.Equal(before[key], namespaces) {
			return nil, false
		}
	}
	views := make(map[Key]View, len(want))
	for key := range want {
		views[key] = j.ensure(ctx, key, j.caches[key].namespaces)
	}
	return views, true
}

// used is every cluster in use with the namespaces used there, sorted; j.mu is held.
func (j *Jobs) used() map[Key][]string {
	used := map[Key][]string{}
	for _, clusters := range j.uses {
		for key, namespaces := range clusters {
			used[key] = append(used[key], namespaces...)
		}
	}
	for key, namespaces := range used {
		slices.Sort(namespaces)
		used[key] = slices.Compact(namespaces)
	}
	return used
}

// ensure returns the view of key, building its cluster from the Secret when there is none or
// the Secret changed (Manager.Ensure), and its cache when there is none, it watches other
// namespaces or its cluster was rebuilt; j.mu is held.
func (j *Jobs) ensure(ctx context.Context, key Key, namespaces []string) View {
	run, err := j.clusters.Ensure(ctx, key, nil)
	if err != nil {
		if e := j.caches[key]; e != nil {
			e.stop() // its cluster stopped
			delete(j.caches, key)
		}
		return View{Problem: err.Error(), Invalid: true}
	}
	e := j.caches[key]
	if e == nil || e.cluster != run.Cluster {
		if e != nil {
			e.stop()
		}
		e = &jobsCluster{key: key, cluster: run.Cluster}
		j.caches[key] = e
	}
	if run.Problem != nil {
		return View{Problem: fmt.Sprintf("cluster %s %v", key, run.Problem)}
	}
	if !run.Answered {
		// Not listed yet: the first answer tells the users. The cache is built only then,
		// since its discovery (under j.mu) has no timeout of its own.
		return View{}
	}
	if e.cache == nil || !slices.Equal(e.namespaces, namespaces) {
		if err := j.startCache(ctx, run.Ctx, e, namespaces); err != nil {
			// The cluster went away since its last probe (discovery failed): it counts as
			// unreachable until a probe answers, which tells the users to try again.
			j.clusters.Unreachable(key, fmt.Errorf("unreachable: %w", err))
			return View{Problem: err.Error()}
		}
	}
	return View{Client: run.Cluster.GetClient(), Jobs: e.cache}
}

// startCache (re)builds e's job cache over namespaces and starts it, until clusterCtx ends;
// j.mu is held.
func (j *Jobs) startCache(ctx, clusterCtx context.Context, e *jobsCluster, namespaces []string) error {
	if e.stopCache != nil {
		e.stopCache()
		e.cache, e.stopCache = nil, nil
	}
	c, err := jobcache.New(e.cluster, jobcache.Options{Namespaces: namespaces, Selector: j.selector})
	if err != nil {
		return fmt.Errorf("cluster %s: %w", e.key, err)
	}
	cacheCtx, stop := context.WithCancel(clusterCtx)
	for _, h := range j.sources {
		if err := c.Source(h.changed).Start(cacheCtx, h.queue); err != nil {
			stop()
			return err
		}
	}
	e.cache, e.stopCache, e.namespaces = c, stop, namespaces
	go func() { _ = c.Start(cacheCtx) }()
	go j.notifyWhenSynced(cacheCtx, e.key, c)
	ctrl.LoggerFrom(ctx).Info("watching jobs", "cluster", e.key.String(), "namespaces", namespaces)
	return nil
}

// notifyWhenSynced enqueues the users of the cluster once its cache has listed its jobs:
// until then their reconciles wait, and nothing else would call them back.
func (j *Jobs) notifyWhenSynced(ctx context.Context, key Key, c *jobcache.Cache) {
	if !toolscache.WaitForCacheSync(ctx.Done(), c.HasSynced) {
		return
	}
	j.notify(key)
}

// SecretChanged tells the users of the cluster whose kubeconfig Secret is namespace/name that
// it changed (or appeared, or went): their next Use reads it again.
func (j *Jobs) SecretChanged(namespace, name string) {
	j.notify(Key{Namespace: namespace, Secret: name})
}

// notify enqueues every user of the cluster.
func (j *Jobs) notify(key Key) {
	j.mu.Lock()
	type call struct {
		enqueue func(types.NamespacedName)
		obj     types.NamespacedName
	}
	var calls []call
	for u, clusters := range j.uses {
		if _, ok := clusters[key]; ok && j.kinds[u.kind] != nil {
			calls = append(calls, call{j.kinds[u.kind], u.NamespacedName})
		}
	}
	j.mu.Unlock()
	for _, c := range calls {
		c.enqueue(c.obj)
	}
}

func (e *jobsCluster) stop() {
	if e.stopCache != nil {
		e.stopCache()
	}
}

// Running lists the clusters in use, for tests and metrics.
func (j *Jobs) Running() []Key {
	j.mu.Lock()
	defer j.mu.Unlock()
	return slices.SortedFunc(maps.Keys(j.caches), func(a, b Key) int {
		if a.String() < b.String() {
			return -1
		}
		if a.String() > b.String() {
			return 1
		}
		return 0
	})
}
