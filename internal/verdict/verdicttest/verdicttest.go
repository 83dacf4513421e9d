// Package verdicttest makes payloads whose verdict was earned, or written by hand, for the
// tests of every part that acts on a verdict.
package verdicttest

import (
	"fmt"
	"slices"

	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/release-controller/release-controller/api/v1alpha1"
	"github.com/release-controller/release-controller/internal/verdict"
)

// Payload returns a payload of stream/tag with one blocking verification, e2e, whose image
// was built; with passed its run succeeded, and its status holds the verdict the payload
// controller writes for that (Accepted, or Ready while e2e runs).
func Payload(namespace, stream, tag string, passed bool) *v1alpha1.ReleasePayload {
	p := &v1alpha1.ReleasePayload{
		ObjectMeta: metav1.ObjectMeta{Namespace: namespace, Name: tag, UID: types.UID("uid-" + tag)},
		Spec: v1alpha1.ReleasePayloadSpec{
			PayloadCoordinates:        v1alpha1.PayloadCoordinates{Stream: stream, Tag: tag},
			PayloadVerificationConfig: v1alpha1.PayloadVerificationConfig{Verifications: []v1alpha1.Verification{{Name: "e2e"}}},
		},
	}
	p.Status.ReleaseCreationJobResult = v1alpha1.ReleaseCreationJobResult{Name: tag + "-build", Status: v1alpha1.CreationJobSuccess}
	p.Status.PayloadImage = "registry.example.com/" + namespace + "/release@sha256:" + digestOf(tag)
	run := v1alpha1.JobRun{Kind: v1alpha1.RunKindJob, Namespace: namespace, Name: tag + "-e2e-1", Attempt: 1, State: v1alpha1.JobPending}
	if passed {
		run.State = v1alpha1.JobSuccess
	}
	p.Status.Verifications = []v1alpha1.VerificationStatus{{Name: "e2e", Type: v1alpha1.Blocking, Runs: []v1alpha1.JobRun{run}}}
	p.Status.Verifications[0].State, p.Status.Verifications[0].Message = verdict.VerificationState(p.Spec.PayloadVerificationConfig.Verifications[0], p.Status.Verifications[0].Runs)
	write(p, verdict.ComputeConditions(nil, p.Status.ReleaseCreationJobResult, "", p.Status.Verifications))
	return p
}

// HandWritten is Payload with its e2e run still going, and a status someone edited to say
// phase: a verdict the payload controller did not write.
func HandWritten(namespace, stream, tag string, phase v1alpha1.PayloadPhase) *v1alpha1.ReleasePayload {
	p := Payload(namespace, stream, tag, false)
	conditionOf := map[v1alpha1.PayloadPhase]string{
		v1alpha1.PhaseAccepted: v1alpha1.ConditionPayloadAccepted,
		v1alpha1.PhaseRejected: v1alpha1.ConditionPayloadRejected,
		v1alpha1.PhaseFailed:   v1alpha1.ConditionPayloadFailed,
	}
	conditions := append([]metav1.Condition(nil), p.Status.Conditions...)
	meta.SetStatusCondition(&conditions, metav1.Condition{
		Type: conditionOf[phase], Status: metav1.ConditionTrue, Reason: v1alpha1.ReasonBlockingJobsSucceeded,
		Message: "written by hand", LastTransitionTime: metav1.Unix(1_795_000_000, 0),
	})
	write(p, conditions)
	return p
}

func write(p *v1alpha1.ReleasePayload, conditions []metav1.Condition) {
	for i := range conditions {
		if conditions[i].LastTransitionTime.IsZero() {
			conditions[i].LastTransitionTime = metav1.Unix(1_795_000_000, 0)
		}
	}
	p.Status.Conditions = conditions
	p.Status.Phase = verdict.Phase(conditions)
}

func digestOf(tag string) string {
	const hex = "0123456789abcdef"
	out := make([]byte, 64)
	for i := range out {
		out[i] = hex[(int(tag[i%len(tag)])+i)%16]
	}
	return string(out)
}

