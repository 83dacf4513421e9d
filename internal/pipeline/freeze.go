package pipeline

import (
	"fmt"
	"slices"
	"strings"
	"time"

	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"

	"github.com/release-controller/release-controller/api/v1alpha1"
	"github.com/release-controller/release-controller/internal/conditions"
	"github.com/release-controller/release-controller/internal/freeze"
)

// Freeze is a ReleaseFreeze or ClusterReleaseFreeze as the pipelines see it.
type Freeze struct {
	// Name is how the status names it (freeze.Name): namespace/name, or a
	// ClusterReleaseFreeze's name.
	Name string
	// Namespace of a ReleaseFreeze: it covers that namespace's pipelines only; "" for a
	// ClusterReleaseFreeze, which covers every namespace's.
	Namespace string
	Created   time.Time
	Spec      v1alpha1.ReleaseFreezeSpec
}

// FreezeOf is the Freeze of a ReleaseFreeze or a ClusterReleaseFreeze (namespace "").
func FreezeOf(namespace, name string, created metav1.Time, spec v1alpha1.ReleaseFreezeSpec) Freeze {
	return Freeze{Name: freeze.Name(namespace, name), Namespace: namespace, Created: created.Time, Spec: spec}
}

// Selects reports whether f may cover a pipeline of namespace with labels: f is of that
// namespace (or of the cluster) and its selector matches. A selector that is not one selects
// nothing (the freeze's status says why).
func (f Freeze) Selects(namespace string, pipelineLabels map[string]string) bool {
	if f.Namespace != "" && f.Namespace != namespace {
		return false
	}
	sel, err := freeze.Selector(f.Spec)
	return err == nil && sel.Matches(labels.Set(pipelineLabels))
}

// Frozen decides which environments of p the freezes hold at now: frozen[i] is environment
// i's record, nil when none holds it. A freeze holds an environment while its window is
// active, when it Selects p and names the environment (or none). One whose window cannot be
// read holds nothing (its status says why). Of several holding one environment, the record
// names the one that ends last (one without an end before all), so that its until says when
// the environment is free. wake is the next moment a freeze of p starts or ends (zero:
// none), when p is reconciled again. It is pure.
func Frozen(p *v1alpha1.Pipeline, freezes []Freeze, now time.Time) (frozen []*v1alpha1.FreezeRecord, wake time.Time) {
	frozen = make([]*v1alpha1.FreezeRecord, len(p.Spec.Environments))
	sooner := func(t time.Time) {
		if !t.IsZero() && (wake.IsZero() || t.Before(wake)) {
			wake = t
		}
	}
	for _, f := range freezes {
		if !f.Selects(p.Namespace, p.Labels) {
			continue
		}
		st, err := freeze.Window(f.Spec, f.Created, now)
		if err != nil {
			continue
		}
		sooner(freeze.Wake(st))
		if !st.Active {
			continue
		}
		rec := &v1alpha1.FreezeRecord{Freeze: f.Name, Reason: f.Spec.Reason}
		if !st.Until.IsZero() {
			until := metav1.NewTime(st.Until)
			rec.Until = &until
		}
		for i, env := range p.Spec.Environments {
			if len(f.Spec.Environments) > 0 && !slices.Contains(f.Spec.Environments, env.Name) {
				continue
			}
			if endsLater(rec, frozen[i]) {
				frozen[i] = rec.DeepCopy()
			}
		}
	}
	return frozen, wake
}

// endsLater reports whether record a holds longer than b (nil: holds nothing); ties go to the
// freeze named first, so that the record does not depend on the order freezes are listed in.
func endsLater(a, b *v1alpha1.FreezeRecord) bool {
	switch {
	case b == nil:
		return true
	case (a.Until == nil) != (b.Until == nil):
		return a.Until == nil
	case a.Until != nil && !a.Until.Equal(b.Until):
		return a.Until.After(b.Until.Time)
	}
	return a.Freeze < b.Freeze
}

// HoldFrozen sets each environment's frozen record (frozen[i], from Frozen) and drops the
// actions into frozen environments: a frozen environment is promoted nothing. It is pure.
func HoldFrozen(envs []v1alpha1.EnvironmentStatus, actions []Action, frozen []*v1alpha1.FreezeRecord) []Action {
	for i := range envs {
		envs[i].Frozen = nil
		if i < len(frozen) {
			envs[i].Frozen = frozen[i]
		}
	}
	return slices.DeleteFunc(actions, func(a Action) bool { return envs[a.Env].Frozen != nil })
}

// GateActions applies the freezes and the verifications' outcome to the planned actions:
// promotions into frozen environments are dropped first, then the rollbacks due are added. A
// rollback goes through a freeze: it returns the environment to the revision that last passed
// there, the state the freeze protects, and holding it would keep a revision known to fail
// running for the whole freeze. spec.suspend stops rollbacks too. It is pure.
func GateActions(p *v1alpha1.Pipeline, envs []v1alpha1.EnvironmentStatus, actions []Action, frozen []*v1alpha1.FreezeRecord) []Action {
	return VerificationActions(p, envs, HoldFrozen(envs, actions, frozen))
}

// SetFrozenCondition sets the pipeline's Frozen condition from envs: True naming each frozen
// environment, the freeze, its reason and until when; absent when none is frozen. It is pure
// but for the condition's transition time (now).
func SetFrozenCondition(conds *[]metav1.Condition, generation int64, envs []v1alpha1.EnvironmentStatus, now time.Time) {
	var msgs []string
	for _, e := range envs {
		if f := e.Frozen; f != nil {
			until := "until it is ended"
			if f.Until != nil {
				until = "until " + f.Until.UTC().Format(time.RFC3339)
			}
			msgs = append(msgs, fmt.Sprintf("%s frozen by %s %s: %s", e.Name, f.Freeze, until, f.Reason))
		}
	}
	if len(msgs) == 0 {
		meta.RemoveStatusCondition(conds, v1alpha1.ConditionFrozen)
		return
	}
	setCondition(conds, generation, v1alpha1.ConditionFrozen, metav1.ConditionTrue, v1alpha1.ReasonFreezeActive,
		conditions.Truncate(strings.Join(msgs, "; "), conditions.MaxMessageLength), now)
}
