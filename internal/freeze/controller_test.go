//go:build !unit

package freeze_test

import (
	"context"
	"fmt"
	"os"
	"slices"
	"strings"
	"testing"
	"time"

	// The zones on any machine, as in the binary.
	_ "time/tzdata"

	. "github.com/onsi/gomega"
	"go.uber.org/zap/zapcore"
	eventsv1 "k8s.io/api/events/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/log/zap"

	"github.com/release-controller/release-controller/api/v1alpha1"
	"github.com/release-controller/release-controller/internal/releaselog"
	"github.com/release-controller/release-controller/internal/testenv"
)

var env *testenv.Env

func TestMain(m *testing.M) {
	ctrl.SetLogger(zap.New(zap.WriteTo(os.Stderr), zap.Level(zapcore.ErrorLevel)))
	testenv.Main(m, &env, nil)
}

// waitTimeout bounds every wait: a deadline for a broken test, not a performance assertion.
const waitTimeout = 60 * time.Second

// waitFreeze waits until the freeze's status satisfies ok, and returns the status.
func waitFreeze(t *testing.T, obj client.Object, desc string, ok func(s *v1alpha1.ReleaseFreezeStatus) bool) *v1alpha1.ReleaseFreezeStatus {
	t.Helper()
	var status *v1alpha1.ReleaseFreezeStatus
	NewWithT(t).Eventually(func(g Gomega) {
		g.Expect(env.Client.Get(context.Background(), client.ObjectKeyFromObject(obj), obj)).To(Succeed())
		switch f := obj.(type) {
		case *v1alpha1.ReleaseFreeze:
			status = &f.Status
		case *v1alpha1.ClusterReleaseFreeze:
			status = &f.Status
		}
		g.Expect(ok(status)).To(BeTrue(), "%s; status: %+v", desc, status)
	}).WithTimeout(waitTimeout).WithPolling(100 * time.Millisecond).Should(Succeed())
	return status
}

func reason(s *v1alpha1.ReleaseFreezeStatus, typ string) string {
	if c := meta.FindStatusCondition(s.Conditions, typ); c != nil {
		return string(c.Status) + "/" + c.Reason
	}
	return ""
}

// freezeEntries are the release log's freeze entries of the freeze named version, "start …" or
// "end …" with their dates.
func freezeEntries(t *testing.T, logNS, version string) []string {
	t.Helper()
	var logs v1alpha1.ReleaseLogList
	if err := env.Client.List(context.Background(), &logs, client.InNamespace(logNS)); err != nil {
		t.Fatal(err)
	}
	var out []string
	for _, l := range logs.Items {
		for _, e := range l.Spec.Entries {
			if e.Type == releaselog.TypeFreeze && e.Version == version {
				out = append(out, e.Message)
			}
		}
	}
	return out
}

// eventReasons are the reasons of the Events about the object named name.
func eventReasons(t *testing.T, namespace, name string) []string {
	t.Helper()
	var list eventsv1.EventList
	if err := env.Client.List(context.Background(), &list, client.InNamespace(namespace)); err != nil {
		t.Fatal(err)
	}
	var out []string
	for _, e := range list.Items {
		if e.Regarding.Name == name {
			out = append(out, e.Reason)
		}
	}
	slices.Sort(out)
	return out
}

// TestStopTheLine: a freeze without an end is active from its creation, and its end set to now
// ends it; both moments are in the status, Events and the release log.
func TestStopTheLine(t *testing.T) {
	ctx := context.Background()
	logNS, ns := env.Namespace(t), env.Namespace(t)
	env.StartFreezes(t, logNS)

	f := &v1alpha1.ReleaseFreeze{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "incident-42"},
		Spec: v1alpha1.ReleaseFreezeSpec{Reason: "incident 42: payments down", Environments: []string{"prod"}}}
	if err := env.Client.Create(ctx, f); err != nil {
		t.Fatal(err)
	}
	s := waitFreeze(t, f, "active", func(s *v1alpha1.ReleaseFreezeStatus) bool {
		return reason(s, v1alpha1.ConditionFreezeActive) == "True/"+v1alpha1.ReasonInWindow && reason(s, v1alpha1.ConditionReady) == "True/"+v1alpha1.ReasonFreezeRead
	})
	g := NewWithT(t)
	g.Expect(s.ActiveSince.Time).To(Equal(f.CreationTimestamp.Time))
	g.Expect(s.ActiveUntil).To(BeNil())
	g.Expect(s.NextStart).To(BeNil())
	name := ns + "/incident-42"
	g.Eventually(func() []string { return freezeEntries(t, logNS, name) }).WithTimeout(waitTimeout).Should(ConsistOf(
		"freeze " + name + " started: incident 42: payments down; every pipeline, environments prod, until it is ended"))

	// Ended (what `release-controller freeze end` does): over, kept for the record.
	end := metav1.NewTime(time.Now().Truncate(time.Second))
	f.Spec.End = &end
	g.Expect(env.Client.Update(ctx, f)).To(Succeed())
	s = waitFreeze(t, f, "ended", func(s *v1alpha1.ReleaseFreezeStatus) bool {
		return reason(s, v1alpha1.ConditionFreezeActive) == "False/"+v1alpha1.ReasonFreezeEnded
	})
	g.Expect(s.ActiveUntil.Time).To(BeTemporally("==", end.Time))
	g.Expect(s.ActiveSince.Time).To(Equal(f.CreationTimestamp.Time))
	g.Eventually(func() []string { return freezeEntries(t, logNS, name) }).WithTimeout(waitTimeout).Should(ConsistOf(
		"freeze "+name+" started: incident 42: payments down; every pipeline, environments prod, until it is ended",
		"freeze "+name+" ended: incident 42: payments down"))
	g.Eventually(func() []string { return eventReasons(t, ns, "incident-42") }).WithTimeout(waitTimeout).Should(Equal(
		[]string{v1alpha1.EventFreezeEnded, v1alpha1.EventFreezeStarted}))
}

