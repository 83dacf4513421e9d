//go:build !unit

package manager_test

import (
	"context"
	"os"
	"slices"
	"strings"
	"testing"
	"time"

	. "github.com/onsi/gomega"
	"go.uber.org/zap/zapcore"
	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/log/zap"

	prowv1 "github.com/release-controller/release-controller/api/prow/v1"
	"github.com/release-controller/release-controller/api/v1alpha1"
	"github.com/release-controller/release-controller/internal/devenv/jobstatus"
	"github.com/release-controller/release-controller/internal/jobcontract"
	"github.com/release-controller/release-controller/internal/manager"
	"github.com/release-controller/release-controller/internal/testenv"
	"github.com/release-controller/release-controller/internal/verify"
)

func TestNamespaces(t *testing.T) {
	for in, want := range map[string][]string{
		"":                nil,
		"release":         {"release"},
		"a, b,,a ,c":      {"a", "b", "c"},
		" , ":             nil,
		"release,ci-jobs": {"release", "ci-jobs"},
	} {
		if got := (manager.Options{Namespace: in}).Namespaces(); !slices.Equal(got, want) {
			t.Errorf("Namespaces(%q) = %q, want %q", in, got, want)
		}
	}
}

// TestScopedManagerSeesProwJobsElsewhere runs the controllers restricted to one namespace
// (--namespace) while a payload's verification creates its ProwJob in Prow's namespace
// (--prowjob-namespace): the job cache sees the ProwJob there and the payload is accepted;
// payloads of other namespaces are left alone.
func TestScopedManagerSeesProwJobsElsewhere(t *testing.T) {
	if testing.Short() {
		t.Skip("starts an API server")
	}
	ctrl.SetLogger(zap.New(zap.WriteTo(os.Stderr), zap.Level(zapcore.ErrorLevel)))
	env, err := testenv.Start()
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = env.Stop() })
	watched, prow, other := env.Namespace(t), env.Namespace(t), env.Namespace(t)
	stop, err := env.StartControllers(manager.Options{
		MetricsAddr: "0", ProbeAddr: "0", Namespace: watched, ProwJobNamespaces: []string{prow},
		SkipControllerNameValidation: true,
	})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(stop)
	ctx := context.Background()
	g := NewWithT(t)

	verification := v1alpha1.Verification{Name: "e2e-aws", ProwJob: &v1alpha1.ProwJobBackend{
		Namespace: prow, Spec: prowv1.ProwJobSpec{Type: prowv1.PeriodicJob, Agent: prowv1.KubernetesAgent, Job: "periodic-e2e-aws"},
	}}
	newPayload := func(namespace string) *v1alpha1.ReleasePayload {
		const tag = "4.15.0-0.nightly-2026-11-22-093000"
		p := &v1alpha1.ReleasePayload{
			ObjectMeta: metav1.ObjectMeta{Namespace: namespace, Name: tag},
			Spec: v1alpha1.ReleasePayloadSpec{
				PayloadCoordinates:        v1alpha1.PayloadCoordinates{Stream: "nightly", Tag: tag},
				Components:                []v1alpha1.PinnedComponent{{Name: "api", Image: "registry.example.com/api@sha256:" + strings.Repeat("0", 63) + "1"}},
				PayloadCreationConfig:     v1alpha1.PayloadCreationConfig{Repository: "registry.example.com/release"},
				PayloadVerificationConfig: v1alpha1.PayloadVerificationConfig{Verifications: []v1alpha1.Verification{verification}},
			},
		}
		g.Expect(env.Client.Create(ctx, p)).To(Succeed())
		// The payload's image is built: its creation job, labelled as the stream controller labels it, succeeded.
		contract := jobcontract.CreationJob(p)
		job := &batchv1.Job{
			ObjectMeta: metav1.ObjectMeta{Namespace: namespace, Name: contract.Name(), Labels: contract.Labels(namespace)},
			Spec: batchv1.JobSpec{Template: corev1.PodTemplateSpec{Spec: corev1.PodSpec{
				RestartPolicy: corev1.RestartPolicyNever, Containers: []corev1.Container{{Name: "build", Image: "build"}},
			}}},
		}
		g.Expect(env.Client.Create(ctx, job)).To(Succeed())
		jobstatus.Succeeded(job, metav1.NewTime(time.Now().Truncate(time.Second)))
		g.Expect(env.Client.Status().Update(ctx, job)).To(Succeed())
		return p
	}
	get := func(g Gomega, p *v1alpha1.ReleasePayload) *v1alpha1.ReleasePayload {
		got := &v1alpha1.ReleasePayload{}
		g.Expect(env.Client.Get(ctx, client.ObjectKeyFromObject(p), got)).To(Succeed())
		return got
	}

	p := newPayload(watched)
	ignored := newPayload(other)
	g.Eventually(func(g Gomega) {
		g.Expect(get(g, p).Status.Phase).To(Equal(v1alpha1.PhaseReady))
	}).WithTimeout(time.Minute).Should(Succeed())

	// The stream controller would create this ProwJob; it lives in Prow's namespace.
	pj, err := verify.NewProwJob(get(g, p), verify.Launch{Verification: verification, Attempt: 1})
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(pj.Namespace).To(Equal(prow))
	g.Expect(pj.Labels).To(HaveKeyWithValue(v1alpha1.LabelPayloadNamespace, watched))
	g.Expect(env.Client.Create(ctx, pj)).To(Succeed())
	now := metav1.NewTime(time.Now().Truncate(time.Second))
	pj.Status = prowv1.ProwJobStatus{State: prowv1.SuccessState, StartTime: now, CompletionTime: &now, URL: "https://prow.example.com/e2e-aws/1"}
	g.Expect(env.Client.Status().Update(ctx, pj)).To(Succeed())

	g.Eventually(func(g Gomega) {
		got := get(g, p)
		g.Expect(got.Status.Phase).To(Equal(v1alpha1.PhaseAccepted))
		g.Expect(got.Status.Verifications).To(HaveLen(1))
		g.Expect(got.Status.Verifications[0].Runs).To(ConsistOf(And(
			HaveField("Kind", v1alpha1.RunKindProwJob), HaveField("Namespace", prow), HaveField("Name", pj.Name),
			HaveField("State", v1alpha1.JobSuccess), HaveField("URL", "https://prow.example.com/e2e-aws/1"))))
	}).WithTimeout(time.Minute).Should(Succeed())
	// A namespace outside --namespace is not reconciled.
	g.Consistently(func(g Gomega) {
		g.Expect(get(g, ignored).Status.Phase).To(BeEmpty())
	}).WithTimeout(time.Second).Should(Succeed())
}
