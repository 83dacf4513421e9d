//go:build !unit

package releaselog_test

import (
	"context"
	"os"
	"slices"
	"strings"
	"testing"
	"time"

	. "github.com/onsi/gomega"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/yaml"
	clocktesting "k8s.io/utils/clock/testing"

	"github.com/release-controller/release-controller/api/v1alpha1"
	"github.com/release-controller/release-controller/internal/releaselog"
)

func versions(entries []releaselog.Entry) []string {
	var v []string
	for _, e := range entries {
		v = append(v, e.Version)
	}
	return v
}

func TestExpiredDaysAreDeleted(t *testing.T) {
	ns := env.Namespace(t)
	clock := clocktesting.NewFakeClock(at("2026-03-31T12:00:00Z"))
	c := start(t, ns, releaselog.Options{Namespace: ns, TTL: 30 * 24 * time.Hour, Clock: clock})

	// At 2026-03-31T12:00 with 30 days, 03-01 expired at 03-31T00:00; 03-02 goes at 04-01T00:00.
	createLog(t, ns, "release-2026-03-01", apiEntry("1.0.0", "2026-03-01T10:00:00Z"))
	createLog(t, ns, "release-2026-03-02", apiEntry("1.0.1", "2026-03-02T10:00:00Z"), apiEntry("1.0.2", "2026-03-02T11:00:00Z"))
	waitGone(t, ns, "release-2026-03-01")
	live := waitLog(t, ns, "release-2026-03-02", func(g Gomega, l *v1alpha1.ReleaseLog) {
		g.Expect(l.Status.EntryCount).To(BeEquivalentTo(2))
		g.Expect(l.Status.ObservedGeneration).To(Equal(l.Generation))
		g.Expect(meta.IsStatusConditionTrue(l.Status.Conditions, v1alpha1.ConditionReleaseLogValid)).To(BeTrue())
	})
	eventually(t, func(g Gomega) { g.Expect(c.Store.Days()).To(Equal([]string{"2026-03-02"})) })

	// At its expiry the day goes. Any event wakes the controller up now; the annotation makes
	// sure there is one, as the requeue at expiry would with a real clock.
	clock.SetTime(at("2026-04-01T00:00:00Z"))
	err := updateLog(live, func(l *v1alpha1.ReleaseLog) { l.Annotations = map[string]string{"example.com/touched": "yes"} })
	if err != nil && !apierrors.IsNotFound(err) {
		t.Fatal(err)
	}
	waitGone(t, ns, "release-2026-03-02")
	eventually(t, func(g Gomega) { g.Expect(c.Store.Days()).To(BeEmpty()) })
}

func TestEntriesAreProjectedIntoTheStore(t *testing.T) {
	ns := env.Namespace(t)
	clock := clocktesting.NewFakeClock(at("2026-05-10T12:00:00Z"))
	c := start(t, ns, releaselog.Options{Namespace: ns, Clock: clock})

	createLog(t, ns, "release-2026-05-09",
		apiEntry("late", "2026-05-09T22:00:00Z"), apiEntry("early", "2026-05-09T01:00:00Z"), apiEntry("noon", "2026-05-09T12:00:00Z"))
	createLog(t, ns, "release-2026-05-10", apiEntry("today", "2026-05-10T08:00:00Z"))
	createLog(t, ns, "release-2026-05-01", apiEntry("old", "2026-05-01T08:00:00Z"))
	eventually(t, func(g Gomega) {
		g.Expect(c.Store.Days()).To(Equal([]string{"2026-05-10", "2026-05-09", "2026-05-01"}))
		g.Expect(versions(c.Store.Entries("2026-05-09"))).To(Equal([]string{"early", "noon", "late"}))
	})
	got := c.Store.Entries("2026-05-10")[0]
	if got.Type != "release" || got.Origin != "test" || !got.Date.Equal(at("2026-05-10T08:00:00Z")) {
		t.Errorf("projected entry %+v", got)
	}
	if previous, next := c.Store.Adjacent("2026-05-09"); previous != "2026-05-01" || next != "2026-05-10" {
		t.Errorf("Adjacent(2026-05-09) = %s, %s", previous, next)
	}

	// An entry added to the object shows in the store.
	l := &v1alpha1.ReleaseLog{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "release-2026-05-09"}}
	if err := updateLog(l, func(l *v1alpha1.ReleaseLog) {
		l.Spec.Entries = append(l.Spec.Entries, apiEntry("morning", "2026-05-09T07:00:00Z"))
	}); err != nil {
		t.Fatal(err)
	}
	eventually(t, func(g Gomega) {
		g.Expect(versions(c.Store.Entries("2026-05-09"))).To(Equal([]string{"early", "morning", "noon", "late"}))
	})

	// Deleting the object removes the day.
	if err := env.Client.Delete(context.Background(), l); err != nil {
		t.Fatal(err)
	}
	eventually(t, func(g Gomega) { g.Expect(c.Store.Days()).To(Equal([]string{"2026-05-10", "2026-05-01"})) })
	if c.Store.Entries("2026-05-09") != nil {
		t.Error("the deleted day still has entries")
	}
}

