package clusters

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	"k8s.io/client-go/rest"
	"k8s.io/client-go/util/workqueue"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/cluster"
)

// DefaultHealthInterval spaces the probes of a cluster in use that answers.
const DefaultHealthInterval = 15 * time.Second

// Manager is the lifecycle of the clusters a controller uses, the one the verification jobs
// (Jobs) and the pipelines (internal/pipeline) share: a cluster.Cluster (client and cache) is
// built from its kubeconfig Secret when a user first needs it (Ensure), rebuilt when the
// Secret changes, probed while it runs (every HealthInterval while it answers, with
// exponential backoff from a second to a minute while it does not), and stopped when its
// owner says nobody needs it any more (Stop) or when the Manager stops. What an owner runs on
// a cluster (informers, a job cache) is its own; it sees that a cluster was rebuilt by the
// Running's Cluster changing. The Manager's lock is taken inside its methods only, and
// changed is called without it, so an owner may call it under its own lock.
type Manager struct {
	// local is the controller's own cluster (Key{}); nil when it is not one of the Manager's.
	local *rest.Config
	// secretMeta reads Secrets' metadata (a metadata cache: a Secret's change is seen without
	// reading it), secrets their data (the API server: Secrets are not cached).
	secretMeta, secrets client.Reader
	// changed is called with a cluster whose reachability changed, or that answered for the
	// first time.
	changed func(Key)
	// NewCluster builds a cluster from a config, Probe asks a cluster whether it answers; tests
	// may replace them before Start.
	NewCluster func(*rest.Config) (cluster.Cluster, error)
	Probe      func(context.Context, *rest.Config) error
	backoff    workqueue.TypedRateLimiter[Key]
	// HealthInterval spaces the probes of a cluster that answers; set it before Start.
	HealthInterval time.Duration
	// InsecureKubeconfigExec lets the kubeconfigs run plugins and name files (see
	// CheckKubeconfig); set it before Start.
	InsecureKubeconfigExec bool

	// started is closed once Start has run.
	started chan struct{}

	mu      sync.Mutex
	ctx     context.Context // Start's
	running map[Key]*entry
}

type entry struct {
	Running
	config        *rest.Config
	secretVersion string
	cancel        context.CancelFunc
}

// Running is a cluster the Manager runs, as Ensure found it.
type Running struct {
	Cluster cluster.Cluster
	// Ctx ends when the cluster stops: what runs on it stops with it.
	Ctx context.Context
	// Problem is why the last probe got no answer (nil: it answered, or none has ended yet).
	Problem error
	// Answered is set once a probe got an answer.
	Answered bool
}

// NewManager returns a Manager. local is the controller's own cluster, served as Key{} (nil:
// only kubeconfig Secrets); secretMeta and secrets read the Secrets (see Manager); changed is
// called with a cluster whose reachability changed or that answered for the first time.
func NewManager(local *rest.Config, secretMeta, secrets client.Reader, changed func(Key)) *Manager {
	return &Manager{
		local: local, secretMeta: secretMeta, secrets: secrets, changed: changed,
		NewCluster:     New,
		Probe:          Probe,
		backoff:        workqueue.NewTypedItemExponentialFailureRateLimiter[Key](time.Second, time.Minute),
		HealthInterval: DefaultHealthInterval,
		started:        make(chan struct{}),
		running:        map[Key]*entry{},
	}
}

// Start runs until ctx ends, then stops every cluster. Its owner runs it as part of its own
// manager Runnable.
func (m *Manager) Start(ctx context.Context) error {
	m.mu.Lock()
	m.ctx = ctx
	m.mu.Unlock()
	close(m.started)
	<-ctx.Done()
	m.mu.Lock()
	defer m.mu.Unlock()
	for k, e := range m.running {
		e.cancel()
		delete(m.running, k)
	}
	return nil
}

// ErrNotStarted is Ensure's error before Start.
var ErrNotStarted = errors.New("the clusters manager is not started")

