package stream

// Steps 6 and 7 of a pass: record finished upgrades in the upgrade graph, and move the
// publish tags to the newest accepted payload.

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/release-controller/release-controller/api/v1alpha1"
	"github.com/release-controller/release-controller/internal/upgradegraph"
)

// recordUpgrades keeps every finished upgrade run in the stream's upgrade graph, a ConfigMap
// the stream owns (labelled release-controller.dev/stream=<stream>). A ConfigMap of that name
// that is not the stream's is left alone: the UpgradeGraphRecorded condition says so and the
// pass fails, so it is retried with backoff, not in a loop.
func (s *streamSync) recordUpgrades(ctx context.Context) {
	key := types.NamespacedName{Namespace: s.stream.Namespace, Name: upgradegraph.ConfigMapName(s.stream.Name)}
	failed := func(reason, message string, err error) {
		s.pass.UpgradeGraph = &graphOutcome{Reason: reason, Message: message}
		failReason := reason
		if reason == v1alpha1.ReasonUpgradeGraphWriteFailed {
			failReason = v1alpha1.ReasonReconcileFailed
		}
		s.fail(s.stream, failReason, "RecordUpgrades", "recording upgrade results in ConfigMap "+key.Name, err)
	}
	notOwned := func(why string) {
		err := fmt.Errorf("ConfigMap %s %s; the controller leaves it alone: delete or rename it to record upgrade results", key.Name, why)
		failed(v1alpha1.ReasonUpgradeGraphNotOwned, err.Error(), err)
	}
	// The cache holds only ConfigMaps labelled with a stream: a hand-made one is not found here
	// and is told apart by the create that fails.
	cm := &corev1.ConfigMap{}
	var graph upgradegraph.Graph
	exists := true
	switch err := s.r.Get(ctx, key, cm); {
	case apierrors.IsNotFound(err):
		exists = false
	case err != nil:
		failed(v1alpha1.ReasonUpgradeGraphWriteFailed, "reading the upgrade graph failed: "+err.Error(), err)
		return
	case cm.Labels[v1alpha1.LabelStream] != s.stream.Name:
		notOwned(fmt.Sprintf("belongs to stream %q (label %s)", cm.Labels[v1alpha1.LabelStream], v1alpha1.LabelStream))
		return
	default:
		if data := cm.Data[upgradegraph.Key]; data != "" {
			if err := json.Unmarshal([]byte(data), &graph); err != nil {
				failed(v1alpha1.ReasonUpgradeGraphUnreadable, fmt.Sprintf("key %s of ConfigMap %s is not an upgrade graph: %v", upgradegraph.Key, key.Name, err), err)
				return
			}
		}
	}
	upToDate := &graphOutcome{Reason: v1alpha1.ReasonUpgradeGraphUpToDate, Message: "upgrade results are recorded in ConfigMap " + key.Name}
	updated, changed := upgradegraph.Record(graph, s.payloads)
	if !changed {
		if exists {
			s.pass.UpgradeGraph = upToDate
		}
		return
	}
	data, err := json.Marshal(updated)
	if err != nil {
		failed(v1alpha1.ReasonUpgradeGraphWriteFailed, "encoding the upgrade graph failed: "+err.Error(), err)
		return
	}
	if !exists {
		cm = &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: key.Namespace, Name: key.Name,
			Labels: map[string]string{v1alpha1.LabelStream: s.stream.Name}}}
		cm.Data = map[string]string{upgradegraph.Key: string(data)}
		err = s.r.Create(ctx, cm)
		if apierrors.IsAlreadyExists(err) {
			notOwned(fmt.Sprintf("exists without the label %s=%s", v1alpha1.LabelStream, s.stream.Name))
			return
		}
	} else {
		if cm.Data == nil {
			cm.Data = map[string]string{}
		}
		cm.Data[upgradegraph.Key] = string(data)
		err = s.r.Update(ctx, cm)
		if apierrors.IsConflict(err) {
			s.requeue(time.Second) // the cache is behind: the next pass reads the graph again
			return
		}
	}
	if err != nil {
		failed(v1alpha1.ReasonUpgradeGraphWriteFailed, "writing the upgrade graph failed: "+err.Error(), err)
		return
	}
	s.pass.UpgradeGraph = upToDate
}

// publish points the stream's publish tags at the newest accepted payload.
func (s *streamSync) publish(ctx context.Context) {
	newest := NewestAccepted(s.payloads)
	if newest == nil || len(s.stream.Spec.PublishTags) == 0 {
		return
	}
	if s.stream.Status.PublishedImage == newest.Status.PayloadImage {
		s.pass.Published = newest.Status.PayloadImage
		return
	}
	for _, tag := range s.stream.Spec.PublishTags {
		if err := s.r.Registry.Tag(ctx, newest.Status.PayloadImage, tag); err != nil {
			s.fail(s.stream, v1alpha1.ReasonPublishFailed, "Publish", fmt.Sprintf("publishing %s as %s", newest.Name, tag), err)
			return
		}
	}
	s.pass.Published = newest.Status.PayloadImage
	s.r.report.Eventf(ctx, s.stream, newest, v1alpha1.EventPublished, "Publish", "moved the tags %s to payload %s (%s)",
		strings.Join(s.stream.Spec.PublishTags, ", "), newest.Name, newest.Status.PayloadImage)
}