func TestStoreIsRebuiltOnStart(t *testing.T) {
	ns := env.Namespace(t)
	clock := clocktesting.NewFakeClock(at("2026-05-10T12:00:00Z"))
	createLog(t, ns, "release-2026-05-08", apiEntry("a", "2026-05-08T01:00:00Z"))
	createLog(t, ns, "release-2026-05-09", apiEntry("b", "2026-05-09T01:00:00Z"), apiEntry("c", "2026-05-09T02:00:00Z"))
	c := start(t, ns, releaselog.Options{Namespace: ns, Clock: clock})
	eventually(t, func(g Gomega) {
		g.Expect(c.Store.Days()).To(Equal([]string{"2026-05-09", "2026-05-08"}))
		g.Expect(versions(c.Store.Entries("2026-05-09"))).To(Equal([]string{"b", "c"}))
	})
}

func TestANameThatIsNotADayIsReportedAndLeftAlone(t *testing.T) {
	ns := env.Namespace(t)
	// Long after the day the name would name: a valid day would be deleted.
	clock := clocktesting.NewFakeClock(at("2027-01-01T00:00:00Z"))
	c := start(t, ns, releaselog.Options{Namespace: ns, Clock: clock})

	// The admission rule checks the shape; the controller finds that February has no 30th.
	createLog(t, ns, "release-2026-02-30", apiEntry("1.0.0", "2026-02-28T10:00:00Z"))
	createLog(t, ns, "release-2026-12-31", apiEntry("1.0.1", "2026-12-31T10:00:00Z"))
	l := waitLog(t, ns, "release-2026-02-30", func(g Gomega, l *v1alpha1.ReleaseLog) {
		c := meta.FindStatusCondition(l.Status.Conditions, v1alpha1.ConditionReleaseLogValid)
		g.Expect(c).NotTo(BeNil())
		g.Expect(c.Status).To(Equal(metav1.ConditionFalse))
		g.Expect(c.Reason).To(Equal(v1alpha1.ReasonInvalidDay))
		g.Expect(c.Message).To(ContainSubstring("day out of range"))
	})
	if !l.DeletionTimestamp.IsZero() {
		t.Error("the object is being deleted")
	}
	// The valid day is projected; the invalid one never is.
	eventually(t, func(g Gomega) { g.Expect(c.Store.Days()).To(Equal([]string{"2026-12-31"})) })
}

