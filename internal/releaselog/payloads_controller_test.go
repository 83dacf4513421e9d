//go:build !unit

package releaselog_test

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	. "github.com/onsi/gomega"
	"github.com/prometheus/client_golang/prometheus/testutil"
	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	eventsv1 "k8s.io/api/events/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/metrics"

	"github.com/release-controller/release-controller/api/v1alpha1"
	"github.com/release-controller/release-controller/internal/devenv/jobstatus"
	"github.com/release-controller/release-controller/internal/releaselog"
	"github.com/release-controller/release-controller/internal/releaselog/logcontroller"
)

// decidedPayload creates a payload whose override decides it and lets its creation job
// succeed, so the payload controller gives it the override's verdict.
func decidedPayload(t *testing.T, ns, tag string, verdict v1alpha1.PayloadOverrideType) {
	t.Helper()
	ctx := context.Background()
	p := &v1alpha1.ReleasePayload{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: tag},
		Spec: v1alpha1.ReleasePayloadSpec{
			PayloadCoordinates: v1alpha1.PayloadCoordinates{Stream: "nightly", Tag: tag},
			Components: []v1alpha1.PinnedComponent{{Name: "api",
				Image: "registry.example.com/product/api@sha256:" + fmt.Sprintf("%064x", 1)}},
			PayloadCreationConfig: v1alpha1.PayloadCreationConfig{Repository: "registry.example.com/product/release"},
			PayloadOverride:       &v1alpha1.PayloadOverride{Override: verdict, Reason: "decided by the test"},
		},
	}
	if err := env.Client.Create(ctx, p); err != nil {
		t.Fatalf("creating payload %s: %v", tag, err)
	}
	job := &batchv1.Job{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "create-" + tag, Labels: map[string]string{
			v1alpha1.LabelStream: "nightly", v1alpha1.LabelPayload: tag, v1alpha1.LabelJobType: v1alpha1.JobTypeCreation,
		}},
		Spec: batchv1.JobSpec{Template: corev1.PodTemplateSpec{Spec: corev1.PodSpec{
			RestartPolicy: corev1.RestartPolicyNever,
			Containers:    []corev1.Container{{Name: "build", Image: "release-controller:latest"}},
		}}},
	}
	if err := env.Client.Create(ctx, job); err != nil {
		t.Fatalf("creating the creation job: %v", err)
	}
	jobstatus.Succeeded(job, metav1.NewTime(time.Now().Truncate(time.Second)))
	if err := env.Client.Status().Update(ctx, job); err != nil {
		t.Fatalf("finishing the creation job: %v", err)
	}
}

// waitVerdict waits for the payload's phase and returns the entry that logs it.
func waitVerdict(t *testing.T, ns, tag string, phase v1alpha1.PayloadPhase) releaselog.Entry {
	t.Helper()
	var p v1alpha1.ReleasePayload
	eventually(t, func(g Gomega) {
		g.Expect(env.Client.Get(context.Background(), types.NamespacedName{Namespace: ns, Name: tag}, &p)).To(Succeed())
		g.Expect(p.Status.Phase).To(Equal(phase))
	})
	e, ok := releaselog.PayloadEntry(&p)
	if !ok {
		t.Fatalf("payload %s is %s but has no entry", tag, phase)
	}
	return e
}

// liveEntries reads a day's entries from the API server.
func liveEntries(t *testing.T, ns, day string) []v1alpha1.ReleaseLogEntry {
	t.Helper()
	l, err := getLog(ns, releaselog.ObjectName(day))
	if err != nil {
		t.Fatal(err)
	}
	return l.Spec.Entries
}

func TestAcceptedAndRejectedPayloadsAreLoggedOnce(t *testing.T) {
	ns := env.Namespace(t)
	// The allowlist does not hold the controller's own types: its entries are written anyway.
	c := start(t, ns, releaselog.Options{Namespace: ns, Types: []releaselog.TypeConfig{{Name: "promotion", Color: "blue"}}})

	const accepted, rejected = "4.15.0-0.nightly-2026-06-15-093000", "4.15.0-0.nightly-2026-06-15-103000"
	decidedPayload(t, ns, accepted, v1alpha1.OverrideAccepted)
	decidedPayload(t, ns, rejected, v1alpha1.OverrideRejected)
	want := []releaselog.Entry{waitVerdict(t, ns, accepted, v1alpha1.PhaseAccepted), waitVerdict(t, ns, rejected, v1alpha1.PhaseRejected)}

	for _, w := range want {
		eventually(t, func(g Gomega) { g.Expect(c.Store.HasEntry(releaselog.DayOf(w.Date), w.ID)).To(BeTrue()) })
		var got *releaselog.Entry
		for _, e := range c.Store.Entries(releaselog.DayOf(w.Date)) {
			if e.ID == w.ID {
				got = &e
			}
		}
		if got.Type != w.Type || got.Version != w.Version || got.Origin != releaselog.ControllerOrigin || got.Author != releaselog.ControllerOrigin ||
			got.Link != "/namespaces/"+ns+"/releasestream/nightly/release/"+w.Version || got.Message == "" || !got.Date.Equal(w.Date) {
			t.Errorf("logged %+v\nwant    %+v", *got, w)
		}
	}
	if want[0].Type != releaselog.TypeRelease || want[1].Type != releaselog.TypeRejected {
		t.Errorf("types %s, %s; want release, rejected", want[0].Type, want[1].Type)
	}

	// A restarted controller replays every payload; the log keeps one entry per verdict.
	c.Stop()
	before := testutil.ToFloat64(logcontroller.PayloadEntries.WithLabelValues("present"))
	restarted := start(t, ns, releaselog.Options{Namespace: ns})
	eventually(t, func(g Gomega) {
		g.Expect(testutil.ToFloat64(logcontroller.PayloadEntries.WithLabelValues("present")) - before).To(BeNumerically(">=", 2))
	})
	for _, w := range want {
		count := 0
		for _, e := range liveEntries(t, ns, releaseDay(w)) {
			if e.ID == w.ID {
				count++
			}
		}
		if count != 1 {
			t.Errorf("the verdict on %s is logged %d times after the restart, want once", w.Version, count)
		}
	}
	days := map[string]int{}
	for _, w := range want {
		days[releaseDay(w)]++
	}
	for day, n := range days {
		if got := len(liveEntries(t, ns, day)); got != n {
			t.Errorf("%s holds %d entries, want %d", day, got, n)
		}
		eventually(t, func(g Gomega) { g.Expect(restarted.Store.Entries(day)).To(HaveLen(n)) })
	}
}