// TestClusterFreezeComesBackAtItsBoundaries: a ClusterReleaseFreeze of a window a few seconds
// ahead starts and ends with nothing else happening to it: the controller comes back at each
// boundary (RequeueAfter), and logs both.
func TestClusterFreezeComesBackAtItsBoundaries(t *testing.T) {
	ctx := context.Background()
	logNS := env.Namespace(t)
	env.StartFreezes(t, logNS)
	start := metav1.NewTime(time.Now().Add(2 * time.Second).Truncate(time.Second))
	end := metav1.NewTime(start.Add(2 * time.Second))
	f := &v1alpha1.ClusterReleaseFreeze{ObjectMeta: metav1.ObjectMeta{Name: "window-" + strings.TrimPrefix(logNS, "test-")},
		Spec: v1alpha1.ReleaseFreezeSpec{Reason: "release day", Start: &start, End: &end,
			Pipelines: &metav1.LabelSelector{MatchLabels: map[string]string{"tier": "web"}}}}
	if err := env.Client.Create(ctx, f); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = env.Client.Delete(ctx, f) })
	g := NewWithT(t)
	s := waitFreeze(t, f, "ended", func(s *v1alpha1.ReleaseFreezeStatus) bool {
		return reason(s, v1alpha1.ConditionFreezeActive) == "False/"+v1alpha1.ReasonFreezeEnded
	})
	g.Expect(s.ActiveSince.Time).To(BeTemporally("==", start.Time))
	g.Expect(s.ActiveUntil.Time).To(BeTemporally("==", end.Time))
	g.Eventually(func() []string { return freezeEntries(t, logNS, f.Name) }).WithTimeout(waitTimeout).Should(ConsistOf(
		fmt.Sprintf("freeze %s started: release day; the pipelines tier=web, every environment, until %s", f.Name, end.UTC().Format(time.RFC3339)),
		"freeze "+f.Name+" ended: release day"))
}

// TestScheduleInAZone: a recurring freeze shows its next window; one whose zone is unknown is
// not Ready and Stalled, naming the field.
func TestScheduleInAZone(t *testing.T) {
	ctx := context.Background()
	logNS, ns := env.Namespace(t), env.Namespace(t)
	env.StartFreezes(t, logNS)
	weekend := func(name, zone string) *v1alpha1.ReleaseFreeze {
		f := &v1alpha1.ReleaseFreeze{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name},
			Spec: v1alpha1.ReleaseFreezeSpec{Reason: "weekend", Schedule: &v1alpha1.FreezeSchedule{
				Cron: "0 18 * * 5", Duration: metav1.Duration{Duration: 63 * time.Hour}, TimeZone: zone}}}
		if err := env.Client.Create(ctx, f); err != nil {
			t.Fatal(err)
		}
		return f
	}
	berlin := weekend("weekend", "Europe/Berlin")
	s := waitFreeze(t, berlin, "read", func(s *v1alpha1.ReleaseFreezeStatus) bool {
		return reason(s, v1alpha1.ConditionReady) == "True/"+v1alpha1.ReasonFreezeRead
	})
	loc, err := time.LoadLocation("Europe/Berlin")
	if err != nil {
		t.Fatal(err)
	}
	g := NewWithT(t)
	if reason(s, v1alpha1.ConditionFreezeActive) == "True/"+v1alpha1.ReasonInWindow {
		// The test runs on a weekend.
		g.Expect(s.ActiveUntil.In(loc).Weekday()).To(Equal(time.Monday))
		g.Expect(s.ActiveUntil.In(loc).Hour()).To(Equal(9))
	} else {
		g.Expect(reason(s, v1alpha1.ConditionFreezeActive)).To(Equal("False/" + v1alpha1.ReasonOutsideWindow))
	}
	next := s.NextStart.In(loc)
	g.Expect([]any{next.Weekday(), next.Hour(), next.Minute()}).To(Equal([]any{time.Friday, 18, 0}))

	mars := weekend("mars", "Mars/Olympus_Mons")
	s = waitFreeze(t, mars, "invalid", func(s *v1alpha1.ReleaseFreezeStatus) bool {
		return reason(s, v1alpha1.ConditionReady) == "False/"+v1alpha1.ReasonInvalidFreeze
	})
	g.Expect(meta.FindStatusCondition(s.Conditions, v1alpha1.ConditionReady).Message).To(ContainSubstring(`spec.schedule.timeZone: unknown time zone "Mars/Olympus_Mons"`))
	g.Expect(reason(s, v1alpha1.ConditionStalled)).To(Equal("True/" + v1alpha1.ReasonInvalidFreeze))
	g.Expect(reason(s, v1alpha1.ConditionFreezeActive)).To(Equal("False/" + v1alpha1.ReasonInvalidFreeze))
	g.Expect(meta.FindStatusCondition(s.Conditions, v1alpha1.ConditionReconciling)).To(BeNil())
}
