package releaselog

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	"k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/util/retry"
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
	// ErrDayFull: the day holds MaxReleaseLogEntries entries already.
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

// conflictBackoff spaces the attempts of an add that lost a race with another writer:
// jittered, so writers that collided do not collide again, growing slowly, so a writer that
// lost a few times is not left behind the ones that just came, and with enough steps for several
// busy writers to each get their turn (15 seconds in all before jitter).
var conflictBackoff = wait.Backoff{Steps: 60, Duration: 5 * time.Millisecond, Factor: 1.1, Jitter: 1}

// Writer adds entries to the release log. It adds one entry at a time: concurrent adds of one
// process would otherwise mostly conflict with each other; adds of other processes (replicas,
// kubectl) are taken care of by retrying on conflict.
type Writer struct {
	// turn is held by the add in progress; a channel, so that waiting respects the context.
	turn chan struct{}
	// client writes, and reads through its cache on the first attempt.
	client client.Client
	// live reads from the API server, after a conflict.
	live      client.Reader
	namespace string
	ttl, skew time.Duration
	allowed   []string
	clock     clock.PassiveClock
}

// NewWriter returns a writer of the log opts describe. c is usually a manager's client (reads
// from its cache), live its API reader.
func NewWriter(c client.Client, live client.Reader, opts Options) *Writer {
	opts = opts.WithDefaults("")
	w := &Writer{turn: make(chan struct{}, 1), client: c, live: live, namespace: opts.Namespace, ttl: opts.TTL, skew: opts.FutureSkew, clock: opts.Clock}
	for _, t := range opts.Types {
		w.allowed = append(w.allowed, t.Name)
	}
	return w
}

// AddRelease adds an entry to the log of its date's UTC day (a zero date means now) and
// returns the day, YYYY-MM-DD. It creates the day's object or appends to it; an entry whose
// id the day already holds is not added again (and is no error). It refuses a type outside the
// allowlist, a date older than the log keeps or later than now plus the allowed skew, and
// missing required fields (type, version, origin).
func (w *Writer) AddRelease(ctx context.Context, e Entry) (string, error) {
	if len(w.allowed) > 0 && !slices.Contains(w.allowed, e.Type) {
		return "", fmt.Errorf("%w: %q is not one of %s", ErrTypeNotAllowed, e.Type, strings.Join(w.allowed, ", "))
	}
	day, _, err := w.add(ctx, e)
	return day, err
}

// add adds e without checking its type, and reports whether it was added (false when the day
// held its id already).
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
	select {
	case w.turn <- struct{}{}:
		defer func() { <-w.turn }()
	case <-ctx.Done():
		return "", false, ctx.Err()
	}
	day = DayOf(e.Date)
	key := client.ObjectKey{Namespace: w.namespace, Name: ObjectName(day)}
	var written *v1alpha1.ReleaseLog
	live := false
	err = retry.OnError(conflictBackoff, lostRace, func() error {
		written = nil
		var l v1alpha1.ReleaseLog
		err := w.get(ctx, key, &l, live)
		// Whatever happens next, a retry must see what the API server holds now.
		live = true
		switch {
		case apierrors.IsNotFound(err):
			l = v1alpha1.ReleaseLog{
				ObjectMeta: metav1.ObjectMeta{Namespace: key.Namespace, Name: key.Name},
				Spec:       v1alpha1.ReleaseLogSpec{Entries: []v1alpha1.ReleaseLogEntry{e.toAPI()}},
			}
			if err := w.client.Create(ctx, &l); err != nil {
				return err
			}
		case err != nil:
			return err
		case hasID(l.Spec.Entries, e.ID):
			return nil
		case len(l.Spec.Entries) >= v1alpha1.MaxReleaseLogEntries:
			return fmt.Errorf("%w: %s holds %d entries", ErrDayFull, key.Name, len(l.Spec.Entries))
		default:
			l.Spec.Entries = append(l.Spec.Entries, e.toAPI())
			// The update carries the resourceVersion read: a concurrent append makes it fail
			// with a conflict, and the entry is appended again to what the API server holds.
			if err := w.client.Update(ctx, &l); err != nil {
				return err
			}
		}
		written = &l
		return nil
	})
	switch {
	case apierrors.IsInvalid(err):
		return "", false, fmt.Errorf("%w: %w", ErrInvalidEntry, err)
	case errors.Is(err, ErrDayFull):
		return "", false, err
	case err != nil:
		return "", false, fmt.Errorf("adding an entry to %s/%s: %w", key.Namespace, key.Name, err)
	}
	if written != nil {
		w.writeStatus(ctx, written)
	}
	return day, written != nil, nil
}

// lostRace tells the errors of an add that another writer got in first.
func lostRace(err error) bool {
	return apierrors.IsConflict(err) || apierrors.IsAlreadyExists(err)
}

// get reads the day's object from the cache, or from the API server when live is set or the
// cache cannot answer (e.g. it has not started yet).
func (w *Writer) get(ctx context.Context, key client.ObjectKey, l *v1alpha1.ReleaseLog, live bool) error {
	if !live {
		err := w.client.Get(ctx, key, l)
		if err == nil || apierrors.IsNotFound(err) {
			return err
		}
	}
	return w.live.Get(ctx, key, l)
}

// writeStatus counts the entries of the object just written. It is best effort: when another
// write came in between, the status is left to that writer or to the controller.
func (w *Writer) writeStatus(ctx context.Context, l *v1alpha1.ReleaseLog) {
	status := DesiredStatus(l, nil, w.clock.Now())
	if equality.Semantic.DeepEqual(status, l.Status) {
		return
	}
	patch := client.MergeFromWithOptions(l.DeepCopy(), client.MergeFromWithOptimisticLock{})
	l.Status = status
	err := w.client.Status().Patch(ctx, l, patch)
	if err != nil && !apierrors.IsConflict(err) && !apierrors.IsNotFound(err) {
		ctrl.LoggerFrom(ctx).Error(err, "counting the entries of the release log; the controller will", "name", l.Name)
	}
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
