package verdict

import (
	"slices"

	"github.com/release-controller/release-controller/api/v1alpha1"
)

// IsVerdict reports whether a phase is a verdict: Accepted, Rejected or Failed.
func IsVerdict(phase v1alpha1.PayloadPhase) bool {
	switch phase {
	case v1alpha1.PhaseAccepted, v1alpha1.PhaseRejected, v1alpha1.PhaseFailed:
		return true
	}
	return false
}

// Recorded is the phase the payload's recorded evidence gives: the creation job's recorded
// result, the override in the spec, an abort, and for each configured verification the runs
// recorded in the status, each verification judged again from its runs (its recorded state
// is not taken on trust). For a status the payload controller wrote, it is status.phase.
func Recorded(p *v1alpha1.ReleasePayload) v1alpha1.PayloadPhase {
	var tally verificationTally
	var skipped map[string]bool
	recorded := p.Status.Verifications
	for i, v := range p.Spec.PayloadVerificationConfig.Verifications {
		typ := v1alpha1.Blocking
		if !v.IsBlocking() {
			typ = v1alpha1.Informing
		}
		var runs []v1alpha1.JobRun
		if i < len(recorded) && recorded[i].Name == v.Name { // the payload controller keeps the configuration's order
			runs = recorded[i].Runs
		} else if j := slices.IndexFunc(recorded, func(s v1alpha1.VerificationStatus) bool { return s.Name == v.Name }); j >= 0 {
			runs = recorded[j].Runs
		}
		if len(runs) == 0 && p.Annotations[v1alpha1.AnnotationUpgradeSkipped] != "" {
			if skipped == nil {
				skipped = p.SkippedUpgrades()
			}
			if skipped[v.Name] {
				tally.add(typ, v1alpha1.JobSkipped)
				continue
			}
		}
		tally.add(typ, tallyRuns(v, runs).state)
	}
	creation := afterAbort(p.Status.ReleaseCreationJobResult, p.Annotations[v1alpha1.AnnotationAborted])
	return decide(p.Spec.PayloadOverride, creation.Status, tally).phase()
}

// Of is the payload's phase as everything but the payload controller must act on it. A verdict
// counts only when the status's phase, its conditions and Recorded all give it: a verdict
// written by anyone else (a hand-edited Accepted condition, a phase without the runs that
// earn it) is not one, and the payload is taken as still waiting (Ready once its image was
// built, else Pending) until the payload controller, which judges from the evidence,
// corrects it. Nothing is published, signed, promoted, logged or moved in Jira on a verdict
// Of does not give.
func Of(p *v1alpha1.ReleasePayload) v1alpha1.PayloadPhase {
	stored := p.Status.Phase
	if !IsVerdict(stored) || (Phase(p.Status.Conditions) == stored && Recorded(p) == stored) {
		return stored
	}
	if p.Status.ReleaseCreationJobResult.Status == v1alpha1.CreationJobSuccess {
		return v1alpha1.PhaseReady
	}
	return v1alpha1.PhasePending
}

// Accepted reports whether Of gives Accepted.
func Accepted(p *v1alpha1.ReleasePayload) bool { return Of(p) == v1alpha1.PhaseAccepted }
