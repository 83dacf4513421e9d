package releaselog

import (
	"fmt"

	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/release-controller/release-controller/api/v1alpha1"
	payloadverdict "github.com/release-controller/release-controller/internal/verdict"
)

// PayloadPagePath is the path of a payload's page on the web server, filled with the
// payload's namespace, stream and tag. The entries of accepted and rejected payloads link to it.
// (Entries written before it moved link to /releases/NAMESPACE/STREAM/TAG, which the web
// server redirects here.)
const PayloadPagePath = "/namespaces/%s/releasestream/%s/release/%s"

// ControllerOrigin is the origin and author of the entries the controller writes.
const ControllerOrigin = "release-controller"

// PayloadLink returns the path of a payload's page.
func PayloadLink(p *v1alpha1.ReleasePayload) string {
	return fmt.Sprintf(PayloadPagePath, p.Namespace, p.Spec.PayloadCoordinates.Stream, p.Spec.PayloadCoordinates.Tag)
}

// PayloadEntry returns the entry that logs a payload's verdict, when it has one: Accepted
// (type release) or Rejected (type rejected), dated when the verdict's condition turned True,
// with the condition's message. Its id names the payload and that transition, so adding it
// again (after a restart, say) changes nothing, while a later change of verdict is logged.
func PayloadEntry(p *v1alpha1.ReleasePayload) (Entry, bool) {
	var typ, condition string
	switch payloadverdict.Of(p) {
	case v1alpha1.PhaseAccepted:
		typ, condition = TypeRelease, v1alpha1.ConditionPayloadAccepted
	case v1alpha1.PhaseRejected:
		typ, condition = TypeRejected, v1alpha1.ConditionPayloadRejected
	default:
		return Entry{}, false
	}
	c := meta.FindStatusCondition(p.Status.Conditions, condition)
	if c == nil || c.Status != metav1.ConditionTrue || c.LastTransitionTime.IsZero() {
		return Entry{}, false
	}
	return Entry{
		ID:      fmt.Sprintf("%s/%s/%d", p.UID, p.Status.Phase, c.LastTransitionTime.Unix()),
		Type:    typ,
		Version: p.Spec.PayloadCoordinates.Tag,
		Origin:  ControllerOrigin,
		Author:  ControllerOrigin,
		Date:    c.LastTransitionTime.UTC(),
		Message: truncate(c.Message, v1alpha1.MaxReleaseLogMessageLength),
		Link:    PayloadLink(p),
	}, true
}

// truncate shortens s to at most n characters, marking the cut with an ellipsis.
func truncate(s string, n int) string {
	r := []rune(s)
	if len(r) <= n {
		return s
	}
	return string(r[:n-1]) + "…"
}
