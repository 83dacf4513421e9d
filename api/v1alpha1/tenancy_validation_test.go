//go:build !unit

package v1alpha1_test

import (
	"context"
	"testing"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/utils/ptr"

	"github.com/release-controller/release-controller/api/v1alpha1"
)

// The tenancy rules of verification Job templates, at admission (the policies of
// config/crd/policies/release-controller.dev_verification-templates-policy.yaml): each
// forbidden field of a stream's or an inline payload's template is refused with a message
// naming the field and the rule.

// forbiddenTemplates are pod specs the rules refuse, with the message each must give (the
// verification is e2e, the stream's account the default).
var forbiddenTemplates = []struct {
	name   string
	mutate func(s *corev1.PodSpec)
	want   string
}{
	{"hostNetwork", func(s *corev1.PodSpec) { s.HostNetwork = true },
		"[e2e].job.template.spec.template.spec.hostNetwork: must not be true: a verification pod may not share the node's network namespace"},
	{"hostPID", func(s *corev1.PodSpec) { s.HostPID = true },
		"[e2e].job.template.spec.template.spec.hostPID: must not be true: a verification pod may not share the node's process namespace"},
	{"hostIPC", func(s *corev1.PodSpec) { s.HostIPC = true },
		"[e2e].job.template.spec.template.spec.hostIPC: must not be true: a verification pod may not share the node's IPC namespace"},
	{"hostPath volume", func(s *corev1.PodSpec) {
		s.Volumes = []corev1.Volume{
			{Name: "scratch", VolumeSource: corev1.VolumeSource{EmptyDir: &corev1.EmptyDirVolumeSource{}}},
			{Name: "root", VolumeSource: corev1.VolumeSource{HostPath: &corev1.HostPathVolumeSource{Path: "/"}}},
		}
	}, "[e2e].job.template.spec.template.spec.volumes[1].hostPath: hostPath volumes are not allowed: they expose the node's files"},
	{"privileged container", func(s *corev1.PodSpec) {
		s.Containers = append(s.Containers, corev1.Container{Name: "second", Image: "tests", SecurityContext: &corev1.SecurityContext{Privileged: ptr.To(true)}})
	}, "[e2e].job.template.spec.template.spec.containers[1].securityContext.privileged: must not be true: a privileged container has the node's devices and every capability"},
	{"privileged init container", func(s *corev1.PodSpec) {
		s.InitContainers = []corev1.Container{{Name: "init", Image: "busybox", SecurityContext: &corev1.SecurityContext{Privileged: ptr.To(true)}}}
	}, "[e2e].job.template.spec.template.spec.initContainers[0].securityContext.privileged: must not be true"},
	{"added capabilities", func(s *corev1.PodSpec) {
		s.Containers[0].SecurityContext = &corev1.SecurityContext{Capabilities: &corev1.Capabilities{Add: []corev1.Capability{"NET_ADMIN"}}}
	}, "[e2e].job.template.spec.template.spec.containers[0].securityContext.capabilities.add: must be empty: a verification container may not add Linux capabilities"},
	{"procMount Unmasked", func(s *corev1.PodSpec) {
		s.Containers[0].SecurityContext = &corev1.SecurityContext{ProcMount: ptr.To(corev1.UnmaskedProcMount)}
	}, "[e2e].job.template.spec.template.spec.containers[0].securityContext.procMount: must not be Unmasked: it exposes the node's /proc"},
	{"HostProcess pod", func(s *corev1.PodSpec) {
		s.SecurityContext = &corev1.PodSecurityContext{WindowsOptions: &corev1.WindowsSecurityContextOptions{HostProcess: ptr.To(true)}}
	}, "[e2e].job.template.spec.template.spec.securityContext.windowsOptions.hostProcess: must not be true: a HostProcess container runs on the Windows node itself"},
	{"HostProcess container", func(s *corev1.PodSpec) {
		s.Containers[0].SecurityContext = &corev1.SecurityContext{WindowsOptions: &corev1.WindowsSecurityContextOptions{HostProcess: ptr.To(true)}}
	}, "[e2e].job.template.spec.template.spec.containers[0].securityContext.windowsOptions.hostProcess: must not be true"},
	{"another service account", func(s *corev1.PodSpec) { s.ServiceAccountName = "release-controller" },
		`[e2e].job.template.spec.template.spec.serviceAccountName: must be empty or "default", the stream's spec.verificationServiceAccount.name: a verification pod runs as no other account`},
	{"another service account, deprecated field", func(s *corev1.PodSpec) { s.DeprecatedServiceAccount = "release-controller" },
		`[e2e].job.template.spec.template.spec.serviceAccount: must be empty or "default"`},
	{"a projected service account token", func(s *corev1.PodSpec) {
		s.Volumes = []corev1.Volume{{Name: "token", VolumeSource: corev1.VolumeSource{Projected: &corev1.ProjectedVolumeSource{Sources: []corev1.VolumeProjection{
			{ServiceAccountToken: &corev1.ServiceAccountTokenProjection{Path: "token"}},
		}}}}}
	}, "[e2e].job.template.spec.template.spec.volumes[0].projected.sources[0].serviceAccountToken: a service account token is mounted only when the stream sets spec.verificationServiceAccount.mountToken: true"},
}

func TestForbiddenStreamTemplatesAreRefused(t *testing.T) {
	ns := env.Namespace(t)
	for _, tt := range forbiddenTemplates {
		t.Run(tt.name, func(t *testing.T) {
			s := validStream(ns)
			tt.mutate(&s.Spec.Verification[0].Job.Template.Spec.Template.Spec)
			expectRejected(t, env.Client.Create(context.Background(), s), "spec.verification"+tt.want)
		})
	}
	// An update that adds a forbidden field is refused as well.
	t.Run("on update", func(t *testing.T) {
		s := validStream(ns)
		s.Name = "updated"
		if err := env.Client.Create(context.Background(), s); err != nil {
			t.Fatal(err)
		}
		s.Spec.Verification[0].Job.Template.Spec.Template.Spec.HostPID = true
		expectRejected(t, env.Client.Update(context.Background(), s), "spec.verification[e2e].job.template.spec.template.spec.hostPID: must not be true")
	})
}

