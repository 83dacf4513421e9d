// Package jobcache keeps the controllers' Jobs and ProwJobs as small records, indexed by
// payload and by stream, read by the payload and stream controllers.
package jobcache

import (
	"context"
	"fmt"
	"slices"
	"time"
	"unique"

	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/runtime/serializer"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/rest"
	toolscache "k8s.io/client-go/tools/cache"
	"k8s.io/client-go/util/workqueue"
	"sigs.k8s.io/controller-runtime/pkg/client/apiutil"
	"sigs.k8s.io/controller-runtime/pkg/cluster"
	"sigs.k8s.io/controller-runtime/pkg/manager"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"
	"sigs.k8s.io/controller-runtime/pkg/source"

	prowv1 "github.com/release-controller/release-controller/api/prow/v1"
	"github.com/release-controller/release-controller/api/v1alpha1"
	"github.com/release-controller/release-controller/internal/conditions"
	"github.com/release-controller/release-controller/internal/jobcontract"
)

// The payload and stream controllers read a payload's jobs on every change of any of them, and
// a payload in flight has a dozen. A cached batch/v1 Job is over 2 KB even without its pod
// template (its metadata with label and annotation maps, and the Job's spec and status
// structs), of which the controllers read a dozen fields. So they keep a Record of each of
// their Jobs and ProwJobs instead, in an informer of their own that turns every object into its
// record as it arrives: the whole object is never stored. Records are a few hundred bytes, and
// their repeated strings (namespace, payload, stream, verification, message) are shared.

// Index names of the Cache.
const (
	// IndexPayloadKey indexes records by the PayloadKey of the payload they belong to.
	IndexPayloadKey = "release-controller.dev/payload-key"
	// IndexStreamKey indexes records by "<payload namespace>/<stream>".
	IndexStreamKey = "release-controller.dev/stream-key"
	// IndexPipelineKey indexes the runs of pipelines' verifications by the PipelineKey of
	// their pipeline.
	IndexPipelineKey = "release-controller.dev/pipeline-key"
)

// Record is what the controllers keep of one of their Jobs or ProwJobs: where it is, whose
// it is, and its outcome as the Job or ProwJob shows it. Records in a Cache are
// shared: read them, never change them.
type Record struct {
	Kind            v1alpha1.RunKind
	Namespace, Name string
	ResourceVersion string
	// PayloadKey is the PayloadKey of the job's payload; StreamKey is "<payload
	// namespace>/<stream>", empty without a stream label.
	PayloadKey, StreamKey string
	// JobType and Verification are the job-type and verify labels.
	JobType, Verification string
	// Attempt, UpgradeFrom and URL come from the annotations (URL from a ProwJob's status first).
	Attempt          int32
	UpgradeFrom, URL string
	// PipelineKey, Environment and Revision are set on the run of a pipeline's verification
	// (jobcontract.PipelineRun): its pipeline's PipelineKey, the environment and the revision
	// verified. Such a run has no PayloadKey.
	PipelineKey, Environment, Revision string
	// State and Message are the job's outcome.
	State   v1alpha1.JobState
	Message string
	// Created, Started and Completed are when the job was created, started and finished, in
	// Unix nanoseconds (a third of a metav1.Time's size); zero is unset.
	Created, Started, Completed int64
}

// RecordOfJob reads a Job's record.
func RecordOfJob(job *batchv1.Job) *Record {
	state, message, completed := JobOutcome(job)
	r := &Record{
		Kind: v1alpha1.RunKindJob, Name: job.Name, ResourceVersion: job.ResourceVersion,
		URL:   job.Annotations[v1alpha1.AnnotationURL],
		State: state, Message: intern(conditions.Truncate(message, conditions.MaxErrorLength)),
		Created: nanos(&job.CreationTimestamp), Started: nanos(job.Status.StartTime), Completed: nanos(completed),
	}
	r.setOwner(job)
	return r
}

