//go:build !unit

package stream_test

import (
	"context"
	"strings"
	"testing"

	. "github.com/onsi/gomega"
	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	eventsv1 "k8s.io/api/events/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	prowv1 "github.com/release-controller/release-controller/api/prow/v1"
	"github.com/release-controller/release-controller/api/v1alpha1"
	"github.com/release-controller/release-controller/internal/jobcontract"
	"github.com/release-controller/release-controller/internal/stream"
)

// eventNotes are the notes of the Events of kind reason on the object kind/name in ns.
func eventNotes(g Gomega, ns, kind, name, reason string) []string {
	var list eventsv1.EventList
	g.Expect(env.Client.List(context.Background(), &list, client.InNamespace(ns))).To(Succeed())
	var notes []string
	for _, e := range list.Items {
		if e.Regarding.Kind == kind && e.Regarding.Name == name && e.Reason == reason {
			notes = append(notes, e.Note)
		}
	}
	return notes
}

// verificationJobs are the verification Jobs of namespace ns.
func verificationJobs(g Gomega, ns string) []batchv1.Job {
	var jobs batchv1.JobList
	g.Expect(env.Client.List(context.Background(), &jobs, client.InNamespace(ns), client.MatchingLabels{v1alpha1.LabelJobType: v1alpha1.JobTypeVerification})).To(Succeed())
	return jobs.Items
}

// TestForbiddenTemplateFailsItsRuns: job templates kept in a ConfigMap never pass the
// admission policy, so a tenant can write a payload naming a ConfigMap of its own whose
// template is privileged, mounts the node's root and runs as the controller's account. The
// controller creates no Job of it: each run fails naming the fields and the rules (counted
// against the retries), the payload is rejected, and an Event on it says why.
func TestForbiddenTemplateFailsItsRuns(t *testing.T) {
	ns := env.Namespace(t)
	ctx := context.Background()
	g := NewWithT(t)
	// A stream whose component does not resolve: it makes no payload of its own, but handles
	// the tenant's.
	s := newStream(t, ns, func(s *v1alpha1.ReleaseStream) {
		s.Spec.Verification = []v1alpha1.Verification{jobVerification("e2e")}
	}, "api")

	bad := jobVerification("e2e")
	bad.MaxRetries = 1
	pod := &bad.Job.Template.Spec.Template.Spec
	pod.ServiceAccountName = "release-controller"
	pod.Containers[0].SecurityContext = &corev1.SecurityContext{Privileged: ptr.To(true)}
	pod.Volumes = []corev1.Volume{{Name: "root", VolumeSource: corev1.VolumeSource{HostPath: &corev1.HostPathVolumeSource{Path: "/"}}}}
	cm, ref, err := stream.VerificationTemplates(s, []v1alpha1.Verification{bad})
	g.Expect(err).NotTo(HaveOccurred())
	cm.Name = "forged-templates"
	ref.ConfigMap = cm.Name
	g.Expect(env.Client.Create(ctx, cm)).To(Succeed())

	const tag = "4.15.0-0.nightly-2026-11-22-093000"
	p := &v1alpha1.ReleasePayload{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: tag},
		Spec: v1alpha1.ReleasePayloadSpec{
			PayloadCoordinates:    v1alpha1.PayloadCoordinates{Stream: s.Name, Tag: tag},
			Components:            []v1alpha1.PinnedComponent{{Name: "api", Image: repo(ns, "api") + "@sha256:" + strings.Repeat("a", 64)}},
			PayloadCreationConfig: v1alpha1.PayloadCreationConfig{Repository: s.Spec.PayloadRepository},
			PayloadVerificationConfig: v1alpha1.PayloadVerificationConfig{
				Verifications: stream.WithoutBackends([]v1alpha1.Verification{bad}),
				TemplatesFrom: ref,
			},
		},
	}
	g.Expect(env.Client.Create(ctx, p)).To(Succeed())
	build(t, p)

	got := waitPayload(t, ns, p.Name, func(g Gomega, p *v1alpha1.ReleasePayload) {
		g.Expect(p.Status.Phase).To(Equal(v1alpha1.PhaseRejected))
	})
	g.Expect(got.Status.Verifications).To(HaveLen(1))
	v := got.Status.Verifications[0]
	g.Expect(v.State).To(Equal(v1alpha1.JobFailure))
	g.Expect(v.Runs).To(HaveLen(2), "each attempt is a failed run")
	for _, r := range v.Runs {
		g.Expect(r.State).To(Equal(v1alpha1.JobFailure))
		g.Expect(r.Message).To(And(
			ContainSubstring("verification e2e breaks the tenancy rules"),
			ContainSubstring("job.template.spec.template.spec.serviceAccountName: must be empty or \"default\""),
			ContainSubstring("job.template.spec.template.spec.volumes[0].hostPath: hostPath volumes are not allowed"),
		))
	}
	g.Expect(verificationJobs(g, ns)).To(BeEmpty())
	g.Eventually(func(g Gomega) {
		notes := eventNotes(g, ns, "ReleasePayload", p.Name, v1alpha1.EventVerificationFailed)
		g.Expect(notes).To(ContainElement(And(
			ContainSubstring("was not created"),
			ContainSubstring("job.template.spec.template.spec.containers[0].securityContext.privileged: must not be true"),
		)))
	}).WithTimeout(waitTimeout).Should(Succeed())
}

