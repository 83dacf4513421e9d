package releaselog

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/utils/clock"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/release-controller/release-controller/api/v1alpha1"
)

// Errors of the Writer besides ErrDateExpired and ErrDateInFuture; they come wrapped, test
// them with errors.Is or sort them with KindOf.
var (
	// ErrTypeNotAllowed: the entry's type is not in the configured allowlist.
	ErrTypeNotAllowed = errors.New("entry type not allowed")
	// ErrInvalidEntry: a required field is missing, or the API server refused a field.
	ErrInvalidEntry = errors.New("invalid entry")
	// ErrDayFull: the day holds Options.MaxEntriesPerDay entries already, or the entry would
	// take its object past Options.MaxDayBytes.
	ErrDayFull = errors.New("the day's release log is full")
)

// Kind says how an error of the Writer should be reported to its caller.
type Kind int

const (
	// KindInternal: the API server failed or could not be reached.
	KindInternal Kind = iota
	// KindInvalidArgument: the entry is wrong (missing fields, a type not allowed, a date in
	// the future, a field the API refuses).
	KindInvalidArgument
	// KindFailedPrecondition: the entry is fine but its day cannot take it (expired, full).
	KindFailedPrecondition
)

// KindOf sorts an error of the Writer.
func KindOf(err error) Kind {
	switch {
	case errors.Is(err, ErrTypeNotAllowed), errors.Is(err, ErrInvalidEntry), errors.Is(err, ErrDateInFuture):
		return KindInvalidArgument
	case errors.Is(err, ErrDateExpired), errors.Is(err, ErrDayFull):
		return KindFailedPrecondition
	}
	return KindInternal
}

// conflictBackoff spaces the attempts of a write that lost a race with another writer of the
// day (another replica, kubectl): jittered, so writers that collided do not collide again, and
// with enough steps for several busy writers to each get their turn (15 seconds in all before
// jitter). Every lost race is another writer's success, so the day always moves forward.
var conflictBackoff = wait.Backoff{Steps: 60, Duration: 5 * time.Millisecond, Factor: 1.1, Jitter: 1}

// maxBatch bounds the entries of one write, which keeps its JSON patch far below the 10,000
// operations the API server accepts; the rest wait for the next write.
const maxBatch = 1000

// flushTimeout bounds one write, lost races included, so that an API server that does not
// answer cannot hold a day's queue forever.
const flushTimeout = time.Minute

// Writer adds entries to the release log. Callers queue their entries per day, and one
// flusher per day writes everything queued in one write of the day's object, then the next
// batch, so a busy log costs a write per batch rather than per entry.
//
// The Writer writes the entries only. The status (entryCount) is left to the controller
// (Reconciler), which counts a busy day at most once every statusInterval: a status write costs
// the API server as much as an append, so writing it with every batch would halve the pace.
type Writer struct {
	// client writes, and reads through its cache.
	client client.Client
	// live reads from the API server, after a lost race.
	live      client.Reader
	namespace string
	ttl, skew time.Duration
	allowed   []string
	limits    dayLimits
	clock     clock.PassiveClock
	// key seals every entry written.
	key []byte

	mu sync.Mutex
	// queues holds, per day, the requests waiting for a write; a day is in the map exactly
	// while its flusher runs.
	queues map[string][]*request
	// last is the object this writer wrote last. Right after a write it is newer than the
	// cache, which learns of the write a moment later; starting the next write from it spares
	// a lost race against oneself. Never modified: it may be in use as a write's base.
	last *v1alpha1.ReleaseLog
}

// request is one caller's entry waiting for its write.
type request struct {
	// ctx is the caller's: an entry whose caller gave up before its write is dropped.
	ctx   context.Context
	entry v1alpha1.ReleaseLogEntry
	// bytes it adds to the day's object.
	bytes int
	// done receives the one result; buffered, so that answering never waits for the caller.
	done chan result
}

type result struct {
	added bool
	err   error
}

func (r *request) answer(res result) { r.done <- res }

func answerAll(requests []*request, res result) {
	for _, r := range requests {
		r.answer(res)
	}
}

