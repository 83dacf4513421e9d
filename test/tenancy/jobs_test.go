//go:build !unit

package tenancy

import (
	"context"
	"strings"
	"testing"
	"time"

	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/client-go/util/retry"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	prowv1 "github.com/release-controller/release-controller/api/prow/v1"
	"github.com/release-controller/release-controller/api/v1alpha1"
)

// TestAttackProwJobIntoAnotherNamespace: tenant A's stream verifies with a ProwJob bound for
// tenant B's namespace. Before issue 33 the controller created it there with its own rights.
// Now the run is never created: it fails naming prowJob.namespace and the controller's
// --prowjob-namespace (which lists none here), the payload is rejected with a
// VerificationFailed Event saying the same, and B's namespace holds no ProwJob.
func TestAttackProwJobIntoAnotherNamespace(t *testing.T) {
	ctx := context.Background()
	g := NewWithT(t)
	a, b := rc.a, rc.b
	since := time.Now()
	publish(t, a.namespace, "prow-web", "r1", "")
	asTenant(t, a, streamOf(a.namespace, "prow", []string{"prow-web"}, v1alpha1.Verification{
		Name: "e2e", ProwJob: &v1alpha1.ProwJobBackend{Namespace: b.namespace, Spec: prowv1.ProwJobSpec{
			Job: "periodic-e2e", PodSpec: &corev1.PodSpec{Containers: []corev1.Container{{Name: "test", Image: "tests", Command: []string{"true"}}}},
		}},
	}))
	p := waitPhase(t, a.namespace, "prow", v1alpha1.PhaseRejected)
	g.Expect(p.Status.Verifications).To(HaveLen(1))
	v := p.Status.Verifications[0]
	g.Expect(v.State).To(Equal(v1alpha1.JobFailure))
	g.Expect(v.Runs).NotTo(BeEmpty())
	rule := `prowJob.namespace: "` + b.namespace + `" is neither the payload's namespace "` + a.namespace +
		`" nor allowed by the controller's --prowjob-namespace (which lists none)`
	g.Expect(v.Runs[len(v.Runs)-1].Message).To(ContainSubstring(rule))
	waitEvent(t, a.namespace, "ReleasePayload", p.Name, v1alpha1.EventVerificationFailed, rule)

	var jobs prowv1.ProwJobList
	g.Expect(env.Client.List(ctx, &jobs, client.InNamespace(b.namespace))).To(Succeed())
	g.Expect(jobs.Items).To(BeEmpty(), "a ProwJob was created in tenant B's namespace")
	checkNothingOutside(t, since, a)
}

// waitPhase waits until the newest payload of ns's stream has phase, and returns it.
func waitPhase(t *testing.T, ns, streamName string, phase v1alpha1.PayloadPhase) v1alpha1.ReleasePayload {
	t.Helper()
	var found v1alpha1.ReleasePayload
	NewWithT(t).Eventually(func(g Gomega) {
		var list v1alpha1.ReleasePayloadList
		g.Expect(env.Client.List(context.Background(), &list, client.InNamespace(ns))).To(Succeed())
		ok := false
		for _, p := range list.Items {
			if p.Spec.PayloadCoordinates.Stream == streamName && p.Status.Phase == phase {
				found, ok = p, true
			}
		}
		g.Expect(ok).To(BeTrue(), "no %s payload of %s", phase, streamName)
	}).WithTimeout(waitTimeout).WithPolling(200 * time.Millisecond).Should(Succeed())
	return found
}

