// Package jobrunner plays kubelet and the Kubernetes job controller (and Prow) for the embedded
// local environment, which has an API server but nothing that runs pods. It runs the first
// container of batch/v1 Jobs and Prow ProwJobs as local processes — images are not pulled —
// keeps their output in log files, and writes their status as those controllers would.
//
// All state lives in the API objects: an unfinished object is (re)run from scratch when the
// runner starts, as a pod would be restarted, and a finished one is never run again.
package jobrunner

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"sync"
	"time"

	batchv1 "k8s.io/api/batch/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/util/retry"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/event"
	"sigs.k8s.io/controller-runtime/pkg/handler"
	"sigs.k8s.io/controller-runtime/pkg/manager"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"
	"sigs.k8s.io/controller-runtime/pkg/source"

	prowv1 "github.com/release-controller/release-controller/api/prow/v1"
)

// DefaultMaxParallel is how many processes run at once when Options.MaxParallel is zero.
const DefaultMaxParallel = 4

// Options configure a Runner.
type Options struct {
	// Executable replaces a container command named release-controller; empty uses the
	// running binary.
	Executable string
	// LogDir holds the processes' output, one file per object: <LogDir>/<namespace>/<name>.log.
	LogDir string
	// Env is added to every process's environment (after the runner's PATH and HOME, before
	// the container's own env), e.g. KUBECONFIG=... or a PATH holding the tools jobs call.
	Env []string
	// MaxParallel is how many processes run at once; further ones wait their turn. Creation
	// jobs (payload builds) have as many slots of their own, so that verifications that wait
	// (for a gate, a long test) never hold back the builds that start other payloads.
	MaxParallel int
	// LogURL, when set, gives the URL written as a ProwJob's status.url.
	LogURL func(kind, namespace, name string) string
	// ServiceAccountAPIServer, when set, makes the runner give pods their service account's
	// credentials as a kubelet mounts its token: a pod that names a serviceAccountName (and
	// does not set automountServiceAccountToken to false) runs with KUBECONFIG pointing at a
	// kubeconfig for this API server (its Host and CA; no client certificate or token of
	// its own is used) whose credential is a token of that service account, requested with
	// the TokenRequest API for every run. The runner's client must be allowed to create
	// serviceaccounts/token. Other pods get Env as it is.
	ServiceAccountAPIServer *rest.Config
}

// ServiceAccountTokenTTL is how long the tokens given to pods are valid (the TokenRequest API's
// shortest is 10 minutes); a run that lasts longer would need a kubelet's refresh.
const ServiceAccountTokenTTL = time.Hour

// Kinds as passed to Options.LogURL.
const (
	KindJob     = "Job"
	KindProwJob = "ProwJob"
)

// Why a process is stopped before it ends by itself; the cause decides what status is written.
var (
	errShutdown  = errors.New("the job runner is shutting down")
	errDeleted   = errors.New("the object was deleted")
	errFinished  = errors.New("the object was finished by someone else")
	errSuspended = errors.New("the job was suspended")
	errDeadline  = errors.New("the job was active longer than its activeDeadlineSeconds")
)

// Runner runs Jobs and ProwJobs as local processes. Create it with New and add it to a
// manager with SetupWithManager.
type Runner struct {
	opts   Options
	client client.Client
	// reader reads from the API server, not the cache: a run starts only after the API
	// server confirmed the object is unfinished, since the cache can lag behind our own writes.
	reader client.Reader
	slots  chan struct{}
	// buildSlots are the creation jobs' slots.
	buildSlots chan struct{}

	// root is cancelled on shutdown; every run's context derives from it.
	root context.Context
	stop context.CancelCauseFunc

	mu   sync.Mutex
	runs map[runKey]*run
	wg   sync.WaitGroup

	// jobEvents and prowJobEvents reconcile an object again when its run ended.
	jobEvents     chan event.GenericEvent
	prowJobEvents chan event.GenericEvent
}

type runKey struct {
	kind string
	types.NamespacedName
}

// run is a process (with its retries) in progress for one object.
type run struct {
	uid    types.UID
	cancel context.CancelCauseFunc
}

// New checks opts and fills in the defaults.
func New(opts Options) (*Runner, error) {
	if opts.LogDir == "" {
		return nil, errors.New("jobrunner: Options.LogDir is required")
	}
	if opts.Executable == "" {
		exe, err := os.Executable()
		if err != nil {
			return nil, fmt.Errorf("jobrunner: finding the running executable: %w", err)
		}
		opts.Executable = exe
	}
	// Processes run in a temporary directory: a relative path would not be found from there.
	exe, err := filepath.Abs(opts.Executable)
	if err != nil {
		return nil, fmt.Errorf("jobrunner: %w", err)
	}
	opts.Executable = exe
	if opts.MaxParallel <= 0 {
		opts.MaxParallel = DefaultMaxParallel
	}
	root, stop := context.WithCancelCause(context.Background())
	return &Runner{
		opts:          opts,
		slots:         make(chan struct{}, opts.MaxParallel),
		buildSlots:    make(chan struct{}, opts.MaxParallel),
		root:          root,
		stop:          stop,
		runs:          map[runKey]*run{},
		jobEvents:     make(chan event.GenericEvent),
		prowJobEvents: make(chan event.GenericEvent),
	}, nil
}

// LogPath is the file holding the output of the Job or ProwJob namespace/name.
func (r *Runner) LogPath(namespace, name string) string {
	return filepath.Join(r.opts.LogDir, namespace, name+".log")
}