func releaseDay(e releaselog.Entry) string { return releaselog.DayOf(e.Date) }

func TestAVerdictTheFullDayCannotTakeIsReportedOnce(t *testing.T) {
	ns := env.Namespace(t)
	c := start(t, ns, releaselog.Options{Namespace: ns, MaxEntriesPerDay: 1})
	fullBefore := testutil.ToFloat64(logcontroller.PayloadEntries.WithLabelValues("full"))
	errorsBefore := reconcileErrors(t, "releaselog-payloads")

	// Today and tomorrow (UTC) are full already: the verdict, dated when it comes, falls on
	// one of them even when the test runs across midnight.
	now := time.Now().UTC()
	for _, date := range []time.Time{now, now.Add(24 * time.Hour)} {
		day := releaselog.DayOf(date)
		full := &v1alpha1.ReleaseLog{
			ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: releaselog.ObjectName(day)},
			Spec: v1alpha1.ReleaseLogSpec{Entries: []v1alpha1.ReleaseLogEntry{{
				ID: "hotfix-" + day, Type: "hotfix", Version: "1.0.1", Origin: "test", Date: metav1.NewTime(date.Truncate(time.Second)),
			}}},
		}
		if err := env.Client.Create(context.Background(), full); err != nil {
			t.Fatalf("filling %s: %v", day, err)
		}
		// The writer reads the day from the manager's cache (the store does not show tomorrow
		// before it begins).
		eventually(t, func(g Gomega) {
			var cached v1alpha1.ReleaseLog
			g.Expect(c.Client.Get(context.Background(), client.ObjectKeyFromObject(full), &cached)).To(Succeed())
		})
	}

	const second = "4.15.0-0.nightly-2026-06-15-103000"
	decidedPayload(t, ns, second, v1alpha1.OverrideRejected)
	refused := waitVerdict(t, ns, second, v1alpha1.PhaseRejected)
	// The payload says why its verdict is missing from the log, and so do the metrics.
	var ev eventsv1.Event
	eventually(t, func(g Gomega) {
		var list eventsv1.EventList
		g.Expect(env.Client.List(context.Background(), &list, client.InNamespace(ns))).To(Succeed())
		found := false
		for _, e := range list.Items {
			if e.Regarding.Kind == "ReleasePayload" && e.Regarding.Name == second && e.Reason == v1alpha1.EventReleaseLogFull {
				ev, found = e, true
			}
		}
		g.Expect(found).To(BeTrue(), "no %s event on %s", v1alpha1.EventReleaseLogFull, second)
	})
	if ev.Type != corev1.EventTypeWarning || !strings.Contains(ev.Note, "Rejected verdict is not in the release log") || !strings.Contains(ev.Note, "limit of 1 entries a day (--log-max-entries)") {
		t.Errorf("event %s %q", ev.Type, ev.Note)
	}
	eventually(t, func(g Gomega) {
		g.Expect(testutil.ToFloat64(logcontroller.PayloadEntries.WithLabelValues("full")) - fullBefore).To(BeNumerically(">=", 1))
	})
	// No retry: the reconcile succeeded, there is nothing to try again.
	if n := reconcileErrors(t, "releaselog-payloads") - errorsBefore; n != 0 {
		t.Errorf("%v reconcile errors of the payload entries", n)
	}
	if entries := liveEntries(t, ns, releaseDay(refused)); len(entries) != 1 || entries[0].Type != "hotfix" {
		t.Errorf("the day holds %v, want only the entry that filled it", entries)
	}
}

// reconcileErrors reads controller-runtime's count of a controller's failed reconciles.
func reconcileErrors(t *testing.T, controller string) float64 {
	t.Helper()
	families, err := metrics.Registry.Gather()
	if err != nil {
		t.Fatal(err)
	}
	for _, f := range families {
		if f.GetName() != "controller_runtime_reconcile_errors_total" {
			continue
		}
		for _, m := range f.GetMetric() {
			for _, l := range m.GetLabel() {
				if l.GetName() == "controller" && l.GetValue() == controller {
					return m.GetCounter().GetValue()
				}
			}
		}
	}
	return 0
}
