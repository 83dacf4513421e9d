package verify

import (
	"fmt"
	"slices"
	"strings"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/utils/ptr"

	"github.com/release-controller/release-controller/api/v1alpha1"
)

// A verification's Job template is a pod spec written by a tenant of the stream's namespace,
// and the controller creates it with its own rights. So the template may not reach past its
// pod (host namespaces, the node's files, privileged or extra-capable containers) and runs as
// the stream's declared account only. The same rules hold at admission (the ValidatingAdmission
// Policy of config/crd/tenancy); these are checked again before every Job is created, since
// templates kept in a ConfigMap and objects admitted before the policy was installed never
// passed it.

// Violation is one field a tenancy rule refuses.
type Violation struct {
	// Field is the field's path, from the verification (e.g.
	// job.template.spec.template.spec.hostNetwork).
	Field string
	// Rule says what the rule refuses and why.
	Rule string
}

func (v Violation) String() string { return v.Field + ": " + v.Rule }

// Refusal is a run the tenancy rules refuse to create: nothing is created, and the run fails
// with this message.
type Refusal struct {
	Verification string
	Violations   []Violation
}

func (r *Refusal) Error() string {
	parts := make([]string, len(r.Violations))
	for i, v := range r.Violations {
		parts[i] = v.String()
	}
	return fmt.Sprintf("verification %s breaks the tenancy rules: %s", r.Verification, strings.Join(parts, "; "))
}

// The rules, as their messages say them; the admission policy's messages say the same.
const (
	ruleHostNetwork  = "must not be true: a verification pod may not share the node's network namespace"
	ruleHostPID      = "must not be true: a verification pod may not share the node's process namespace"
	ruleHostIPC      = "must not be true: a verification pod may not share the node's IPC namespace"
	ruleHostPath     = "hostPath volumes are not allowed: they expose the node's files"
	rulePrivileged   = "must not be true: a privileged container has the node's devices and every capability"
	ruleCapabilities = "must be empty: a verification container may not add Linux capabilities"
	ruleProcMount    = "must not be Unmasked: it exposes the node's /proc"
	ruleHostProcess  = "must not be true: a HostProcess container runs on the Windows node itself"
	ruleTokenVolume  = "a service account token is mounted only when the stream sets spec.verificationServiceAccount.mountToken: true"
)

func ruleAccount(account string) string {
	return fmt.Sprintf("must be empty or %q, the stream's spec.verificationServiceAccount.name: a verification pod runs as no other account", account)
}

// CheckPodSpec returns every field of spec, a tenant's pod spec at path, that the tenancy
// rules refuse, in the order of the fields: host namespaces (hostNetwork, hostPID, hostIPC),
// hostPath volumes, privileged containers, added capabilities, an Unmasked procMount, Windows
// HostProcess containers, a service account other than account's (serviceAccountName, or the
// deprecated serviceAccount), and, unless account mounts its token, projected
// serviceAccountToken volumes. Init and ephemeral containers are containers too. hostUsers is
// not a rule: false is the safer setting (a user namespace of the pod's own) and true is the
// default. allowPrivilegeEscalation is not one either: it only decides whether a process
// may gain privileges inside its container (setuid), which the rules above bound.
func CheckPodSpec(path string, spec *corev1.PodSpec, account *v1alpha1.VerificationServiceAccount) []Violation {
	var out []Violation
	refuse := func(field, rule string) {
		out = append(out, Violation{Field: path + "." + field, Rule: rule})
	}
	if spec.HostNetwork {
		refuse("hostNetwork", ruleHostNetwork)
	}
	if spec.HostPID {
		refuse("hostPID", ruleHostPID)
	}
	if spec.HostIPC {
		refuse("hostIPC", ruleHostIPC)
	}
	if sc := spec.SecurityContext; sc != nil && sc.WindowsOptions != nil && ptr.Deref(sc.WindowsOptions.HostProcess, false) {
		refuse("securityContext.windowsOptions.hostProcess", ruleHostProcess)
	}
	name := account.AccountName()
	if spec.ServiceAccountName != "" && spec.ServiceAccountName != name {
		refuse("serviceAccountName", ruleAccount(name))
	}
	if spec.DeprecatedServiceAccount != "" && spec.DeprecatedServiceAccount != name {
		refuse("serviceAccount", ruleAccount(name))
	}
	for i, v := range spec.Volumes {
		if v.HostPath != nil {
			refuse(fmt.Sprintf("volumes[%d].hostPath", i), ruleHostPath)
		}
		if v.Projected != nil && !account.MountsToken() {
			for j, source := range v.Projected.Sources {
				if source.ServiceAccountToken != nil {
					refuse(fmt.Sprintf("volumes[%d].projected.sources[%d].serviceAccountToken", i, j), ruleTokenVolume)
				}
			}
		}
	}
	checkContainer := func(field string, sc *corev1.SecurityContext) {
		if sc == nil {
			return
		}
		if ptr.Deref(sc.Privileged, false) {
			refuse(field+".securityContext.privileged", rulePrivileged)
		}
		if sc.Capabilities != nil && len(sc.Capabilities.Add) > 0 {
			refuse(field+".securityContext.capabilities.add", ruleCapabilities)
		}
		if ptr.Deref(sc.ProcMount, corev1.DefaultProcMount) == corev1.UnmaskedProcMount {
			refuse(field+".securityContext.procMount", ruleProcMount)
		}
		if sc.WindowsOptions != nil && ptr.Deref(sc.WindowsOptions.HostProcess, false) {
			refuse(field+".securityContext.windowsOptions.hostProcess", ruleHostProcess)
		}
	}
	for i := range spec.InitContainers {
		checkContainer(fmt.Sprintf("initContainers[%d]", i), spec.InitContainers[i].SecurityContext)
	}
	for i := range spec.Containers {
		checkContainer(fmt.Sprintf("containers[%d]", i), spec.Containers[i].SecurityContext)
	}
	for i := range spec.EphemeralContainers {
		checkContainer(fmt.Sprintf("ephemeralContainers[%d]", i), spec.EphemeralContainers[i].SecurityContext)
	}
	return out
}

