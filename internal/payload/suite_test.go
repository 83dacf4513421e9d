//go:build !unit

package payload_test

import (
	"context"
	"fmt"
	"os"
	"testing"
	"time"

	. "github.com/onsi/gomega"
	"go.uber.org/zap/zapcore"
	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/log/zap"

	prowv1 "github.com/release-controller/release-controller/api/prow/v1"
	"github.com/release-controller/release-controller/api/v1alpha1"
	"github.com/release-controller/release-controller/internal/devenv/jobstatus"
	"github.com/release-controller/release-controller/internal/manager"
	"github.com/release-controller/release-controller/internal/testenv"
)

// env is the API server shared by the package's tests; the controllers run against it.
var env *testenv.Env

// waitTimeout bounds every wait; it is a deadline for a broken test, not a performance assertion.
const waitTimeout = 60 * time.Second

func TestMain(m *testing.M) {
	ctrl.SetLogger(zap.New(zap.WriteTo(os.Stderr), zap.Level(zapcore.ErrorLevel)))
	testenv.Main(m, &env, func(e *testenv.Env) (func(), error) {
		return e.StartControllers(manager.Options{MetricsAddr: "0", ProbeAddr: "0"})
	})
}

const tag = "4.15.0-0.nightly-2026-11-22-093000"

func component(name string) v1alpha1.PinnedComponent {
	return v1alpha1.PinnedComponent{Name: name, Image: "registry.example.com/product/" + name + "@sha256:" + fmt.Sprintf("%064x", len(name))}
}

func jobVerification(name string) v1alpha1.Verification {
	return v1alpha1.Verification{Name: name, Job: &v1alpha1.JobBackend{Template: batchv1.JobTemplateSpec{Spec: podJobSpec()}}}
}

func podJobSpec() batchv1.JobSpec {
	return batchv1.JobSpec{Template: corev1.PodTemplateSpec{Spec: corev1.PodSpec{
		RestartPolicy: corev1.RestartPolicyNever,
		Containers:    []corev1.Container{{Name: "test", Image: "registry.example.com/tests:latest", Command: []string{"true"}}},
	}}}
}

func newPayload(ns, tag string, verifications ...v1alpha1.Verification) *v1alpha1.ReleasePayload {
	return &v1alpha1.ReleasePayload{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: tag},
		Spec: v1alpha1.ReleasePayloadSpec{
			PayloadCoordinates:        v1alpha1.PayloadCoordinates{Stream: "nightly", Tag: tag},
			Components:                []v1alpha1.PinnedComponent{component("api"), component("web")},
			PayloadCreationConfig:     v1alpha1.PayloadCreationConfig{Repository: "registry.example.com/product/release"},
			PayloadVerificationConfig: v1alpha1.PayloadVerificationConfig{Verifications: verifications},
		},
	}
}

func jobLabels(tag, jobType, verify string) map[string]string {
	l := map[string]string{v1alpha1.LabelStream: "nightly", v1alpha1.LabelPayload: tag, v1alpha1.LabelJobType: jobType}
	if verify != "" {
		l[v1alpha1.LabelVerify] = verify
	}
	return l
}

func createPayload(t testing.TB, p *v1alpha1.ReleasePayload) {
	t.Helper()
	if err := env.Client.Create(context.Background(), p); err != nil {
		t.Fatalf("creating payload: %v", err)
	}
}

// createJob creates a Job with the controller's labels, as the launcher would.
func createJob(t testing.TB, ns, name string, labels, annotations map[string]string) *batchv1.Job {
	t.Helper()
	job := &batchv1.Job{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name, Labels: labels, Annotations: annotations}, Spec: podJobSpec()}
	if err := env.Client.Create(context.Background(), job); err != nil {
		t.Fatalf("creating job %s: %v", name, err)
	}
	return job
}

func createCreationJob(t testing.TB, ns, tag string) *batchv1.Job {
	return createJob(t, ns, "create-"+tag, jobLabels(tag, v1alpha1.JobTypeCreation, ""), nil)
}

func createRun(t testing.TB, ns, tag, verify string, attempt int) *batchv1.Job {
	return createJob(t, ns, fmt.Sprintf("%s-%d", verify, attempt), jobLabels(tag, v1alpha1.JobTypeVerification, verify),
		map[string]string{v1alpha1.AnnotationAttempt: fmt.Sprint(attempt)})
}

