//go:build !unit

package stream_test

import (
	"context"
	"testing"

	. "github.com/onsi/gomega"
	batchv1 "k8s.io/api/batch/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/release-controller/release-controller/api/v1alpha1"
	"github.com/release-controller/release-controller/internal/jobcontract"
	"github.com/release-controller/release-controller/internal/stream"
)

// TestSuspend: while spec.suspend is set nothing is created, recorded or launched for the
// stream (each check follows a pass the test asked for, so that an absence means something),
// the status says so, and the payload controller still records the jobs already running;
// resumed, the stream goes on where it stopped.
func TestSuspend(t *testing.T) {
	ctx := context.Background()
	ns := env.Namespace(t)
	pushImage(t, repo(ns, "api")+":latest", nil)
	s := newStream(t, ns, func(s *v1alpha1.ReleaseStream) {
		s.Spec.Suspend = true
		s.Spec.Verification = []v1alpha1.Verification{jobVerification("e2e")}
	}, "api")
	suspended := func(g Gomega, s *v1alpha1.ReleaseStream) {
		g.Expect(s.Status.ObservedGeneration).To(Equal(s.Generation))
		ready := meta.FindStatusCondition(s.Status.Conditions, v1alpha1.ConditionReady)
		g.Expect(ready).NotTo(BeNil())
		g.Expect(ready.Message).To(Equal(stream.SuspendedMessage))
		g.Expect(meta.FindStatusCondition(s.Status.Conditions, v1alpha1.ConditionReconciling)).To(BeNil())
	}
	// requestPass asks for a pass and waits until it is done.
	requestPass := func(value string) {
		t.Helper()
		var cur v1alpha1.ReleaseStream
		NewWithT(t).Expect(env.Client.Get(ctx, client.ObjectKeyFromObject(s), &cur)).To(Succeed())
		patch := client.MergeFrom(cur.DeepCopy())
		metav1.SetMetaDataAnnotation(&cur.ObjectMeta, v1alpha1.AnnotationReconcileRequestedAt, value)
		NewWithT(t).Expect(env.Client.Patch(ctx, &cur, patch)).To(Succeed())
		waitStream(t, s, func(g Gomega, s *v1alpha1.ReleaseStream) {
			g.Expect(s.Status.LastHandledReconcileAt).To(Equal(value))
		})
	}

	// Suspended from the start: nothing imported, no payload.
	waitStream(t, s, func(g Gomega, s *v1alpha1.ReleaseStream) {
		suspended(g, s)
		g.Expect(meta.FindStatusCondition(s.Status.Conditions, v1alpha1.ConditionReady).Reason).To(Equal(v1alpha1.ReasonSuspended))
	})
	requestPass("1")
	g := NewWithT(t)
	g.Expect(payloads(g, ns)).To(BeEmpty())
	g.Expect(s.Status.Components).To(BeEmpty())

	// Resumed: the payload and its creation job.
	setSuspend(t, s, false)
	p := waitPayloads(t, ns, 1)[0]
	creation := waitJob(t, ns, jobcontract.CreationJobName(p.Name))

	// Suspended while the payload is built: the payload controller records the build, the
	// stream neither records the image nor launches the verification.
	setSuspend(t, s, true)
	waitStream(t, s, suspended)
	pushImage(t, p.Spec.PayloadCreationConfig.Repository+":"+p.Name, nil)
	finish(t, creation, true)
	waitPayload(t, ns, p.Name, func(g Gomega, p *v1alpha1.ReleasePayload) {
		g.Expect(p.Status.Phase).To(Equal(v1alpha1.PhaseReady))
	})
	requestPass("2")
	got := waitPayload(t, ns, p.Name, func(Gomega, *v1alpha1.ReleasePayload) {})
	g.Expect(got.Status.PayloadImage).To(BeEmpty(), "the image was recorded while suspended")
	err := env.Client.Get(ctx, client.ObjectKey{Namespace: ns, Name: jobcontract.RunName(p.Name, "e2e", 1)}, &batchv1.Job{})
	g.Expect(apierrors.IsNotFound(err)).To(BeTrue(), "a verification was launched while suspended: %v", err)
	g.Expect(s.Status.Payloads.Ready).To(Equal(int32(1)), "the suspended stream still counts its payloads")

	// Resumed: the image is recorded and the verification launched.
	setSuspend(t, s, false)
	waitPayload(t, ns, p.Name, func(g Gomega, p *v1alpha1.ReleasePayload) {
		g.Expect(p.Status.PayloadImage).NotTo(BeEmpty())
	})
	waitJob(t, ns, jobcontract.RunName(p.Name, "e2e", 1))
}

func setSuspend(t *testing.T, s *v1alpha1.ReleaseStream, suspend bool) {
	t.Helper()
	NewWithT(t).Eventually(func() error {
		var cur v1alpha1.ReleaseStream
		if err := env.Client.Get(context.Background(), client.ObjectKeyFromObject(s), &cur); err != nil {
			return err
		}
		cur.Spec.Suspend = suspend
		return env.Client.Update(context.Background(), &cur)
	}).WithTimeout(waitTimeout).Should(Succeed())
}