// NewWriter returns a writer of the log opts describe. c is usually a manager's client (reads
// from its cache), live its API reader.
func NewWriter(c client.Client, live client.Reader, opts Options) *Writer {
	opts = opts.WithDefaults("")
	w := &Writer{
		client: c, live: live, namespace: opts.Namespace, ttl: opts.TTL, skew: opts.FutureSkew, clock: opts.Clock,
		limits: dayLimits{maxEntries: opts.MaxEntriesPerDay, maxBytes: opts.MaxDayBytes},
		queues: map[string][]*request{}, key: opts.SealKey,
	}
	for _, t := range opts.Types {
		w.allowed = append(w.allowed, t.Name)
	}
	return w
}

// AddRelease adds an entry to the log of its date's UTC day (a zero date means now) and
// returns the day, YYYY-MM-DD. It creates the day's object or appends to it; an entry whose
// id the day already holds is not added again (and is no error). It refuses a type outside the
// allowlist, a date older than the log keeps or later than now plus the allowed skew, missing
// required fields (type, version, origin), and an entry its day has no room for (ErrDayFull).
func (w *Writer) AddRelease(ctx context.Context, e Entry) (string, error) {
	if len(w.allowed) > 0 && !slices.Contains(w.allowed, e.Type) {
		return "", fmt.Errorf("%w: %q is not one of %s", ErrTypeNotAllowed, e.Type, strings.Join(w.allowed, ", "))
	}
	day, _, err := w.add(ctx, e)
	return day, err
}

// add adds e without checking its type, and reports whether it was added (false when the day
// held its id already). It returns when e's write is done, or when ctx ends: then e is
// written if its write had begun, and dropped otherwise.
func (w *Writer) add(ctx context.Context, e Entry) (day string, added bool, err error) {
	now := w.clock.Now()
	if e.Date.IsZero() {
		e.Date = now
	}
	// The API keeps whole seconds: truncating first makes the day and the window checks agree
	// with what is stored.
	e.Date = e.Date.UTC().Truncate(time.Second)
	if err := checkRequired(e); err != nil {
		return "", false, err
	}
	if err := CheckDate(e.Date, now, w.ttl, w.skew); err != nil {
		return "", false, err
	}
	day = DayOf(e.Date)
	entry := e.toAPI()
	// The writer's callers set the author (the controller, or AddRelease the authenticated
	// caller): the seal vouches for it.
	entry.Seal = Seal(w.key, w.namespace, day, entry)
	r := &request{ctx: ctx, entry: entry, bytes: entrySize(&entry), done: make(chan result, 1)}
	w.enqueue(ctx, day, r)
	select {
	case res := <-r.done:
		if res.err != nil {
			return "", false, res.err
		}
		return day, res.added, nil
	case <-ctx.Done():
		return "", false, ctx.Err()
	}
}

// enqueue queues r for its day's next write, and starts the day's flusher unless it runs.
func (w *Writer) enqueue(ctx context.Context, day string, r *request) {
	w.mu.Lock()
	defer w.mu.Unlock()
	queue, flushing := w.queues[day]
	w.queues[day] = append(queue, r)
	if !flushing {
		// The flusher writes for every caller queued meanwhile, so it must not end with the
		// caller that happened to start it; it keeps the caller's logger.
		go w.flush(ctrl.LoggerInto(context.Background(), ctrl.LoggerFrom(ctx)), day)
	}
}

// flush writes the day's queue, a batch per write, until the queue is empty. After each write
// it waits WriteSpacing for the day's size, gathering what comes meanwhile into the next batch.
func (w *Writer) flush(ctx context.Context, day string) {
	key := client.ObjectKey{Namespace: w.namespace, Name: ObjectName(day)}
	for {
		batch := w.take(day)
		if batch == nil {
			return
		}
		wctx, cancel := context.WithTimeout(ctx, flushTimeout)
		written := w.write(wctx, key, batch)
		cancel()
		time.Sleep(spacingAfter(written, w.limits))
	}
}

// rewriteBytesPerSecond bounds how fast the writer rewrites a day: every write, however few
// entries it adds, costs the API server the whole object (it decodes, validates and stores it,
// and sends it to every watcher), about a megabyte on a day of 3,500 verdicts.
const rewriteBytesPerSecond = 256 << 10