// TestDeclaredAccountRunsTheJobs: a stream's verification Jobs run as its declared account,
// without the token unless the stream asks; a template naming that account is admitted.
func TestDeclaredAccountRunsTheJobs(t *testing.T) {
	ns := env.Namespace(t)
	pushImage(t, repo(ns, "api")+":latest", nil)
	named := jobVerification("named")
	named.Job.Template.Spec.Template.Spec.ServiceAccountName = "tests-bot"
	s := newStream(t, ns, func(s *v1alpha1.ReleaseStream) {
		s.Spec.VerificationServiceAccount = &v1alpha1.VerificationServiceAccount{Name: "tests-bot", MountToken: true}
		s.Spec.Verification = []v1alpha1.Verification{jobVerification("e2e"), named}
	}, "api")
	p := waitPayloads(t, ns, 1)[0]
	NewWithT(t).Expect(p.Spec.PayloadVerificationConfig.ServiceAccount).To(Equal(s.Spec.VerificationServiceAccount))
	build(t, &p)
	for _, name := range []string{"e2e", "named"} {
		job := waitJob(t, ns, jobcontract.RunName(p.Name, name, 1))
		spec := job.Spec.Template.Spec
		NewWithT(t).Expect(spec.ServiceAccountName).To(Equal("tests-bot"), name)
		NewWithT(t).Expect(spec.AutomountServiceAccountToken).To(HaveValue(BeTrue()), name)
	}

	// The default: the namespace's own account, without its token.
	other := env.Namespace(t)
	pushImage(t, repo(other, "api")+":latest", nil)
	newStream(t, other, func(s *v1alpha1.ReleaseStream) {
		s.Spec.Verification = []v1alpha1.Verification{jobVerification("e2e")}
	}, "api")
	q := waitPayloads(t, other, 1)[0]
	build(t, &q)
	job := waitJob(t, other, jobcontract.RunName(q.Name, "e2e", 1))
	NewWithT(t).Expect(job.Spec.Template.Spec.ServiceAccountName).To(Equal("default"))
	NewWithT(t).Expect(job.Spec.Template.Spec.AutomountServiceAccountToken).To(HaveValue(BeFalse()))
}

// TestProwJobOutsideAllowedNamespaces: with the controller watching every namespace and no
// --prowjob-namespace, a ProwJob bound for another namespace than the stream's is never
// created: its run fails naming prowJob.namespace and the flag.
func TestProwJobOutsideAllowedNamespaces(t *testing.T) {
	ns := env.Namespace(t)
	elsewhere := env.Namespace(t)
	pushImage(t, repo(ns, "api")+":latest", nil)
	pjv := v1alpha1.Verification{Name: "e2e-aws", ProwJob: &v1alpha1.ProwJobBackend{Namespace: elsewhere, Spec: prowv1.ProwJobSpec{Job: "periodic-e2e-aws"}}}
	newStream(t, ns, func(s *v1alpha1.ReleaseStream) { s.Spec.Verification = []v1alpha1.Verification{pjv} }, "api")
	p := waitPayloads(t, ns, 1)[0]
	build(t, &p)
	got := waitPayload(t, ns, p.Name, func(g Gomega, p *v1alpha1.ReleasePayload) {
		g.Expect(p.Status.Phase).To(Equal(v1alpha1.PhaseRejected))
	})
	g := NewWithT(t)
	g.Expect(got.Status.Verifications).To(HaveLen(1))
	g.Expect(got.Status.Verifications[0].Runs).To(ConsistOf(And(
		HaveField("Kind", v1alpha1.RunKindProwJob),
		HaveField("State", v1alpha1.JobFailure),
		HaveField("Message", And(ContainSubstring("prowJob.namespace: \""+elsewhere+"\""), ContainSubstring("--prowjob-namespace"))),
	)))
	var list prowv1.ProwJobList
	g.Expect(env.Client.List(context.Background(), &list, client.InNamespace(elsewhere))).To(Succeed())
	g.Expect(list.Items).To(BeEmpty())
	g.Eventually(func(g Gomega) {
		g.Expect(eventNotes(g, ns, "ReleasePayload", p.Name, v1alpha1.EventVerificationFailed)).To(ContainElement(ContainSubstring("prowJob.namespace")))
	}).WithTimeout(waitTimeout).Should(Succeed())
}