// TestAttackHostileJobTemplates: tenant A writes streams whose verification Job templates reach
// past their pod: the node's namespaces, its files, a privileged container, added
// capabilities, another account (the controller's own, or A's promoter), a token mounted
// without the stream asking. Before issue 33 the controller created such Jobs as given, with
// its own rights. Now the shipped admission policy refuses each, naming the field and the rule,
// when the stream is created and when a stream is edited to hold it; no such stream exists.
func TestAttackHostileJobTemplates(t *testing.T) {
	ctx := context.Background()
	a := rc.a
	since := time.Now()
	const prefix = "spec.verification[e2e].job.template.spec.template.spec."
	for _, tc := range []struct {
		name string
		edit func(*corev1.PodSpec)
		want []string
	}{
		{"host-network", func(s *corev1.PodSpec) { s.HostNetwork = true },
			[]string{prefix + "hostNetwork: must not be true: a verification pod may not share the node's network namespace"}},
		{"host-pid", func(s *corev1.PodSpec) { s.HostPID = true },
			[]string{prefix + "hostPID: must not be true"}},
		{"host-ipc", func(s *corev1.PodSpec) { s.HostIPC = true },
			[]string{prefix + "hostIPC: must not be true"}},
		{"host-path", func(s *corev1.PodSpec) {
			s.Volumes = []corev1.Volume{{Name: "root", VolumeSource: corev1.VolumeSource{HostPath: &corev1.HostPathVolumeSource{Path: "/"}}}}
		}, []string{prefix + "volumes[0].hostPath", "hostPath volumes are not allowed: they expose the node's files"}},
		{"privileged", func(s *corev1.PodSpec) {
			s.Containers[0].SecurityContext = &corev1.SecurityContext{Privileged: ptr.To(true)}
		}, []string{prefix + "containers[0].securityContext.privileged", "a privileged container has the node's devices and every capability"}},
		{"capabilities", func(s *corev1.PodSpec) {
			s.InitContainers = []corev1.Container{{Name: "init", Image: "tests", SecurityContext: &corev1.SecurityContext{
				Capabilities: &corev1.Capabilities{Add: []corev1.Capability{"SYS_ADMIN"}}}}}
		}, []string{prefix + "initContainers[0].securityContext.capabilities.add", "a verification container may not add Linux capabilities"}},
		{"controller-account", func(s *corev1.PodSpec) { s.ServiceAccountName = "release-controller-controller" },
			[]string{prefix + "serviceAccountName", `must be empty or "default", the stream's spec.verificationServiceAccount.name`}},
		{"promoter-account", func(s *corev1.PodSpec) { s.DeprecatedServiceAccount = promoterAccount },
			[]string{prefix + "serviceAccount", `must be empty or "default"`}},
		{"token", func(s *corev1.PodSpec) {
			s.Volumes = []corev1.Volume{{Name: "token", VolumeSource: corev1.VolumeSource{Projected: &corev1.ProjectedVolumeSource{
				Sources: []corev1.VolumeProjection{{ServiceAccountToken: &corev1.ServiceAccountTokenProjection{Path: "token"}}}}}}}
		}, []string{prefix + "volumes[0].projected.sources[0].serviceAccountToken", "a service account token is mounted only when the stream sets spec.verificationServiceAccount.mountToken: true"}},
	} {
		v := verifyJob("e2e", "true")
		tc.edit(&v.Job.Template.Spec.Template.Spec)
		err := a.client.Create(ctx, streamOf(a.namespace, "hostile-"+tc.name, []string{"hostile-web"}, v))
		if err == nil {
			t.Errorf("%s: the stream was created", tc.name)
			continue
		}
		for _, w := range tc.want {
			if !strings.Contains(err.Error(), w) {
				t.Errorf("%s: refused with %q, which does not say %q", tc.name, err, w)
			}
		}
	}
	// A stream admitted as it is, then edited to run privileged.
	s := streamOf(a.namespace, "hostile-edit", []string{"hostile-web"}, verifyJob("e2e", "true"))
	asTenant(t, a, s)
	err := retry.RetryOnConflict(retry.DefaultRetry, func() error {
		if err := a.client.Get(ctx, client.ObjectKeyFromObject(s), s); err != nil {
			return err
		}
		s.Spec.Verification[0].Job.Template.Spec.Template.Spec.HostPID = true
		return a.client.Update(ctx, s)
	})
	if err == nil || !strings.Contains(err.Error(), prefix+"hostPID: must not be true") {
		t.Errorf("editing the stream to share the node's process namespace: %v", err)
	}
	var streams v1alpha1.ReleaseStreamList
	NewWithT(t).Expect(env.Client.List(ctx, &streams, client.InNamespace(a.namespace))).To(Succeed())
	for _, st := range streams.Items {
		if strings.HasPrefix(st.Name, "hostile-") && st.Name != "hostile-edit" {
			t.Errorf("stream %s exists", st.Name)
		}
	}
	checkNothingOutside(t, since, a)
}