// dayWritten is a day's size after a write: its JSON bytes and its entries; zero when the
// write wrote nothing.
type dayWritten struct {
	bytes, entries int
}

// spacingAfter is how long the flusher waits after a write before it takes the next batch:
// WriteSpacing for the day's size, or nothing once the day holds its most entries. A full day
// is never written again, so waiting would only hold back the entries queued meanwhile, whose
// answer (the day is full) needs no write: at 3,500 entries a day that wait was 4 to 5 s, and
// the verdicts queued during it were refused all at once, a burst of ReleaseLogFull Events
// the API server answered with a stall of its own.
func spacingAfter(written dayWritten, limits dayLimits) time.Duration {
	if limits.maxEntries > 0 && written.entries >= limits.maxEntries {
		return 0
	}
	return WriteSpacing(written.bytes)
}

// WriteSpacing is the least time between two writes of a day of dayBytes bytes: a small day is
// written at once, a megabyte (about 3,200 verdicts) every four seconds with everything queued
// meanwhile, so a busy log takes a bounded share of the API server however full its day.
func WriteSpacing(dayBytes int) time.Duration {
	return time.Duration(int64(dayBytes) * int64(time.Second) / rewriteBytesPerSecond)
}

// take removes the next batch from the day's queue: everything queued, up to maxBatch, but
// the entries whose callers gave up. On an empty queue it ends the day's flusher: it returns
// nil and removes the day, so that the next entry starts a new flusher.
func (w *Writer) take(day string) []*request {
	w.mu.Lock()
	defer w.mu.Unlock()
	for {
		queue := w.queues[day]
		if len(queue) == 0 {
			delete(w.queues, day)
			return nil
		}
		n := min(len(queue), maxBatch)
		w.queues[day] = queue[n:]
		batch := slices.DeleteFunc(slices.Clone(queue[:n]), func(r *request) bool { return r.ctx.Err() != nil })
		if len(batch) > 0 {
			return batch
		}
	}
}

// errLostRace: another writer changed the day between the read and the write.
var errLostRace = errors.New("another writer changed the day")

// write adds the batch's entries to the day in one write, and answers every request of the
// batch. After a lost race it reads the day from the API server and plans again, so it writes
// only the entries still missing and never rewrites what others wrote. A write is all or
// nothing: when the API server refuses some entry, the batch is halved until the refused
// entries are alone and the others are written. It returns the day's size after its write,
// zero when it wrote nothing.
func (w *Writer) write(ctx context.Context, key client.ObjectKey, batch []*request) dayWritten {
	backoff := conflictBackoff
	live := false
	for attempt := 1; ; attempt++ {
		base, err := w.read(ctx, key, live)
		if err != nil {
			answerAll(batch, result{err: fmt.Errorf("reading the release log %s/%s: %w", key.Namespace, key.Name, err)})
			return dayWritten{}
		}
		adds, after := w.decide(key, base, batch)
		if len(adds) == 0 {
			return dayWritten{}
		}
		err = w.append(ctx, key, base, adds)
		switch {
		case err == nil:
			answerAll(adds, result{added: true})
			return after
		case errors.Is(err, errLostRace) && attempt < conflictBackoff.Steps:
			// Whatever the cache says, the next attempt must see what the API server holds.
			live, batch = true, adds
			if !sleep(ctx, backoff.Step()) {
				answerAll(adds, result{err: fmt.Errorf("adding to the release log %s/%s: %w", key.Namespace, key.Name, ctx.Err())})
				return dayWritten{}
			}
		case errors.Is(err, errLostRace):
			answerAll(adds, result{err: fmt.Errorf("adding to the release log %s/%s: %d writes lost the race to other writers", key.Namespace, key.Name, attempt)})
			return dayWritten{}
		case apierrors.IsInvalid(err) && len(adds) > 1:
			first := w.write(ctx, key, adds[:len(adds)/2])
			if second := w.write(ctx, key, adds[len(adds)/2:]); second.entries > first.entries {
				return second
			}
			return first
		case apierrors.IsInvalid(err):
			answerAll(adds, result{err: fmt.Errorf("%w: %w", ErrInvalidEntry, err)})
			return dayWritten{}
		default:
			answerAll(adds, result{err: fmt.Errorf("adding to the release log %s/%s: %w", key.Namespace, key.Name, err)})
			return dayWritten{}
		}
	}
}