// RecordOfProwJob reads a ProwJob's record.
func RecordOfProwJob(pj *prowv1.ProwJob) *Record {
	url := pj.Status.URL
	if url == "" {
		url = pj.Annotations[v1alpha1.AnnotationURL]
	}
	r := &Record{
		Kind: v1alpha1.RunKindProwJob, Name: pj.Name, ResourceVersion: pj.ResourceVersion,
		URL:   url,
		State: prowJobState(pj.Status.State), Message: intern(conditions.Truncate(pj.Status.Description, conditions.MaxErrorLength)),
		Created: nanos(&pj.CreationTimestamp), Started: nanos(&pj.Status.StartTime), Completed: nanos(pj.Status.CompletionTime),
	}
	r.setOwner(pj)
	return r
}

// setOwner fills in what the labels and annotations say (the job contract).
func (r *Record) setOwner(obj metav1.Object) {
	r.Namespace = intern(obj.GetNamespace())
	if run, ok := jobcontract.ParsePipelineRun(obj); ok {
		r.PipelineKey, r.Environment, r.Revision = intern(run.Key()), intern(run.Environment), intern(run.Revision)
		r.JobType, r.Verification, r.Attempt = v1alpha1.JobTypeVerification, intern(run.Verification), run.Attempt
		return
	}
	j, ok := jobcontract.Parse(obj)
	if !ok {
		return
	}
	r.PayloadKey = intern(j.PayloadKey())
	r.StreamKey = intern(j.StreamKey())
	r.JobType = intern(j.Type)
	r.Verification = intern(j.Verification)
	r.Attempt = j.Attempt
	r.UpgradeFrom = intern(j.UpgradeFrom)
}

// IsRun reports whether the record is of a verification run.
func (r *Record) IsRun() bool {
	return r.JobType == v1alpha1.JobTypeVerification && r.Verification != ""
}

// Run is the verification run (of verification r.Verification) the record shows; ok is false
// for records of other jobs. A run that succeeded carries no message (a Job's is "Reached
// expected number of succeeded pods"): the payload's status holds every run, and each status
// write costs the API server in proportion to its size.
func (r *Record) Run() (run v1alpha1.JobRun, ok bool) {
	if !r.IsRun() {
		return v1alpha1.JobRun{}, false
	}
	message := r.Message
	if r.State == v1alpha1.JobSuccess {
		message = ""
	}
	return v1alpha1.JobRun{
		Kind:           r.Kind,
		Namespace:      r.Namespace,
		Name:           r.Name,
		Attempt:        r.Attempt,
		State:          r.State,
		UpgradeFrom:    r.UpgradeFrom,
		URL:            r.URL,
		Message:        message,
		StartTime:      metaTime(r.Started),
		CompletionTime: metaTime(r.Completed),
	}, true
}

// FinishedAt is when the job finished; zero while it runs.
func (r *Record) FinishedAt() time.Time {
	if !r.State.IsTerminal() || r.Completed == 0 {
		return time.Time{}
	}
	return time.Unix(0, r.Completed)
}

// CreationJob rebuilds the parts of the record's Job that CreationResult reads: its name,
// creation time and terminal condition.
func (r *Record) CreationJob() batchv1.Job {
	job := batchv1.Job{ObjectMeta: metav1.ObjectMeta{Namespace: r.Namespace, Name: r.Name}}
	if created := metaTime(r.Created); created != nil {
		job.CreationTimestamp = *created
	}
	condition := batchv1.JobCondition{Status: corev1.ConditionTrue, Message: r.Message}
	if completed := metaTime(r.Completed); completed != nil {
		condition.LastTransitionTime = *completed
	}
	switch r.State {
	case v1alpha1.JobSuccess:
		condition.Type = batchv1.JobComplete
		job.Status.CompletionTime = metaTime(r.Completed)
	case v1alpha1.JobFailure:
		condition.Type = batchv1.JobFailed
	default:
		return job
	}
	job.Status.Conditions = []batchv1.JobCondition{condition}
	return job
}

// sameAs reports whether two records of one object differ only in their resource version:
// a change nobody here reads (e.g. a Job's count of ready pods).
func (r *Record) sameAs(o *Record) bool {
	a, b := *r, *o
	a.ResourceVersion, b.ResourceVersion = "", ""
	return a == b
}

