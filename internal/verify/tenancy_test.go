package verify

import (
	"errors"
	"slices"
	"strings"
	"testing"

	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/utils/ptr"

	"github.com/release-controller/release-controller/api/v1alpha1"
)

func TestCheckPodSpec(t *testing.T) {
	const p = "job.template.spec.template.spec"
	bot := &v1alpha1.VerificationServiceAccount{Name: "tests-bot"}
	withToken := &v1alpha1.VerificationServiceAccount{Name: "tests-bot", MountToken: true}
	sc := func(f func(*corev1.SecurityContext)) *corev1.SecurityContext {
		s := &corev1.SecurityContext{}
		f(s)
		return s
	}
	tokenVolume := corev1.Volume{Name: "token", VolumeSource: corev1.VolumeSource{Projected: &corev1.ProjectedVolumeSource{Sources: []corev1.VolumeProjection{
		{ConfigMap: &corev1.ConfigMapProjection{LocalObjectReference: corev1.LocalObjectReference{Name: "ca"}}},
		{ServiceAccountToken: &corev1.ServiceAccountTokenProjection{Path: "token"}},
	}}}}
	tests := []struct {
		name    string
		account *v1alpha1.VerificationServiceAccount
		mutate  func(s *corev1.PodSpec)
		want    map[string]string // field -> a word of its rule
	}{
		{"a plain pod", nil, func(*corev1.PodSpec) {}, nil},
		{"the safe settings", nil, func(s *corev1.PodSpec) {
			s.HostUsers = ptr.To(false)
			s.ServiceAccountName = "default"
			s.AutomountServiceAccountToken = ptr.To(true) // decided by the stream, not refused
			s.Containers[0].SecurityContext = sc(func(c *corev1.SecurityContext) {
				c.Privileged = ptr.To(false)
				c.AllowPrivilegeEscalation = ptr.To(true)
				c.ProcMount = ptr.To(corev1.DefaultProcMount)
				c.Capabilities = &corev1.Capabilities{Drop: []corev1.Capability{"ALL"}}
			})
			s.Volumes = []corev1.Volume{{Name: "scratch", VolumeSource: corev1.VolumeSource{EmptyDir: &corev1.EmptyDirVolumeSource{}}}}
		}, nil},
		{"hostNetwork", nil, func(s *corev1.PodSpec) { s.HostNetwork = true }, map[string]string{p + ".hostNetwork": "network namespace"}},
		{"hostPID", nil, func(s *corev1.PodSpec) { s.HostPID = true }, map[string]string{p + ".hostPID": "process namespace"}},
		{"hostIPC", nil, func(s *corev1.PodSpec) { s.HostIPC = true }, map[string]string{p + ".hostIPC": "IPC namespace"}},
		{"hostPath volume", nil, func(s *corev1.PodSpec) {
			s.Volumes = []corev1.Volume{
				{Name: "scratch", VolumeSource: corev1.VolumeSource{EmptyDir: &corev1.EmptyDirVolumeSource{}}},
				{Name: "root", VolumeSource: corev1.VolumeSource{HostPath: &corev1.HostPathVolumeSource{Path: "/"}}},
			}
		}, map[string]string{p + ".volumes[1].hostPath": "hostPath volumes are not allowed"}},
		{"privileged container", nil, func(s *corev1.PodSpec) {
			s.Containers[0].SecurityContext = sc(func(c *corev1.SecurityContext) { c.Privileged = ptr.To(true) })
		}, map[string]string{p + ".containers[0].securityContext.privileged": "privileged"}},
		{"privileged init container", nil, func(s *corev1.PodSpec) {
			s.InitContainers = []corev1.Container{{Name: "init", Image: "busybox", SecurityContext: sc(func(c *corev1.SecurityContext) { c.Privileged = ptr.To(true) })}}
		}, map[string]string{p + ".initContainers[0].securityContext.privileged": "privileged"}},
		{"privileged ephemeral container", nil, func(s *corev1.PodSpec) {
			s.EphemeralContainers = []corev1.EphemeralContainer{{EphemeralContainerCommon: corev1.EphemeralContainerCommon{
				Name: "debug", Image: "busybox", SecurityContext: sc(func(c *corev1.SecurityContext) { c.Privileged = ptr.To(true) }),
			}}}
		}, map[string]string{p + ".ephemeralContainers[0].securityContext.privileged": "privileged"}},
		{"added capabilities", nil, func(s *corev1.PodSpec) {
			s.Containers[0].SecurityContext = sc(func(c *corev1.SecurityContext) {
				c.Capabilities = &corev1.Capabilities{Add: []corev1.Capability{"NET_ADMIN"}, Drop: []corev1.Capability{"ALL"}}
			})
		}, map[string]string{p + ".containers[0].securityContext.capabilities.add": "capabilities"}},
		{"procMount Unmasked", nil, func(s *corev1.PodSpec) {
			s.Containers[0].SecurityContext = sc(func(c *corev1.SecurityContext) { c.ProcMount = ptr.To(corev1.UnmaskedProcMount) })
		}, map[string]string{p + ".containers[0].securityContext.procMount": "Unmasked"}},
		{"HostProcess container", nil, func(s *corev1.PodSpec) {
			s.Containers[0].SecurityContext = sc(func(c *corev1.SecurityContext) {
				c.WindowsOptions = &corev1.WindowsSecurityContextOptions{HostProcess: ptr.To(true)}
			})
		}, map[string]string{p + ".containers[0].securityContext.windowsOptions.hostProcess": "HostProcess"}},
		{"HostProcess pod", nil, func(s *corev1.PodSpec) {
			s.SecurityContext = &corev1.PodSecurityContext{WindowsOptions: &corev1.WindowsSecurityContextOptions{HostProcess: ptr.To(true)}}
		}, map[string]string{p + ".securityContext.windowsOptions.hostProcess": "HostProcess"}},
		{"another service account", nil, func(s *corev1.PodSpec) { s.ServiceAccountName = "release-controller" },
			map[string]string{p + ".serviceAccountName": `"default", the stream's spec.verificationServiceAccount.name`}},
		{"another service account, deprecated field", nil, func(s *corev1.PodSpec) { s.DeprecatedServiceAccount = "release-controller" },
			map[string]string{p + ".serviceAccount": `"default"`}},
		{"the default account when the stream declares another", bot, func(s *corev1.PodSpec) { s.ServiceAccountName = "default" },
			map[string]string{p + ".serviceAccountName": `"tests-bot"`}},
		{"the declared account", bot, func(s *corev1.PodSpec) { s.ServiceAccountName = "tests-bot"; s.DeprecatedServiceAccount = "tests-bot" }, nil},
		{"a projected token without mountToken", bot, func(s *corev1.PodSpec) { s.Volumes = []corev1.Volume{tokenVolume} },
			map[string]string{p + ".volumes[0].projected.sources[1].serviceAccountToken": "mountToken: true"}},
		{"a projected token with mountToken", withToken, func(s *corev1.PodSpec) { s.Volumes = []corev1.Volume{tokenVolume} }, nil},
		{"every rule at once", nil, func(s *corev1.PodSpec) {
			s.HostNetwork, s.HostPID, s.HostIPC = true, true, true
			s.ServiceAccountName = "admin"
			s.Volumes = []corev1.Volume{{Name: "root", VolumeSource: corev1.VolumeSource{HostPath: &corev1.HostPathVolumeSource{Path: "/"}}}}
			s.Containers = append(s.Containers, corev1.Container{Name: "second", SecurityContext: sc(func(c *corev1.SecurityContext) {
				c.Privileged = ptr.To(true)
				c.Capabilities = &corev1.Capabilities{Add: []corev1.Capability{"SYS_ADMIN"}}
			})})
		}, map[string]string{
			p + ".hostNetwork": "network", p + ".hostPID": "process", p + ".hostIPC": "IPC", p + ".serviceAccountName": "account",
			p + ".volumes[0].hostPath": "hostPath", p + ".containers[1].securityContext.privileged": "privileged",
			p + ".containers[1].securityContext.capabilities.add": "capabilities",
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			spec := corev1.PodSpec{RestartPolicy: corev1.RestartPolicyNever, Containers: []corev1.Container{{Name: "e2e", Image: "tests"}}}
			tt.mutate(&spec)
			got := CheckPodSpec(p, &spec, tt.account)
			fields := map[string]bool{}
			for _, v := range got {
				fields[v.Field] = true
				want, ok := tt.want[v.Field]
				if !ok {
					t.Errorf("unexpected violation %s", v)
					continue
				}
				if !strings.Contains(v.Rule, want) {
					t.Errorf("%s: rule %q does not say %q", v.Field, v.Rule, want)
				}
			}
			for field := range tt.want {
				if !fields[field] {
					t.Errorf("no violation of %s; got %v", field, got)
				}
			}
		})
	}
}

