//go:build !unit

package releaselog_test

import (
	"bytes"
	"context"
	"errors"
	"strings"
	"testing"

	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	clocktesting "k8s.io/utils/clock/testing"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/release-controller/release-controller/api/v1alpha1"
	"github.com/release-controller/release-controller/internal/releaselog"
)

// Entries the writer adds are sealed and read back as verified; an entry written directly into
// a ReleaseLog, naming the controller as its author, is not, nor is a sealed entry someone
// edited afterwards.
func TestOnlyEntriesWrittenThroughTheWriterAreVerified(t *testing.T) {
	ns := env.Namespace(t)
	clock := clocktesting.NewFakeClock(at("2026-06-15T09:30:00Z"))
	key := bytes.Repeat([]byte{1}, releaselog.MinKeyBytes)
	c := start(t, ns, releaselog.Options{Namespace: ns, Clock: clock, SealKey: key})

	if _, err := c.Writer.AddRelease(context.Background(), releaselog.Entry{
		Type: "release", Version: "through-the-writer", Origin: releaselog.ControllerOrigin, Author: releaselog.ControllerOrigin,
		Date: at("2026-06-15T09:00:00Z"),
	}); err != nil {
		t.Fatal(err)
	}
	forged := apiEntry("forged", "2026-06-14T10:00:00Z")
	forged.Author = releaselog.ControllerOrigin
	forged.Origin = releaselog.ControllerOrigin
	forged.Seal = "AAAAAAAAAAAAAAAAAAAAAA" // looks like a seal, is not one
	createLog(t, ns, "release-2026-06-14", forged)

	eventually(t, func(g Gomega) {
		today := c.Store.Entries("2026-06-15")
		g.Expect(today).To(HaveLen(1))
		g.Expect(today[0].Verified).To(BeTrue(), "the writer's entry is not verified")
		g.Expect(today[0].ShownAuthor()).To(Equal(releaselog.ControllerOrigin))
		direct := c.Store.Entries("2026-06-14")
		g.Expect(direct).To(HaveLen(1))
		g.Expect(direct[0].Verified).To(BeFalse(), "the entry written directly is verified")
		g.Expect(direct[0].ShownAuthor()).To(Equal("unverified: release-controller"))
	})

	// Someone edits the sealed entry: it is not the one sealed any more.
	l, err := getLog(ns, "release-2026-06-15")
	if err != nil {
		t.Fatal(err)
	}
	if err := updateLog(l, func(l *v1alpha1.ReleaseLog) { l.Spec.Entries[0].Message = "edited" }); err != nil {
		t.Fatal(err)
	}
	eventually(t, func(g Gomega) {
		today := c.Store.Entries("2026-06-15")
		g.Expect(today).To(HaveLen(1))
		g.Expect(today[0].Message).To(Equal("edited"))
		g.Expect(today[0].Verified).To(BeFalse(), "an edited entry is still verified")
	})
}

// A day that has not begun (written before the admission policy refused such days, or past
// it) is reported in its status and not shown; a day that begins within the allowed skew is.
func TestADayThatHasNotBegunIsNotShown(t *testing.T) {
	ns := env.Namespace(t)
	clock := clocktesting.NewFakeClock(at("2026-06-15T23:58:00Z"))
	c := start(t, ns, releaselog.Options{Namespace: ns, Clock: clock})

	createLog(t, ns, "release-9999-12-31", apiEntry("far", "9999-12-31T10:00:00Z"))
	createLog(t, ns, "release-2026-06-15", apiEntry("today", "2026-06-15T10:00:00Z"))
	// Tomorrow begins in two minutes, within the five allowed for clocks that run ahead.
	createLog(t, ns, "release-2026-06-16", apiEntry("tomorrow", "2026-06-16T00:01:00Z"))

	waitLog(t, ns, "release-9999-12-31", func(g Gomega, l *v1alpha1.ReleaseLog) {
		c := meta.FindStatusCondition(l.Status.Conditions, v1alpha1.ConditionReleaseLogValid)
		g.Expect(c).NotTo(BeNil())
		g.Expect(c.Status).To(Equal(metav1.ConditionFalse))
		g.Expect(c.Reason).To(Equal(v1alpha1.ReasonFutureDay))
		g.Expect(c.Message).To(ContainSubstring("metadata.name: the day has not begun: 9999-12-31 starts at 9999-12-31T00:00:00Z"))
	})
	eventually(t, func(g Gomega) {
		g.Expect(c.Store.Days()).To(Equal([]string{"2026-06-16", "2026-06-15"}))
		latest, _ := c.Store.Latest()
		g.Expect(latest).To(Equal("2026-06-16"))
	})
}

// The key is made once, by whichever process asks first, and read by the others; a Secret
// holding too short a key is refused with a message naming it.
func TestEnsureKey(t *testing.T) {
	ns := env.Namespace(t)
	ctx := context.Background()
	ref := types.NamespacedName{Namespace: ns, Name: releaselog.DefaultKeySecret}
	first, err := releaselog.EnsureKey(ctx, env.Client, ref)
	if err != nil {
		t.Fatal(err)
	}
	if len(first) != releaselog.MinKeyBytes || bytes.Equal(first, make([]byte, releaselog.MinKeyBytes)) {
		t.Errorf("made the key %x, want %d random bytes", first, releaselog.MinKeyBytes)
	}
	again, err := releaselog.EnsureKey(ctx, env.Client, ref)
	if err != nil || !bytes.Equal(again, first) {
		t.Errorf("asked again: %x, %v; want the key made first", again, err)
	}

	short := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "short"}, Data: map[string][]byte{releaselog.KeySecretKey: []byte("too short")}}
	if err := env.Client.Create(ctx, short); err != nil {
		t.Fatal(err)
	}
	_, err = releaselog.EnsureKey(ctx, env.Client, client.ObjectKeyFromObject(short))
	if !errors.Is(err, releaselog.ErrShortKey) || !strings.Contains(err.Error(), "data.key holds 9 bytes, the release log key needs at least 32") {
		t.Errorf("a short key: %v", err)
	}
}