// GetObjectMeta lets client-go's informer key records and tell their versions (meta.Accessor).
func (r *Record) GetObjectMeta() metav1.Object {
	return &metav1.ObjectMeta{Namespace: r.Namespace, Name: r.Name, ResourceVersion: r.ResourceVersion}
}

var _ metav1.ObjectMetaAccessor = &Record{}

// toRecord is the informers' transform. Records pass unchanged: client-go may transform an
// object twice.
func toRecord(obj any) (any, error) {
	switch o := obj.(type) {
	case *batchv1.Job:
		return RecordOfJob(o), nil
	case *prowv1.ProwJob:
		return RecordOfProwJob(o), nil
	case *Record:
		return o, nil
	}
	return nil, fmt.Errorf("job cache: unexpected %T", obj)
}

func intern(s string) string {
	if s == "" {
		return ""
	}
	return unique.Make(s).Value()
}

// nanos is t in Unix nanoseconds; zero for an unset time.
func nanos(t *metav1.Time) int64 {
	if t == nil || t.IsZero() {
		return 0
	}
	return t.UnixNano()
}

// metaTime is the time of Unix nanoseconds n; nil for zero.
func metaTime(n int64) *metav1.Time {
	if n == 0 {
		return nil
	}
	t := metav1.NewTime(time.Unix(0, n))
	return &t
}

// Cache holds the controllers' Jobs, and ProwJobs when the cluster serves them, as
// Records indexed by payload and by stream. It is a manager.Runnable: add it to the manager,
// which runs it with the controllers (on the leader only).
//
// A cache restricted to some namespaces runs one informer per kind and namespace, as
// controller-runtime's cache does. ProwJobs may live outside the payloads' namespaces (a
// verification's prowJob.namespace, Prow's namespace): Options.ProwJobNamespaces adds
// those, and Watches tells the stream controller whether a ProwJob it is about to create would
// be seen.
type Cache struct {
	informers []toolscache.SharedIndexInformer
	// namespaces are the namespaces each kind is cached in; nil: every namespace.
	namespaces map[v1alpha1.RunKind][]string
}

// Options select what a Cache holds.
type Options struct {
	// Namespaces restricts the cache to these namespaces; empty: every namespace.
	Namespaces []string
	// ProwJobNamespaces are more namespaces whose ProwJobs are cached, where verifications
	// create ProwJobs outside Namespaces. Unused when Namespaces is empty.
	ProwJobNamespaces []string
	// Selector selects the controllers' jobs by label; nil: every job.
	Selector labels.Selector
	// ProwJobs caches prow.k8s.io/v1 ProwJobs too.
	ProwJobs bool
}

// New builds a Cache that reads through mgr's configuration, HTTP client and REST mapper: a
// manager's (the controller's own cluster), or a remote cluster's (internal/clusters).
func New(mgr cluster.Cluster, opts Options) (*Cache, error) {
	type kind struct {
		run        v1alpha1.RunKind
		gvk        schema.GroupVersionKind
		example    runtime.Object
		namespaces []string
	}
	kinds := []kind{{v1alpha1.RunKindJob, batchv1.SchemeGroupVersion.WithKind("Job"), &batchv1.Job{}, namespaceSet(opts.Namespaces)}}
	if opts.ProwJobs {
		var namespaces []string
		if len(opts.Namespaces) > 0 {
			namespaces = namespaceSet(append(slices.Clone(opts.Namespaces), opts.ProwJobNamespaces...))
		}
		kinds = append(kinds, kind{v1alpha1.RunKindProwJob, prowv1.SchemeGroupVersion.WithKind("ProwJob"), &prowv1.ProwJob{}, namespaces})
	}
	c := &Cache{namespaces: map[v1alpha1.RunKind][]string{}}
	for _, k := range kinds {
		c.namespaces[k.run] = k.namespaces
		informerNamespaces := k.namespaces
		if len(informerNamespaces) == 0 {
			informerNamespaces = []string{metav1.NamespaceAll}
		}
		for _, namespace := range informerNamespaces {
			lw, err := listWatch(mgr, k.gvk, namespace, opts.Selector)
			if err != nil {
				return nil, err
			}
			description := k.gvk.Kind + " records"
			if namespace != metav1.NamespaceAll {
				description += " in " + namespace
			}
			informer := toolscache.NewSharedIndexInformerWithOptions(lw, k.example, toolscache.SharedIndexInformerOptions{
				Indexers: toolscache.Indexers{
					IndexPayloadKey: func(obj any) ([]string, error) {
						return recordKey(obj, func(r *Record) string { return r.PayloadKey })
					},
					IndexStreamKey: func(obj any) ([]string, error) {
						return recordKey(obj, func(r *Record) string { return r.StreamKey })
					},
					IndexPipelineKey: func(obj any) ([]string, error) {
						return recordKey(obj, func(r *Record) string { return r.PipelineKey })
					},
				},
				ObjectDescription: description,
			})
			if err := informer.SetTransform(toRecord); err != nil {
				return nil, err
			}
			c.informers = append(c.informers, informer)
		}
	}
	return c, nil
}