func templated(spec corev1.PodSpec) v1alpha1.Verification {
	return v1alpha1.Verification{Name: "e2e", Job: &v1alpha1.JobBackend{Template: batchv1.JobTemplateSpec{Spec: batchv1.JobSpec{
		Template: corev1.PodTemplateSpec{Spec: spec},
	}}}}
}

// TestNewJobRefusesTemplates: NewJob builds no Job of a template the rules refuse, and says
// which fields and rules.
func TestNewJobRefusesTemplates(t *testing.T) {
	p := payloadWith(nil, nil)
	v := templated(corev1.PodSpec{
		Containers: []corev1.Container{{Name: "e2e", Image: "tests", SecurityContext: &corev1.SecurityContext{Privileged: ptr.To(true)}}},
		Volumes:    []corev1.Volume{{Name: "root", VolumeSource: corev1.VolumeSource{HostPath: &corev1.HostPathVolumeSource{Path: "/"}}}},
	})
	job, err := NewJob(p, Launch{Verification: v, Attempt: 1})
	var refusal *Refusal
	if job != nil || !errors.As(err, &refusal) {
		t.Fatalf("NewJob = %v, %v; want a *Refusal", job, err)
	}
	for _, want := range []string{"verification e2e breaks the tenancy rules",
		"job.template.spec.template.spec.containers[0].securityContext.privileged: must not be true",
		"job.template.spec.template.spec.volumes[0].hostPath: hostPath volumes are not allowed"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("%q does not say %q", err, want)
		}
	}
}