// Earn gives p the evidence of phase as the payload controller records it, so that verdict.Of
// reads phase back, and changes nothing the fixture set that already agrees: the creation job
// succeeded (failed for Failed, has not run for Pending); for Accepted each configured
// verification that has not passed gets passing runs, for Rejected the first blocking one gets
// failing runs (or, with none, the spec a rejecting override); the four verdict conditions
// that disagree with phase are set as the payload controller sets them. It panics when it
// cannot, which is a mistake in the fixture.
func Earn(p *v1alpha1.ReleasePayload, phase v1alpha1.PayloadPhase) {
	if phase == "" {
		return // no status yet
	}
	creation := &p.Status.ReleaseCreationJobResult
	if creation.Name == "" {
		creation.Name = p.Name + "-build"
	}
	switch phase {
	case v1alpha1.PhasePending:
		if creation.Status == v1alpha1.CreationJobSuccess || creation.Status == v1alpha1.CreationJobFailed {
			creation.Status, creation.Message = v1alpha1.CreationJobUnknown, ""
		}
	case v1alpha1.PhaseFailed:
		if creation.Status != v1alpha1.CreationJobFailed {
			creation.Status, creation.Message = v1alpha1.CreationJobFailed, "the build failed"
		}
	default:
		creation.Status = v1alpha1.CreationJobSuccess
	}
	config := p.Spec.PayloadVerificationConfig.Verifications
	switch phase {
	case v1alpha1.PhaseAccepted:
		for _, v := range config {
			runUntil(p, v, v1alpha1.JobSuccess)
		}
	case v1alpha1.PhaseRejected:
		i := slices.IndexFunc(config, func(v v1alpha1.Verification) bool { return v.IsBlocking() })
		if i < 0 {
			p.Spec.PayloadOverride = &v1alpha1.PayloadOverride{Override: v1alpha1.OverrideRejected, Reason: "rejected by the fixture"}
			break
		}
		runUntil(p, config[i], v1alpha1.JobFailure)
	}
	var judged []v1alpha1.VerificationStatus // the configured verifications, as the payload controller judges them
	for i := range p.Status.Verifications {
		vs := &p.Status.Verifications[i]
		if j := slices.IndexFunc(config, func(v v1alpha1.Verification) bool { return v.Name == vs.Name }); j >= 0 {
			if state, message := verdict.VerificationState(config[j], vs.Runs); len(vs.Runs) > 0 && state != vs.State {
				vs.State, vs.Message = state, message
			}
			judged = append(judged, *vs)
		}
	}
	conditions := p.Status.Conditions
	for _, c := range verdict.ComputeConditions(p.Spec.PayloadOverride, *creation, "", judged) {
		if !verdict.IsVerdict(phase) && c.Status == metav1.ConditionTrue &&
			(c.Type == v1alpha1.ConditionPayloadAccepted || c.Type == v1alpha1.ConditionPayloadRejected) {
			// Still waiting, as the fixture says, whatever its runs show.
			c.Status, c.Reason, c.Message = metav1.ConditionFalse, v1alpha1.ReasonBlockingJobsPending, "waiting for blocking jobs"
		}
		old := meta.FindStatusCondition(conditions, c.Type)
		if (old == nil && c.Status == metav1.ConditionTrue) || (old != nil && old.Status != c.Status) {
			meta.SetStatusCondition(&conditions, c) // a missing condition reads as False already
		}
	}
	write(p, conditions)
	if got := verdict.Of(p); got != phase {
		panic(fmt.Sprintf("verdicttest.Earn: payload %s reads as %s, not %s", p.Name, got, phase))
	}
}

// runUntil adds runs of v, each in state, until the verification is in that state.
func runUntil(p *v1alpha1.ReleasePayload, v v1alpha1.Verification, state v1alpha1.JobState) {
	i := slices.IndexFunc(p.Status.Verifications, func(s v1alpha1.VerificationStatus) bool { return s.Name == v.Name })
	if i < 0 {
		typ := v1alpha1.Blocking
		if !v.IsBlocking() {
			typ = v1alpha1.Informing
		}
		p.Status.Verifications = append(p.Status.Verifications, v1alpha1.VerificationStatus{Name: v.Name, Type: typ})
		i = len(p.Status.Verifications) - 1
	}
	vs := &p.Status.Verifications[i]
	for range 1000 {
		if got, _ := verdict.VerificationState(v, vs.Runs); got == state {
			return
		}
		attempt := int32(len(vs.Runs) + 1)
		vs.Runs = append(vs.Runs, v1alpha1.JobRun{Kind: v1alpha1.RunKindJob, Namespace: p.Namespace,
			Name: fmt.Sprintf("%s-%s-%d", p.Name, v.Name, attempt), Attempt: attempt, State: state})
	}
	panic(fmt.Sprintf("verdicttest.Earn: verification %s of %s never reaches %s", v.Name, p.Name, state))
}