// Watches reports whether the cache sees objects of kind created in namespace.
func (c *Cache) Watches(kind v1alpha1.RunKind, namespace string) bool {
	namespaces, ok := c.namespaces[kind]
	return ok && (len(namespaces) == 0 || slices.Contains(namespaces, namespace))
}

// namespaceSet is namespaces sorted, without duplicates and empty names; nil for none.
func namespaceSet(namespaces []string) []string {
	var set []string
	for _, n := range namespaces {
		if n != "" && !slices.Contains(set, n) {
			set = append(set, n)
		}
	}
	slices.Sort(set)
	return set
}

func recordKey(obj any, key func(*Record) string) ([]string, error) {
	r, ok := obj.(*Record)
	if !ok {
		return nil, fmt.Errorf("job cache: unexpected %T", obj)
	}
	if k := key(r); k != "" {
		return []string{k}, nil
	}
	return nil, nil
}

// listWatch lists and watches gvk's objects in namespace (all: metav1.NamespaceAll) that
// selector selects, as controller-runtime's cache does.
func listWatch(mgr cluster.Cluster, gvk schema.GroupVersionKind, namespace string, selector labels.Selector) (*toolscache.ListWatch, error) {
	mapping, err := mgr.GetRESTMapper().RESTMapping(gvk.GroupKind(), gvk.Version)
	if err != nil {
		return nil, fmt.Errorf("job cache: %w", err)
	}
	scheme := mgr.GetScheme()
	restClient, err := apiutil.RESTClientForGVK(gvk, false, false, mgr.GetConfig(), serializer.NewCodecFactory(scheme), mgr.GetHTTPClient())
	if err != nil {
		return nil, fmt.Errorf("job cache: %w", err)
	}
	listObj, err := scheme.New(gvk.GroupVersion().WithKind(gvk.Kind + "List"))
	if err != nil {
		return nil, fmt.Errorf("job cache: %w", err)
	}
	paramCodec := runtime.NewParameterCodec(scheme)
	request := func(o *metav1.ListOptions) *rest.Request {
		if selector != nil {
			o.LabelSelector = selector.String()
		}
		req := restClient.Get().Resource(mapping.Resource.Resource).VersionedParams(o, paramCodec)
		if namespace != metav1.NamespaceAll {
			req = req.Namespace(namespace)
		}
		return req
	}
	return &toolscache.ListWatch{
		ListWithContextFunc: func(ctx context.Context, o metav1.ListOptions) (runtime.Object, error) {
			list := listObj.DeepCopyObject()
			if err := request(&o).Do(ctx).Into(list); err != nil {
				return nil, err
			}
			return list, nil
		},
		WatchFuncWithContext: func(ctx context.Context, o metav1.ListOptions) (watch.Interface, error) {
			o.Watch = true
			o.AllowWatchBookmarks = true
			return request(&o).Watch(ctx)
		},
	}, nil
}