// Started is closed once Start has run.
func (m *Manager) Started() <-chan struct{} { return m.started }

// Ensure returns the running cluster of key, building it when there is none or its
// kubeconfig Secret changed (the old one stops, and all that ran on it). secrets, when not
// nil, reads the Secret's data instead of the Manager's reader (a tenant's client, whose
// refusal is the error). Its error says why the Secret gives no cluster; a cluster that does
// not answer is no error (Running.Problem says so).
func (m *Manager) Ensure(ctx context.Context, key Key, secrets client.Reader) (Running, error) {
	select {
	case <-m.started:
	default:
		return Running{}, ErrNotStarted
	}
	m.mu.Lock()
	e := m.running[key]
	m.mu.Unlock()
	var cfg *rest.Config
	version := ""
	if key.IsLocal() {
		if e != nil {
			return m.snapshot(e), nil
		}
		if m.local == nil {
			return Running{}, errors.New("no local cluster")
		}
		cfg = rest.CopyConfig(m.local)
	} else {
		seen, err := SecretVersion(ctx, m.secretMeta, key)
		if err == nil && e != nil && e.secretVersion == seen {
			return m.snapshot(e), nil
		}
		if e != nil {
			// Rebuilt below, or gone: the old cluster stops.
			m.Stop(ctx, key)
		}
		if err != nil {
			return Running{}, err
		}
		if secrets == nil {
			secrets = m.secrets
		}
		if cfg, version, err = RESTConfig(ctx, secrets, key, m.InsecureKubeconfigExec); err != nil {
			return Running{}, err
		}
	}
	cl, clusterCtx, cancel, err := Run(ctx, m.ctx, key, cfg, m.NewCluster)
	if err != nil {
		return Running{}, err
	}
	e = &entry{Running: Running{Cluster: cl, Ctx: clusterCtx}, config: cfg, secretVersion: version, cancel: cancel}
	m.mu.Lock()
	if old := m.running[key]; old != nil {
		old.cancel() // built meanwhile by another caller: the newest wins
	}
	m.running[key] = e
	m.mu.Unlock()
	go m.watchHealth(clusterCtx, key, e)
	ctrl.LoggerFrom(ctx).Info("watching cluster", "cluster", key.String())
	return m.snapshot(e), nil
}

func (m *Manager) snapshot(e *entry) Running {
	m.mu.Lock()
	defer m.mu.Unlock()
	return e.Running
}

// Unreachable marks key's cluster as not answering (a discovery that failed since its last
// probe): so it counts until a probe answers, which calls changed.
func (m *Manager) Unreachable(key Key, err error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if e := m.running[key]; e != nil {
		e.Problem = err
	}
}

// Stop stops key's cluster, and all that runs on it, when it runs.
func (m *Manager) Stop(ctx context.Context, key Key) {
	m.mu.Lock()
	e := m.running[key]
	delete(m.running, key)
	m.mu.Unlock()
	if e == nil {
		return
	}
	e.cancel()
	m.backoff.Forget(key)
	ctrl.LoggerFrom(ctx).Info("stopped watching cluster", "cluster", key.String())
}

// watchHealth probes e's cluster until its context ends (WatchHealth), and calls changed when
// its reachability changes or it first answers.
func (m *Manager) watchHealth(ctx context.Context, key Key, e *entry) {
	set := func(err error) bool {
		m.mu.Lock()
		defer m.mu.Unlock()
		was, first := e.Problem, err == nil && !e.Answered
		if err != nil {
			e.Problem = fmt.Errorf("unreachable: %w", err)
		} else {
			e.Problem, e.Answered = nil, true
		}
		return first || (was == nil) != (e.Problem == nil)
	}
	WatchHealth(ctx, Health{Key: key, Config: e.config, Probe: m.Probe, Backoff: m.backoff, Interval: m.HealthInterval}, set, func() { m.changed(key) })
}
