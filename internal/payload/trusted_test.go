package payload

import (
	"fmt"
	"testing"
	"time"

	batchv1 "k8s.io/api/batch/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/event"

	"github.com/release-controller/release-controller/api/v1alpha1"
	"github.com/release-controller/release-controller/internal/devenv/jobstatus"
	"github.com/release-controller/release-controller/internal/verdict"
	"github.com/release-controller/release-controller/internal/verdict/verdicttest"
)

// TestComputedVerdictsAreTrusted: every status this controller computes is one every reader
// believes (verdict.Of gives its phase back). Were it not, a verdict the controller reached
// would be ignored as if someone had written it by hand. The scenarios cross the creation
// job's states, verification configurations, their runs, overrides, aborts and skipped
// upgrades.
func TestComputedVerdictsAreTrusted(t *testing.T) {
	now := metav1.NewTime(time.Date(2026, 11, 26, 12, 0, 0, 0, time.UTC))
	creations := map[string][]batchv1.Job{"no creation job": nil}
	for name, set := range map[string]func(*batchv1.Job){
		"building": func(j *batchv1.Job) { jobstatus.Running(j, now) },
		"built":    func(j *batchv1.Job) { jobstatus.Succeeded(j, now) },
		"failed":   func(j *batchv1.Job) { jobstatus.Failed(j, now, 1, "BackoffLimitExceeded", "push refused") },
	} {
		j := batchv1.Job{ObjectMeta: metav1.ObjectMeta{Name: "build"}}
		set(&j)
		creations[name] = []batchv1.Job{j}
	}
	configs := map[string][]v1alpha1.Verification{
		"none":       nil,
		"one":        {{Name: "e2e"}},
		"retried":    {{Name: "e2e", MaxRetries: 1}, {Name: "lint", Type: v1alpha1.Informing}},
		"upgrade":    {{Name: "e2e"}, {Name: "upgrade", UpgradeFrom: v1alpha1.UpgradeFromPrevious}},
		"aggregated": {{Name: "e2e", Aggregation: &v1alpha1.Aggregation{Runs: 3, PassRatio: 0.6}}},
	}
	runSets := map[string][]v1alpha1.JobState{
		"no runs":         nil,
		"running":         {v1alpha1.JobPending},
		"passed":          {v1alpha1.JobSuccess},
		"failed":          {v1alpha1.JobFailure},
		"failed, retried": {v1alpha1.JobFailure, v1alpha1.JobSuccess},
		"two failed":      {v1alpha1.JobFailure, v1alpha1.JobFailure},
		"three mixed":     {v1alpha1.JobSuccess, v1alpha1.JobFailure, v1alpha1.JobSuccess},
	}
	overrides := map[string]*v1alpha1.PayloadOverride{
		"no override": nil,
		"accepted":    {Override: v1alpha1.OverrideAccepted, Reason: "known flake"},
		"rejected":    {Override: v1alpha1.OverrideRejected, Reason: "bad"},
	}
	checked := map[v1alpha1.PayloadPhase]int{}
	for creationName, creation := range creations {
		for configName, config := range configs {
			for runsName, states := range runSets {
				for overrideName, override := range overrides {
					for _, aborted := range []string{"", "superseded"} {
						for _, skipped := range []bool{false, true} {
							p := &v1alpha1.ReleasePayload{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "4.15.0", Annotations: map[string]string{}}}
							p.Spec.PayloadVerificationConfig.Verifications = config
							p.Spec.PayloadOverride = override
							if aborted != "" {
								p.Annotations[v1alpha1.AnnotationAborted] = aborted
							}
							if skipped {
								p.Annotations[v1alpha1.AnnotationUpgradeSkipped] = "upgrade"
							}
							var observed []ObservedRun
							for _, v := range config {
								if skipped && v.Name == "upgrade" {
									continue
								}
								for i, state := range states {
									observed = append(observed, ObservedRun{Verification: v.Name, Run: run(int32(i+1), state)})
								}
							}
							name := fmt.Sprintf("%s/%s/%s/%s/aborted=%q/skipped=%v", creationName, configName, runsName, overrideName, aborted, skipped)
							// Twice: the second reconcile starts from the status the first wrote.
							for range 2 {
								p.Status = ComputeStatus(p, Observations{CreationJobs: creation, Runs: observed}, now)
							}
							if got := verdict.Of(p); got != p.Status.Phase {
								t.Errorf("%s: computed phase %s, read back as %s", name, p.Status.Phase, got)
							}
							checked[p.Status.Phase]++
						}
					}
				}
			}
		}
	}
	for _, phase := range []v1alpha1.PayloadPhase{v1alpha1.PhasePending, v1alpha1.PhaseReady, v1alpha1.PhaseAccepted, v1alpha1.PhaseRejected, v1alpha1.PhaseFailed} {
		if checked[phase] == 0 {
			t.Errorf("no scenario gives %s; the table misses a case", phase)
		}
	}
	t.Logf("checked: %v", checked)
}

// TestStatusOnlyUpdates: the payload watch drops status-only updates (this controller's own
// writes) but not one that writes a verdict its evidence does not give.
func TestStatusOnlyUpdates(t *testing.T) {
	waiting := verdicttest.Payload("ns", "s", "1.0.0", false)
	passed := verdicttest.Payload("ns", "s", "1.0.0", true)
	forged := verdicttest.HandWritten("ns", "s", "1.0.0", v1alpha1.PhaseAccepted)
	annotated := waiting.DeepCopy()
	annotated.Annotations = map[string]string{v1alpha1.AnnotationAborted: "superseded"}
	for _, tc := range []struct {
		name     string
		old, new *v1alpha1.ReleasePayload
		want     bool
	}{
		{"the controller's own verdict", waiting, passed, false},
		{"a verdict written by hand", waiting, forged, true},
		{"an annotation", waiting, annotated, true},
	} {
		if got := (ignoreStatusOnlyUpdates{}).Update(event.UpdateEvent{ObjectOld: tc.old, ObjectNew: tc.new}); got != tc.want {
			t.Errorf("%s: reconciled %v, want %v", tc.name, got, tc.want)
		}
	}
}