func TestForbiddenPayloadTemplatesAreRefused(t *testing.T) {
	ns := env.Namespace(t)
	for _, tt := range forbiddenTemplates {
		t.Run(tt.name, func(t *testing.T) {
			p := validPayload(ns)
			tt.mutate(&p.Spec.PayloadVerificationConfig.Verifications[0].Job.Template.Spec.Template.Spec)
			expectRejected(t, env.Client.Create(context.Background(), p), "spec.payloadVerificationConfig.verifications"+tt.want)
		})
	}
	t.Run("an account other than the payload's", func(t *testing.T) {
		p := validPayload(ns)
		p.Spec.PayloadVerificationConfig.ServiceAccount = &v1alpha1.VerificationServiceAccount{Name: "tests-bot"}
		p.Spec.PayloadVerificationConfig.Verifications[0].Job.Template.Spec.Template.Spec.ServiceAccountName = "default"
		expectRejected(t, env.Client.Create(context.Background(), p), `serviceAccountName: must be empty or "tests-bot"`)
	})
}

// TestDeclaredAccountIsAdmitted: a template naming the stream's account, and a projected token
// when the stream mounts it, are admitted; every field of a rule set to its safe value is too.
func TestDeclaredAccountIsAdmitted(t *testing.T) {
	ns := env.Namespace(t)
	ctx := context.Background()
	s := validStream(ns)
	s.Spec.VerificationServiceAccount = &v1alpha1.VerificationServiceAccount{Name: "tests-bot", MountToken: true}
	pod := &s.Spec.Verification[0].Job.Template.Spec.Template.Spec
	pod.ServiceAccountName = "tests-bot"
	pod.HostNetwork, pod.HostPID, pod.HostIPC = false, false, false
	pod.HostUsers = ptr.To(false)
	pod.Volumes = []corev1.Volume{{Name: "token", VolumeSource: corev1.VolumeSource{Projected: &corev1.ProjectedVolumeSource{Sources: []corev1.VolumeProjection{
		{ServiceAccountToken: &corev1.ServiceAccountTokenProjection{Path: "token"}},
	}}}}}
	pod.Containers[0].SecurityContext = &corev1.SecurityContext{
		Privileged: ptr.To(false), AllowPrivilegeEscalation: ptr.To(false), ProcMount: ptr.To(corev1.DefaultProcMount),
		Capabilities: &corev1.Capabilities{Drop: []corev1.Capability{"ALL"}},
	}
	if err := env.Client.Create(ctx, s); err != nil {
		t.Fatalf("a stream running its Jobs as its declared account is refused: %v", err)
	}
	// The account's name defaults to the namespace's own.
	d := validStream(ns)
	d.Name = "defaulted"
	d.Spec.VerificationServiceAccount = &v1alpha1.VerificationServiceAccount{MountToken: true}
	if err := env.Client.Create(ctx, d); err != nil {
		t.Fatal(err)
	}
	if got := d.Spec.VerificationServiceAccount.Name; got != "default" {
		t.Errorf("verificationServiceAccount.name defaulted to %q, want default", got)
	}
	bad := validStream(ns)
	bad.Name = "bad-account"
	bad.Spec.VerificationServiceAccount = &v1alpha1.VerificationServiceAccount{Name: "Not An Account"}
	expectRejected(t, env.Client.Create(ctx, bad), "name must be a ServiceAccount's name")

	p := validPayload(ns)
	p.Spec.PayloadVerificationConfig.ServiceAccount = s.Spec.VerificationServiceAccount
	p.Spec.PayloadVerificationConfig.Verifications[0].Job = s.Spec.Verification[0].Job
	if err := env.Client.Create(ctx, p); err != nil {
		t.Fatalf("a payload running its Jobs as its declared account is refused: %v", err)
	}
}

// TestNullTemplateFieldsBreakNoRule: templates are schemaless, so any field may be null (a Go
// client writes "containers": null for an empty template): null is no violation, and the
// rules do not fail to evaluate on it.
func TestNullTemplateFieldsBreakNoRule(t *testing.T) {
	ns := env.Namespace(t)
	s := &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "release-controller.dev/v1alpha1",
		"kind":       "ReleaseStream",
		"metadata":   map[string]any{"name": "nulls", "namespace": ns},
		"spec": map[string]any{
			"tagPrefix":         "4.15.0-0.nightly",
			"payloadRepository": "registry.example.com/product/release",
			"components":        []any{map[string]any{"name": "api", "image": "registry.example.com/product/api:latest"}},
			"verification": []any{
				map[string]any{"name": "empty", "job": map[string]any{"template": map[string]any{"spec": nil}}},
				map[string]any{"name": "nulls", "job": map[string]any{"template": map[string]any{"spec": map[string]any{"template": map[string]any{"spec": map[string]any{
					"hostNetwork": nil, "serviceAccountName": nil, "securityContext": nil, "volumes": nil, "initContainers": nil,
					"containers": []any{map[string]any{"name": "e2e", "image": "tests", "securityContext": map[string]any{"capabilities": map[string]any{"add": nil}, "windowsOptions": nil}}},
				}}}}}},
			},
		},
	}}
	if err := env.Client.Create(context.Background(), s); err != nil {
		t.Fatalf("a stream whose template has null fields is refused: %v", err)
	}
}