// SetupWithManager adds the Job controller, the ProwJob controller when the cluster serves
// prow.k8s.io/v1, and the shutdown hook that kills the processes when the manager stops.
// mgr's scheme must hold batch/v1 and prow.k8s.io/v1 (manager.NewScheme does).
func (r *Runner) SetupWithManager(mgr ctrl.Manager) error {
	r.client = mgr.GetClient()
	r.reader = mgr.GetAPIReader()
	log := mgr.GetLogger().WithName("jobrunner")

	// Processes are left unfinished on shutdown: the next runner starts them again.
	if err := mgr.Add(manager.RunnableFunc(func(ctx context.Context) error {
		<-ctx.Done()
		r.mu.Lock()
		r.stop(errShutdown)
		r.mu.Unlock()
		r.wg.Wait()
		return nil
	})); err != nil {
		return err
	}

	if err := ctrl.NewControllerManagedBy(mgr).
		Named("jobrunner-job").
		For(&batchv1.Job{}).
		WatchesRawSource(source.Channel(r.jobEvents, &handler.EnqueueRequestForObject{})).
		Complete(reconcile.Func(r.reconcileJob)); err != nil {
		return fmt.Errorf("setting up the job runner for Jobs: %w", err)
	}

	_, err := mgr.GetRESTMapper().RESTMapping(schema.GroupKind{Group: prowv1.SchemeGroupVersion.Group, Kind: KindProwJob}, prowv1.SchemeGroupVersion.Version)
	switch {
	case meta.IsNoMatchError(err):
		log.Info("prow.k8s.io/v1 ProwJob is not served; ProwJobs are not run")
		return nil
	case err != nil:
		return fmt.Errorf("looking up the ProwJob kind: %w", err)
	}
	if err := ctrl.NewControllerManagedBy(mgr).
		Named("jobrunner-prowjob").
		For(&prowv1.ProwJob{}).
		WatchesRawSource(source.Channel(r.prowJobEvents, &handler.EnqueueRequestForObject{})).
		Complete(reconcile.Func(r.reconcileProwJob)); err != nil {
		return fmt.Errorf("setting up the job runner for ProwJobs: %w", err)
	}
	return nil
}

// stopRun stops the run of key, if any: with cause when it runs obj (uid), with errDeleted
// when it runs an older object of the same name. It reports whether a run was found; a cause
// of nil leaves a run of the same object going.
func (r *Runner) stopRun(key runKey, uid types.UID, cause error) bool {
	r.mu.Lock()
	defer r.mu.Unlock()
	cur, ok := r.runs[key]
	switch {
	case !ok:
		return false
	case cur.uid != uid:
		cur.cancel(errDeleted)
	case cause != nil:
		cur.cancel(cause)
	}
	return true
}

// launch starts body in its own goroutine as the run of key, logging with reqCtx's logger.
// When body returns, the run is forgotten and the object reconciled again through events, so
// that whatever changed meanwhile (a new object of the same name, a failed status write) is
// handled.
func (r *Runner) launch(reqCtx context.Context, key runKey, uid types.UID, events chan<- event.GenericEvent, obj client.Object, body func(ctx context.Context)) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.root.Err() != nil {
		return
	}
	ctx, cancel := context.WithCancelCause(ctrl.LoggerInto(r.root, ctrl.LoggerFrom(reqCtx)))
	cur := &run{uid: uid, cancel: cancel}
	r.runs[key] = cur
	r.wg.Add(1)
	go func() {
		defer r.wg.Done()
		body(ctx)
		cancel(nil)
		r.mu.Lock()
		if r.runs[key] == cur {
			delete(r.runs, key)
		}
		r.mu.Unlock()
		select {
		case events <- event.GenericEvent{Object: obj}:
		case <-r.root.Done():
		}
	}()
}

// acquire waits for a free slot of slots; it fails when ctx ends first.
func acquire(ctx context.Context, slots chan struct{}) error {
	select {
	case slots <- struct{}{}:
		return nil
	case <-ctx.Done():
		return context.Cause(ctx)
	}
}

// writeStatus applies change to obj and patches obj's status; change reports false when there
// is nothing to write. The optimistic lock makes a write based on an outdated object fail: obj
// is then read again from the API server and change applied to it again.
func (r *Runner) writeStatus(ctx context.Context, obj client.Object, change func() bool) error {
	first := true
	return retry.RetryOnConflict(retry.DefaultRetry, func() error {
		if !first {
			if err := r.reader.Get(ctx, client.ObjectKeyFromObject(obj), obj); err != nil {
				return err
			}
		}
		first = false
		base := obj.DeepCopyObject().(client.Object)
		if !change() {
			return nil
		}
		return r.client.Status().Patch(ctx, obj, client.MergeFromWithOptions(base, client.MergeFromWithOptimisticLock{}))
	})
}

// note appends a line from the runner itself to an object's log, so the log tells why a run
// ended the way it did.
func (r *Runner) note(ctx context.Context, path, message string) {
	if err := appendLog(path, runnerNotePrefix+" "+message+"\n"); err != nil {
		ctrl.LoggerFrom(ctx).Error(err, "writing the log", "path", path)
	}
}

func (r *Runner) logURL(kind, namespace, name string) string {
	if r.opts.LogURL == nil {
		return ""
	}
	return r.opts.LogURL(kind, namespace, name)
}