// sleep waits for d, or less when ctx ends first; it reports whether ctx is still live.
func sleep(ctx context.Context, d time.Duration) bool {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
		return true
	case <-ctx.Done():
		return false
	}
}

// decide plans the write of batch to base (nil when the day has no object yet), answers the
// requests that are not part of the write and returns those that are, with the day's size
// after their write.
func (w *Writer) decide(key client.ObjectKey, base *v1alpha1.ReleaseLog, batch []*request) ([]*request, dayWritten) {
	entries := make([]queued, len(batch))
	for i, r := range batch {
		entries[i] = queued{id: r.entry.ID, bytes: r.bytes}
	}
	var adds []*request
	state := w.stateOf(key, base)
	after := dayWritten{bytes: state.bytes, entries: state.count}
	for i, v := range planWrite(state, entries, w.limits) {
		r := batch[i]
		switch v {
		case verdictAdd:
			adds = append(adds, r)
			after.bytes += r.bytes
			after.entries++
		case verdictPresent:
			r.answer(result{})
		case verdictFull:
			r.answer(result{err: fmt.Errorf("%w: %s is at the limit of %d entries a day (--log-max-entries)",
				ErrDayFull, key.Name, w.limits.maxEntries)})
		case verdictTooLarge:
			r.answer(result{err: fmt.Errorf("%w: %s has no room for an entry of %d bytes: a day's object may hold at most %d bytes, below etcd's limit of 1.5 MiB",
				ErrDayFull, key.Name, r.bytes, w.limits.maxBytes)})
		}
	}
	return adds, after
}

// stateOf returns what planWrite needs of the day's object, base (nil when there is none).
// Its size is the object's JSON; the API server adds some metadata (managedFields), which the
// margin between the byte budget and etcd's limit is for.
func (w *Writer) stateOf(key client.ObjectKey, base *v1alpha1.ReleaseLog) dayState {
	if base == nil {
		base = newDay(key, nil)
	}
	state := dayState{ids: map[string]struct{}{}, count: len(base.Spec.Entries), bytes: JSONSize(base)}
	for i := range base.Spec.Entries {
		if id := base.Spec.Entries[i].ID; id != "" {
			state.ids[id] = struct{}{}
		}
	}
	return state
}

func newDay(key client.ObjectKey, entries []v1alpha1.ReleaseLogEntry) *v1alpha1.ReleaseLog {
	return &v1alpha1.ReleaseLog{
		ObjectMeta: metav1.ObjectMeta{Namespace: key.Namespace, Name: key.Name},
		Spec:       v1alpha1.ReleaseLogSpec{Entries: entries},
	}
}

// entrySize is what an entry adds to its day's JSON: itself and a comma.
func entrySize(e *v1alpha1.ReleaseLogEntry) int {
	return JSONSize(e) + 1
}

// JSONSize is the size of v as JSON, the form the API server handles.
func JSONSize(v any) int {
	b, err := json.Marshal(v)
	if err != nil {
		// API types always marshal.
		panic(fmt.Sprintf("marshalling %T: %v", v, err))
	}
	return len(b)
}

// read returns the day's object, nil when there is none. Unless live is set it reads the
// cache, or takes the object this writer wrote last when the cache has not seen it yet.
func (w *Writer) read(ctx context.Context, key client.ObjectKey, live bool) (*v1alpha1.ReleaseLog, error) {
	if !live {
		var cached v1alpha1.ReleaseLog
		err := w.client.Get(ctx, key, &cached)
		switch {
		case err == nil:
			return w.newer(key, &cached), nil
		case apierrors.IsNotFound(err):
			return w.newer(key, nil), nil
		}
		// The cache cannot answer (it has not started, say): ask the API server.
	}
	var l v1alpha1.ReleaseLog
	err := w.live.Get(ctx, key, &l)
	switch {
	case apierrors.IsNotFound(err):
		return nil, nil
	case err != nil:
		return nil, err
	}
	return &l, nil
}