func TestAdmission(t *testing.T) {
	ns := env.Namespace(t)
	valid := func() *v1alpha1.ReleaseLog {
		return &v1alpha1.ReleaseLog{
			ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "release-2026-03-25"},
			Spec:       v1alpha1.ReleaseLogSpec{Entries: []v1alpha1.ReleaseLogEntry{apiEntry("1.0.0", "2026-03-25T10:00:00Z")}},
		}
	}
	const linkMessage = "link must be an http(s) URL (https://host/...) or an absolute path (/...)"
	rejected := []struct {
		name   string
		mutate func(l *v1alpha1.ReleaseLog)
		want   string
	}{
		{"name without a day", func(l *v1alpha1.ReleaseLog) { l.Name = "release-yesterday" }, "metadata.name must be release-YYYY-MM-DD"},
		{"another prefix", func(l *v1alpha1.ReleaseLog) { l.Name = "log-2026-03-25" }, "metadata.name must be release-YYYY-MM-DD"},
		{"no type", func(l *v1alpha1.ReleaseLog) { l.Spec.Entries[0].Type = "" }, "spec.entries[0].type"},
		{"no version", func(l *v1alpha1.ReleaseLog) { l.Spec.Entries[0].Version = "" }, "spec.entries[0].version"},
		{"no origin", func(l *v1alpha1.ReleaseLog) { l.Spec.Entries[0].Origin = "" }, "spec.entries[0].origin"},
		{"message too long", func(l *v1alpha1.ReleaseLog) { l.Spec.Entries[0].Message = strings.Repeat("x", 1025) }, "may not be more than 1024"},
		{"ftp link", func(l *v1alpha1.ReleaseLog) { l.Spec.Entries[0].Link = "ftp://example.com/x" }, linkMessage},
		{"script link", func(l *v1alpha1.ReleaseLog) { l.Spec.Entries[0].Link = "javascript:alert(1)" }, linkMessage},
		{"relative link", func(l *v1alpha1.ReleaseLog) { l.Spec.Entries[0].Link = "releases/x" }, linkMessage},
		{"protocol-relative link", func(l *v1alpha1.ReleaseLog) { l.Spec.Entries[0].Link = "//example.com/x" }, linkMessage},
		{"link without host", func(l *v1alpha1.ReleaseLog) { l.Spec.Entries[0].Link = "https:///x" }, linkMessage},
	}
	for _, tt := range rejected {
		t.Run(tt.name, func(t *testing.T) {
			l := valid()
			tt.mutate(l)
			err := env.Client.Create(context.Background(), l)
			if err == nil {
				t.Fatalf("admitted; want an error containing %q", tt.want)
			}
			NewWithT(t).Expect(err.Error()).To(ContainSubstring(tt.want))
		})
	}
	for i, link := range []string{"https://ci.example.com/job/1?x=y#z", "http://localhost:8080/releases", "/releases/demo/nightly/4.15.0-0.nightly-2026-03-25-093000"} {
		l := valid()
		l.Name = "release-2026-03-2" + string(rune('0'+i))
		l.Spec.Entries[0].Link = link
		if err := env.Client.Create(context.Background(), l); err != nil {
			t.Errorf("link %s refused: %v", link, err)
		}
	}
}

func TestSampleIsAdmitted(t *testing.T) {
	ns := env.Namespace(t)
	l := readSample(t)
	l.Namespace = ns
	if err := env.Client.Create(context.Background(), l); err != nil {
		t.Fatalf("the sample is not admitted: %v", err)
	}
	if !slices.ContainsFunc(l.Spec.Entries, func(e v1alpha1.ReleaseLogEntry) bool { return e.Link != "" }) {
		t.Error("the sample shows no link")
	}
}

func readSample(t *testing.T) *v1alpha1.ReleaseLog {
	t.Helper()
	data, err := os.ReadFile("../../config/samples/releaselog.yaml")
	if err != nil {
		t.Fatal(err)
	}
	var l v1alpha1.ReleaseLog
	if err := yaml.UnmarshalStrict(data, &l); err != nil {
		t.Fatalf("parsing the sample: %v", err)
	}
	return &l
}