// Start runs the informers until ctx ends.
func (c *Cache) Start(ctx context.Context) error {
	done := make(chan struct{})
	for _, informer := range c.informers {
		go func() {
			defer func() { done <- struct{}{} }()
			informer.RunWithContext(ctx)
		}()
	}
	for range c.informers {
		<-done
	}
	return nil
}

var _ manager.Runnable = &Cache{}

// HasSynced reports whether every informer has listed its objects.
func (c *Cache) HasSynced() bool {
	for _, informer := range c.informers {
		if !informer.HasSynced() {
			return false
		}
	}
	return true
}

// waitForSync waits until the cache has listed its objects, as controller-runtime's cache
// does on a read before its informer synced.
func (c *Cache) waitForSync(ctx context.Context) error {
	if c.HasSynced() {
		return nil
	}
	if !toolscache.WaitForCacheSync(ctx.Done(), c.HasSynced) {
		return fmt.Errorf("job cache did not sync: %w", context.Cause(ctx))
	}
	return nil
}

// ByPayload returns the records of the jobs of the payload namespace/tag.
func (c *Cache) ByPayload(ctx context.Context, namespace, tag string) ([]*Record, error) {
	return c.byIndex(ctx, IndexPayloadKey, jobcontract.PayloadKey(namespace, tag))
}

// ByStream returns the records of the jobs of the payloads of the stream namespace/name.
func (c *Cache) ByStream(ctx context.Context, namespace, stream string) ([]*Record, error) {
	return c.byIndex(ctx, IndexStreamKey, namespace+"/"+stream)
}

// ByPipeline returns the records of the runs of the pipeline namespace/name's verifications.
func (c *Cache) ByPipeline(ctx context.Context, namespace, name string) ([]*Record, error) {
	return c.byIndex(ctx, IndexPipelineKey, jobcontract.PipelineKey(namespace, name))
}

func (c *Cache) byIndex(ctx context.Context, index, key string) ([]*Record, error) {
	if err := c.waitForSync(ctx); err != nil {
		return nil, err
	}
	var records []*Record
	for _, informer := range c.informers {
		objs, err := informer.GetIndexer().ByIndex(index, key)
		if err != nil {
			return nil, err
		}
		for _, obj := range objs {
			if r, ok := obj.(*Record); ok {
				records = append(records, r)
			}
		}
	}
	return records, nil
}

// Source is a controller source that calls changed with every record added, deleted or
// changed in a way a record shows. The controller waits for the cache to sync before it
// reconciles.
func (c *Cache) Source(changed func(*Record, workqueue.TypedRateLimitingInterface[reconcile.Request])) source.SyncingSource {
	return &jobSource{cache: c, changed: changed}
}

type jobSource struct {
	cache   *Cache
	changed func(*Record, workqueue.TypedRateLimitingInterface[reconcile.Request])
}

func (s *jobSource) Start(_ context.Context, q workqueue.TypedRateLimitingInterface[reconcile.Request]) error {
	for _, informer := range s.cache.informers {
		_, err := informer.AddEventHandler(toolscache.ResourceEventHandlerFuncs{
			AddFunc: func(obj any) {
				if r, ok := obj.(*Record); ok {
					s.changed(r, q)
				}
			},
			UpdateFunc: func(oldObj, newObj any) {
				old, _ := oldObj.(*Record)
				r, ok := newObj.(*Record)
				if ok && (old == nil || !old.sameAs(r)) {
					s.changed(r, q)
				}
			},
			DeleteFunc: func(obj any) {
				if tombstone, ok := obj.(toolscache.DeletedFinalStateUnknown); ok {
					obj = tombstone.Obj
				}
				if r, ok := obj.(*Record); ok {
					s.changed(r, q)
				}
			},
		})
		if err != nil {
			return err
		}
	}
	return nil
}

func (s *jobSource) WaitForSync(ctx context.Context) error { return s.cache.waitForSync(ctx) }

func (s *jobSource) String() string { return "job records" }