// jobPodPath is where a Job backend's pod spec is, from its verification.
const jobPodPath = "job.template.spec.template.spec"

// CheckJobTemplate checks the Job template of v, a verification of p: a *Refusal naming
// every violation, or nil. A verification without a Job backend passes.
func CheckJobTemplate(p *v1alpha1.ReleasePayload, v *v1alpha1.Verification) error {
	return CheckTemplate(v, p.Spec.PayloadVerificationConfig.ServiceAccount)
}

// CheckTemplate checks the Job template of v, whose pods run as account: a *Refusal naming
// every violation, or nil. A verification without a Job backend passes.
func CheckTemplate(v *v1alpha1.Verification, account *v1alpha1.VerificationServiceAccount) error {
	if v.Job == nil {
		return nil
	}
	if violations := CheckPodSpec(jobPodPath, &v.Job.Template.Spec.Template.Spec, account); len(violations) > 0 {
		return &Refusal{Verification: v.Name, Violations: violations}
	}
	return nil
}

// asAccount makes a Job's pod run as account: its serviceAccountName, and its token mounted
// only when account mounts it and the template did not turn it off.
func asAccount(spec *corev1.PodSpec, account *v1alpha1.VerificationServiceAccount) {
	spec.ServiceAccountName = account.AccountName()
	spec.DeprecatedServiceAccount = ""
	spec.AutomountServiceAccountToken = ptr.To(account.MountsToken() && ptr.Deref(spec.AutomountServiceAccountToken, true))
}

// CheckProwJobNamespace refuses a ProwJob of v, a verification of p, bound for another
// namespace than p's that allowed (--prowjob-namespace) does not list: a tenant may not
// send ProwJobs, and what Prow does with them, into a namespace the operator did not allow.
func CheckProwJobNamespace(p *v1alpha1.ReleasePayload, v *v1alpha1.Verification, allowed []string) error {
	return CheckProwJobNamespaceOf("payload", p.Namespace, v, allowed)
}

// CheckProwJobNamespaceOf is CheckProwJobNamespace for a verification of any object (owner
// names its kind in the message, e.g. "pipeline") in namespace home.
func CheckProwJobNamespaceOf(owner, home string, v *v1alpha1.Verification, allowed []string) error {
	if v.ProwJob == nil || v.ProwJob.Namespace == "" || v.ProwJob.Namespace == home || slices.Contains(allowed, v.ProwJob.Namespace) {
		return nil
	}
	listed := "which lists none"
	if len(allowed) > 0 {
		listed = "which lists " + strings.Join(allowed, ", ")
	}
	return &Refusal{Verification: v.Name, Violations: []Violation{{
		Field: "prowJob.namespace",
		Rule: fmt.Sprintf("%q is neither the %s's namespace %q nor allowed by the controller's --prowjob-namespace (%s)",
			v.ProwJob.Namespace, owner, home, listed),
	}}}
}