// TestNewJobRunsAsTheDeclaredAccount: every Job runs as the payload's account, with its token
// mounted only when the stream asks and the template did not turn it off.
func TestNewJobRunsAsTheDeclaredAccount(t *testing.T) {
	tests := []struct {
		name      string
		account   *v1alpha1.VerificationServiceAccount
		template  *bool
		wantName  string
		wantToken bool
	}{
		{"no account declared", nil, nil, "default", false},
		{"the template asks for the token", nil, ptr.To(true), "default", false},
		{"declared, no token", &v1alpha1.VerificationServiceAccount{Name: "tests-bot"}, nil, "tests-bot", false},
		{"declared with its token", &v1alpha1.VerificationServiceAccount{Name: "tests-bot", MountToken: true}, nil, "tests-bot", true},
		{"declared with its token, the template turns it off", &v1alpha1.VerificationServiceAccount{Name: "tests-bot", MountToken: true}, ptr.To(false), "tests-bot", false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			p := payloadWith(nil, nil)
			p.Spec.PayloadVerificationConfig.ServiceAccount = tt.account
			v := templated(corev1.PodSpec{AutomountServiceAccountToken: tt.template, Containers: []corev1.Container{{Name: "e2e", Image: "tests"}}})
			for _, build := range []func(*v1alpha1.ReleasePayload, Launch) (*batchv1.Job, error){NewJob, NewClusterJob} {
				job, err := build(p, Launch{Verification: v, Attempt: 1})
				if err != nil {
					t.Fatal(err)
				}
				spec := job.Spec.Template.Spec
				if spec.ServiceAccountName != tt.wantName || spec.DeprecatedServiceAccount != "" || spec.AutomountServiceAccountToken == nil || *spec.AutomountServiceAccountToken != tt.wantToken {
					t.Errorf("pod runs as %q (serviceAccount %q), token %v; want %q, token %v",
						spec.ServiceAccountName, spec.DeprecatedServiceAccount, ptr.Deref(spec.AutomountServiceAccountToken, true), tt.wantName, tt.wantToken)
				}
			}
		})
	}
}

func TestCheckProwJobNamespace(t *testing.T) {
	p := payloadWith(nil, nil) // namespace "ns"
	prow := func(namespace string) *v1alpha1.Verification {
		return &v1alpha1.Verification{Name: "e2e-aws", ProwJob: &v1alpha1.ProwJobBackend{Namespace: namespace}}
	}
	tests := []struct {
		name    string
		v       *v1alpha1.Verification
		allowed []string
		refused string
	}{
		{"a Job", &v1alpha1.Verification{Name: "e2e", Job: &v1alpha1.JobBackend{}}, nil, ""},
		{"the payload's namespace by default", prow(""), nil, ""},
		{"the payload's namespace named", prow("ns"), nil, ""},
		{"an allowed namespace", prow("ci"), []string{"prow", "ci"}, ""},
		{"another namespace, none allowed", prow("kube-system"), nil, `prowJob.namespace: "kube-system" is neither the payload's namespace "ns" nor allowed by the controller's --prowjob-namespace (which lists none)`},
		{"another namespace than those allowed", prow("kube-system"), []string{"ci"}, "(which lists ci)"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			err := CheckProwJobNamespace(p, tt.v, tt.allowed)
			switch {
			case tt.refused == "" && err != nil:
				t.Errorf("refused: %v", err)
			case tt.refused != "" && (err == nil || !strings.Contains(err.Error(), tt.refused)):
				t.Errorf("got %v, want a refusal saying %q", err, tt.refused)
			}
			var refusal *Refusal
			if err != nil && (!errors.As(err, &refusal) || !slices.ContainsFunc(refusal.Violations, func(v Violation) bool { return v.Field == "prowJob.namespace" })) {
				t.Errorf("%v is no *Refusal naming prowJob.namespace", err)
			}
		})
	}
}
