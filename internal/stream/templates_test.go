//go:build !unit

package stream_test

import (
	"context"
	"testing"
	"time"

	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/release-controller/release-controller/api/v1alpha1"
	"github.com/release-controller/release-controller/internal/jobcontract"
	"github.com/release-controller/release-controller/internal/stream"
)

// TestVerificationTemplatesKeptOnce: a payload names its verifications' job templates in an
// immutable ConfigMap beside the stream, shared by the payloads of an unchanged list, instead
// of carrying them; the runs are launched from it.
func TestVerificationTemplatesKeptOnce(t *testing.T) {
	ns := env.Namespace(t)
	pushImage(t, repo(ns, "api")+":latest", nil)
	s := newStream(t, ns, func(s *v1alpha1.ReleaseStream) {
		s.Spec.Verification = []v1alpha1.Verification{jobVerification("e2e")}
	}, "api")
	first := waitPayloads(t, ns, 1)[0]
	g := NewWithT(t)
	ref := first.Spec.PayloadVerificationConfig.TemplatesFrom
	g.Expect(ref).NotTo(BeNil())
	g.Expect(first.Spec.PayloadVerificationConfig.Verifications).To(ConsistOf(v1alpha1.Verification{Name: "e2e", Type: v1alpha1.Blocking}))

	var cm corev1.ConfigMap
	g.Expect(env.Client.Get(context.Background(), client.ObjectKey{Namespace: ns, Name: ref.ConfigMap}, &cm)).To(Succeed())
	g.Expect(cm.Immutable).To(HaveValue(BeTrue()))
	g.Expect(cm.Labels).To(Equal(map[string]string{v1alpha1.LabelStream: "nightly", v1alpha1.LabelContent: v1alpha1.ContentVerificationTemplates}))
	g.Expect(cm.OwnerReferences).To(ConsistOf(HaveField("UID", s.UID)))
	templates, err := stream.DecodeTemplates(&cm, ref)
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(templates["e2e"].Job).NotTo(BeNil())

	build(t, &first)
	e2e := waitJob(t, ns, jobcontract.RunName(first.Name, "e2e", 1))
	g.Expect(e2e.Spec.Template.Spec.Containers[0].Image).To(Equal("tests"))
	g.Expect(e2e.Spec.Template.Spec.Containers[0].Command).To(Equal([]string{"true"}))
	finish(t, e2e, true)
	waitPayload(t, ns, first.Name, func(g Gomega, p *v1alpha1.ReleasePayload) {
		g.Expect(p.Status.Phase).To(Equal(v1alpha1.PhaseAccepted))
	})

	// The next payload of the same list names the same ConfigMap.
	pushImage(t, repo(ns, "api")+":latest", map[string]string{"build": "2"})
	second := waitPayloads(t, ns, 2)[0]
	g.Expect(second.Spec.PayloadVerificationConfig.TemplatesFrom).To(Equal(ref))
	var list corev1.ConfigMapList
	g.Expect(env.Client.List(context.Background(), &list, client.InNamespace(ns),
		client.MatchingLabels{v1alpha1.LabelContent: v1alpha1.ContentVerificationTemplates})).To(Succeed())
	g.Expect(list.Items).To(HaveLen(1))
}

// TestVerificationTemplatesGone: a payload whose templates ConfigMap was deleted fails each
// run with the reason, against its retries, and is rejected instead of waiting forever.
func TestVerificationTemplatesGone(t *testing.T) {
	ns := env.Namespace(t)
	pushImage(t, repo(ns, "api")+":latest", nil)
	e2e := jobVerification("e2e")
	e2e.MaxRetries = 1
	newStream(t, ns, func(s *v1alpha1.ReleaseStream) {
		s.Spec.Verification = []v1alpha1.Verification{e2e}
	}, "api")
	p := waitPayloads(t, ns, 1)[0]
	ref := p.Spec.PayloadVerificationConfig.TemplatesFrom
	NewWithT(t).Expect(ref).NotTo(BeNil())
	cm := &corev1.ConfigMap{}
	cm.Namespace, cm.Name = ns, ref.ConfigMap
	NewWithT(t).Expect(env.Client.Delete(context.Background(), cm)).To(Succeed())

	build(t, &p)
	got := waitPayload(t, ns, p.Name, func(g Gomega, p *v1alpha1.ReleasePayload) {
		g.Expect(p.Status.Phase).To(Equal(v1alpha1.PhaseRejected))
	})
	g := NewWithT(t)
	g.Expect(got.Status.Verifications).To(HaveLen(1))
	g.Expect(got.Status.Verifications[0].Runs).To(HaveLen(2))
	for _, r := range got.Status.Verifications[0].Runs {
		g.Expect(r.State).To(Equal(v1alpha1.JobFailure))
		g.Expect(r.Message).To(ContainSubstring("ConfigMap " + ref.ConfigMap + ", which holds the job templates, does not exist"))
	}
}

// TestInlineTemplatesStillRun: a payload stored before templatesFrom, its job templates
// inline, is verified from its own spec.
func TestInlineTemplatesStillRun(t *testing.T) {
	ns := env.Namespace(t)
	api := pushImage(t, repo(ns, "api")+":latest", nil)
	// The stream's own component is never pushed: it creates no payload of its own.
	s := newStream(t, ns, func(s *v1alpha1.ReleaseStream) {
		s.Spec.Verification = []v1alpha1.Verification{jobVerification("e2e")}
	}, "unpublished")
	p := stream.NewPayload(s, stream.ReleaseTag(s.Spec.TagPrefix, time.Now()), "inline",
		[]v1alpha1.PinnedComponent{{Name: "api", Image: api}}, nil)
	g := NewWithT(t)
	g.Expect(p.Spec.PayloadVerificationConfig.TemplatesFrom).To(BeNil())
	g.Expect(p.Spec.PayloadVerificationConfig.Verifications[0].Job).NotTo(BeNil())
	g.Expect(env.Client.Create(context.Background(), p)).To(Succeed())

	build(t, p)
	e2e := waitJob(t, ns, jobcontract.RunName(p.Name, "e2e", 1))
	g.Expect(e2e.Spec.Template.Spec.Containers[0].Image).To(Equal("tests"))
	finish(t, e2e, true)
	waitPayload(t, ns, p.Name, func(g Gomega, p *v1alpha1.ReleasePayload) {
		g.Expect(p.Status.Phase).To(Equal(v1alpha1.PhaseAccepted))
	})
}
