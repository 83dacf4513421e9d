// Package stream holds the ReleaseStream controller: it imports the stream's components,
// creates payloads when they change, builds them, launches their verifications, publishes
// accepted ones, records the upgrade graph and collects old payloads and jobs.
//
// The decisions (this file, retention.go, graph.go) are pure functions with table tests; the
// reconciler performs the I/O they call for and writes the stream's status once.
package stream

import (
	"cmp"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"slices"
	"time"

	"github.com/release-controller/release-controller/api/v1alpha1"
	"github.com/release-controller/release-controller/internal/jobcontract"
	"github.com/release-controller/release-controller/internal/verdict"
)

// TagTimeFormat is the UTC time part of a release tag.
const TagTimeFormat = "2006-01-02-150405"

// ReleaseTag is the tag of a payload created at t: <prefix>-<UTC YYYY-MM-DD-HHMMSS>.
func ReleaseTag(prefix string, t time.Time) string {
	return prefix + "-" + t.UTC().Format(TagTimeFormat)
}

// ComponentsHash identifies a set of pinned components, independent of their order.
func ComponentsHash(components []v1alpha1.PinnedComponent) string {
	sorted := slices.Clone(components)
	slices.SortFunc(sorted, func(a, b v1alpha1.PinnedComponent) int { return cmp.Compare(a.Name, b.Name) })
	h := sha256.New()
	for _, c := range sorted {
		fmt.Fprintf(h, "%s=%s\n", c.Name, c.Image)
	}
	return hex.EncodeToString(h.Sum(nil))[:16]
}

// NewestFirst orders payloads by creation time, newest first (the tag breaks ties).
func NewestFirst(payloads []v1alpha1.ReleasePayload) {
	slices.SortFunc(payloads, func(a, b v1alpha1.ReleasePayload) int {
		return cmp.Or(b.CreationTimestamp.Compare(a.CreationTimestamp.Time), cmp.Compare(b.Name, a.Name))
	})
}

// IsUnready reports whether a payload still waits for its verdict (a verdict its evidence does
// not back is no verdict: see verdict.Of).
func IsUnready(p *v1alpha1.ReleasePayload) bool {
	return !verdict.IsVerdict(verdict.Of(p))
}

// CreateDecision says whether to create a payload now, and if not, why and when to look again.
type CreateDecision struct {
	Create bool
	// Blocked: the stream's spec stops every creation until it is fixed (Ready=False).
	Blocked bool
	Reason  string
	Message string
	// RequeueAfter is when the decision may change by itself (the creation interval passing).
	RequeueAfter time.Duration
}

// DecideCreate decides whether the resolved components become a new payload. payloads are the
// stream's payloads, newest first. A payload is created when the component set differs from
// the newest payload's, fewer than maxUnreadyReleases payloads wait for a verdict, and the
// minimum creation interval has passed since the newest payload.
func DecideCreate(spec *v1alpha1.ReleaseStreamSpec, hash string, payloads []v1alpha1.ReleasePayload, now time.Time) CreateDecision {
	if clash := VerificationNameClash(spec.Verification); clash != "" {
		return CreateDecision{Blocked: true, Reason: v1alpha1.ReasonVerificationNameClash,
			Message: fmt.Sprintf("two verifications would both be named %s in a payload (one of them runs once per platform, as <name>-<arch>); rename one", clash)}
	}
	if len(payloads) > 0 && payloads[0].Annotations[v1alpha1.AnnotationComponentsHash] == hash {
		return CreateDecision{Reason: v1alpha1.ReasonUpToDate, Message: fmt.Sprintf("payload %s has the current components", payloads[0].Name)}
	}
	var unready []string
	for i := range payloads {
		if IsUnready(&payloads[i]) && payloads[i].Annotations[v1alpha1.AnnotationAborted] == "" {
			unready = append(unready, payloads[i].Name)
		}
	}
	limit := max(spec.MaxUnreadyReleases, 1)
	if int32(len(unready)) >= limit {
		return CreateDecision{Reason: v1alpha1.ReasonTooManyUnready,
			Message: fmt.Sprintf("components changed; waiting for %d unready payloads to be accepted, rejected or failed (maxUnreadyReleases %d): %s", len(unready), limit, joinNames(unready))}
	}
	if spec.MinCreationInterval != nil && len(payloads) > 0 {
		next := payloads[0].CreationTimestamp.Add(spec.MinCreationInterval.Duration)
		if now.Before(next) {
			wait := next.Sub(now)
			return CreateDecision{Reason: v1alpha1.ReasonCreationInterval, RequeueAfter: wait,
				Message: fmt.Sprintf("components changed; the next payload may be created at %s (minCreationInterval %s)", next.UTC().Format(time.RFC3339), spec.MinCreationInterval.Duration)}
		}
	}
	return CreateDecision{Create: true, Reason: v1alpha1.ReasonPayloadCreated}
}

func joinNames(names []string) string {
	if len(names) > 5 {
		return fmt.Sprintf("%s and %d more", joinNames(names[:5]), len(names)-5)
	}
	return fmt.Sprint(names)
}

// ToAbort returns the payloads to abort: pending ones (image not built yet, not failed)
// older than the newest payload. Only the newest pending payload is built.
func ToAbort(payloads []v1alpha1.ReleasePayload) []*v1alpha1.ReleasePayload {
	var abort []*v1alpha1.ReleasePayload
	for i := 1; i < len(payloads); i++ {
		p := &payloads[i]
		if p.Annotations[v1alpha1.AnnotationAborted] != "" || p.Status.ReleaseCreationJobResult.Status == v1alpha1.CreationJobSuccess ||
			!IsUnready(p) {
			continue
		}
		abort = append(abort, p)
	}
	return abort
}

// ImportBackoff is the wait before resolving a component again after failures in a row.
func ImportBackoff(failures int32) time.Duration {
	d := 5 * time.Second
	for i := int32(1); i < failures && d < 5*time.Minute; i++ {
		d *= 2
	}
	return min(d, 5*time.Minute)
}

// Counts counts payloads by phase (verdict.Of).
func Counts(payloads []v1alpha1.ReleasePayload) v1alpha1.PayloadCounts {
	var c v1alpha1.PayloadCounts
	for i := range payloads {
		switch verdict.Of(&payloads[i]) {
		case v1alpha1.PhaseAccepted:
			c.Accepted++
		case v1alpha1.PhaseRejected:
			c.Rejected++
		case v1alpha1.PhaseFailed:
			c.Failed++
		case v1alpha1.PhaseReady:
			c.Ready++
		default:
			c.Pending++
		}
	}
	return c
}

// NewestAccepted returns the accepted payload with the highest version that has an image, or nil.
func NewestAccepted(payloads []v1alpha1.ReleasePayload) *v1alpha1.ReleasePayload {
	byTag := map[string]*v1alpha1.ReleasePayload{}
	var tags []string
	for i := range payloads {
		p := &payloads[i]
		if p.Status.PayloadImage != "" && verdict.Accepted(p) {
			byTag[p.Name] = p
			tags = append(tags, p.Name)
		}
	}
	newest, ok := jobcontract.Newest(tags)
	if !ok {
		return nil
	}
	return byTag[newest]
}
