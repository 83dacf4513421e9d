package logcontroller

import (
	"errors"
	"fmt"
	"strings"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/release-controller/release-controller/api/v1alpha1"
	"github.com/release-controller/release-controller/internal/conditions"
	"github.com/release-controller/release-controller/internal/releaselog"
)

// DesiredStatus is the status a ReleaseLog should have: its entries counted at its current
// generation, and the Valid condition saying whether its name parsed as a day that has begun
// (nameErr is the parse error or releaselog.CheckBegun's, nil when neither failed). now stamps
// a condition that changes.
func DesiredStatus(l *v1alpha1.ReleaseLog, nameErr error, now time.Time) v1alpha1.ReleaseLogStatus {
	status := *l.Status.DeepCopy()
	status.EntryCount = int32(len(l.Spec.Entries))
	status.ObservedGeneration = l.Generation
	valid := metav1.Condition{
		Type: v1alpha1.ConditionReleaseLogValid, Status: metav1.ConditionTrue, Reason: v1alpha1.ReasonValidDay,
		Message: fmt.Sprintf("holds the entries of %s (UTC)", strings.TrimPrefix(l.Name, releaselog.NamePrefix)), ObservedGeneration: l.Generation,
		LastTransitionTime: metav1.NewTime(now),
	}
	switch {
	case errors.Is(nameErr, releaselog.ErrDayNotBegun):
		valid.Status, valid.Reason = metav1.ConditionFalse, v1alpha1.ReasonFutureDay
		valid.Message = "metadata.name: " + nameErr.Error()
	case nameErr != nil:
		valid.Status, valid.Reason = metav1.ConditionFalse, v1alpha1.ReasonInvalidDay
		valid.Message = nameErr.Error() + "; the object is neither shown nor expired: recreate it under a valid name"
	}
	// The transition time stays when the status stays the same.
	conditions.Set(&status.Conditions, valid)
	return status
}