// newer returns the object this writer wrote last instead of cached (nil when the cache holds
// none) when it is the same object at a later generation, or one the cache has not seen.
func (w *Writer) newer(key client.ObjectKey, cached *v1alpha1.ReleaseLog) *v1alpha1.ReleaseLog {
	w.mu.Lock()
	last := w.last
	w.mu.Unlock()
	if last == nil || last.Namespace != key.Namespace || last.Name != key.Name {
		return cached
	}
	if cached == nil || (cached.UID == last.UID && cached.Generation < last.Generation) {
		return last
	}
	return cached
}

func (w *Writer) remember(l *v1alpha1.ReleaseLog) {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.last = l
}

// append writes the entries of adds to the day: it creates the object when base is nil, else
// appends to base's entries with a JSON patch that holds only the new entries. It returns
// errLostRace when the day is not base any more.
func (w *Writer) append(ctx context.Context, key client.ObjectKey, base *v1alpha1.ReleaseLog, adds []*request) error {
	entries := make([]v1alpha1.ReleaseLogEntry, len(adds))
	for i, r := range adds {
		entries[i] = r.entry
	}
	if base == nil {
		l := newDay(key, entries)
		err := w.client.Create(ctx, l)
		switch {
		case err == nil:
			w.remember(l)
		case apierrors.IsAlreadyExists(err):
			return errLostRace
		}
		return err
	}
	patch, err := json.Marshal(appendPatch(base, entries))
	if err != nil {
		return err
	}
	// The response fills l.
	l := newDay(key, nil)
	err = w.client.Patch(ctx, l, client.RawPatch(types.JSONPatchType, patch))
	switch {
	case err == nil:
		w.remember(l)
		return nil
	case apierrors.IsNotFound(err), apierrors.IsConflict(err):
		return errLostRace
	case apierrors.IsInvalid(err):
		// A failed test of the patch and an entry the API refuses both come back as Invalid,
		// the former without saying so: the object as it is now tells which it was.
		var now v1alpha1.ReleaseLog
		gerr := w.live.Get(ctx, key, &now)
		if apierrors.IsNotFound(gerr) || (gerr == nil && (now.UID != base.UID || now.Generation != base.Generation)) {
			return errLostRace
		}
	}
	return err
}

// jsonPatchOp is one operation of a JSON patch (RFC 6902).
type jsonPatchOp struct {
	Op    string `json:"op"`
	Path  string `json:"path"`
	Value any    `json:"value"`
}

// appendPatch appends entries to base's entries, if the object is still base: its first
// operations test the uid and the generation, and fail the patch otherwise. That is the
// optimistic lock of the write. It is the generation, not the resourceVersion, because the
// generation moves with every change of the entries (of the spec) and nothing else: the
// controller's status writes do not fail the append, another writer's entries do.
func appendPatch(base *v1alpha1.ReleaseLog, entries []v1alpha1.ReleaseLogEntry) []jsonPatchOp {
	ops := []jsonPatchOp{
		{Op: "test", Path: "/metadata/uid", Value: base.UID},
		{Op: "test", Path: "/metadata/generation", Value: base.Generation},
	}
	if len(base.Spec.Entries) == 0 {
		// There is no list to append to: a day without entries has no spec.entries, maybe
		// no spec at all. The spec holds nothing but the entries.
		return append(ops, jsonPatchOp{Op: "add", Path: "/spec", Value: v1alpha1.ReleaseLogSpec{Entries: entries}})
	}
	for i := range entries {
		ops = append(ops, jsonPatchOp{Op: "add", Path: "/spec/entries/-", Value: &entries[i]})
	}
	return ops
}

// checkRequired checks the fields the API requires, for a clearer error than the API's.
func checkRequired(e Entry) error {
	var missing []string
	for _, f := range []struct{ name, value string }{{"type", e.Type}, {"version", e.Version}, {"origin", e.Origin}} {
		if strings.TrimSpace(f.value) == "" {
			missing = append(missing, f.name)
		}
	}
	if len(missing) > 0 {
		return fmt.Errorf("%w: missing %s", ErrInvalidEntry, strings.Join(missing, ", "))
	}
	return nil
}