// finish sets a job's status as the Kubernetes job controller would when its pod ends.
func finish(t testing.TB, job *batchv1.Job, succeeded bool) {
	t.Helper()
	ctx := context.Background()
	now := metav1.NewTime(time.Now().Truncate(time.Second))
	if err := env.Client.Get(ctx, client.ObjectKeyFromObject(job), job); err != nil {
		t.Fatalf("reading job: %v", err)
	}
	if succeeded {
		jobstatus.Succeeded(job, now)
	} else {
		jobstatus.Failed(job, now, 1, "", "")
	}
	if err := env.Client.Status().Update(ctx, job); err != nil {
		t.Fatalf("finishing job %s: %v", job.Name, err)
	}
}

// created creates the payload's creation job and lets it succeed.
func created(t testing.TB, ns, tag string) {
	finish(t, createCreationJob(t, ns, tag), true)
}

// accepted creates a payload of one verification, e2e, and lets its build and its run
// succeed, then waits until it is Accepted.
func accepted(t testing.TB, ns, tag string) {
	t.Helper()
	createPayload(t, newPayload(ns, tag, jobVerification("e2e")))
	created(t, ns, tag)
	finish(t, createRun(t, ns, tag, "e2e", 1), true)
	waitFor(t, ns, tag, phaseIs(v1alpha1.PhaseAccepted))
}

// waitFor waits until check passes on the payload, or fails the test with check's last error.
func waitFor(t testing.TB, ns, name string, check func(g Gomega, p *v1alpha1.ReleasePayload)) *v1alpha1.ReleasePayload {
	t.Helper()
	var p v1alpha1.ReleasePayload
	NewWithT(t).Eventually(func(g Gomega) {
		g.Expect(env.Client.Get(context.Background(), types.NamespacedName{Namespace: ns, Name: name}, &p)).To(Succeed())
		check(g, &p)
	}).WithTimeout(waitTimeout).WithPolling(50 * time.Millisecond).Should(Succeed())
	return &p
}

func condition(p *v1alpha1.ReleasePayload, typ string) metav1.Condition {
	if c := meta.FindStatusCondition(p.Status.Conditions, typ); c != nil {
		return *c
	}
	return metav1.Condition{Type: typ}
}

// phaseIs checks the phase and the four conditions agree with it.
func phaseIs(phase v1alpha1.PayloadPhase) func(g Gomega, p *v1alpha1.ReleasePayload) {
	return func(g Gomega, p *v1alpha1.ReleasePayload) {
		g.Expect(p.Status.Phase).To(Equal(phase), "conditions: %+v", p.Status.Conditions)
		g.Expect(condition(p, v1alpha1.ConditionPayloadAccepted).Status == metav1.ConditionTrue).To(Equal(phase == v1alpha1.PhaseAccepted))
		g.Expect(condition(p, v1alpha1.ConditionPayloadRejected).Status == metav1.ConditionTrue).To(Equal(phase == v1alpha1.PhaseRejected))
		g.Expect(condition(p, v1alpha1.ConditionPayloadFailed).Status == metav1.ConditionTrue).To(Equal(phase == v1alpha1.PhaseFailed))
		// The payload controller's conditions describe the current spec; the audit's describe
		// the payload as it was accepted.
		for _, typ := range []string{v1alpha1.ConditionPayloadCreated, v1alpha1.ConditionPayloadAccepted, v1alpha1.ConditionPayloadRejected, v1alpha1.ConditionPayloadFailed} {
			if c := meta.FindStatusCondition(p.Status.Conditions, typ); c != nil {
				g.Expect(c.ObservedGeneration).To(Equal(p.Generation), "condition %s", c.Type)
			}
		}
	}
}

func verification(p *v1alpha1.ReleasePayload, name string) v1alpha1.VerificationStatus {
	for _, v := range p.Status.Verifications {
		if v.Name == name {
			return v
		}
	}
	return v1alpha1.VerificationStatus{}
}

func createProwJob(t testing.TB, ns, tag, verify string, attempt int) *prowv1.ProwJob {
	t.Helper()
	pj := &prowv1.ProwJob{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: fmt.Sprintf("%s-%d", verify, attempt), Labels: jobLabels(tag, v1alpha1.JobTypeVerification, verify),
			Annotations: map[string]string{v1alpha1.AnnotationAttempt: fmt.Sprint(attempt)}},
		Spec: prowv1.ProwJobSpec{Type: prowv1.PeriodicJob, Agent: prowv1.KubernetesAgent, Job: "periodic-" + verify},
	}
	if err := env.Client.Create(context.Background(), pj); err != nil {
		t.Fatalf("creating prowjob: %v", err)
	}
	return pj
}
