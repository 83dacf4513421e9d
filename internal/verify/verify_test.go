package verify

import (
	"errors"
	"maps"
	"strings"
	"testing"
	"time"

	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	prowv1 "github.com/release-controller/release-controller/api/prow/v1"
	"github.com/release-controller/release-controller/api/v1alpha1"
)

func TestSelectUpgradeSource(t *testing.T) {
	accepted := []string{
		"4.14.3-2026-11-01-000000", "4.15.0-2026-11-20-000000", "4.15.1-2026-11-21-000000",
		"4.15.1-2026-11-22-000000", "4.14.9-2026-11-10-000000", "not-semver", "4.16.0-2026-11-23-000000",
	}
	tests := []struct {
		mode   v1alpha1.UpgradeFrom
		tag    string
		want   string
		wantOK bool
	}{
		{v1alpha1.UpgradeFromPrevious, "4.15.1-2026-11-22-120000", "4.15.1-2026-11-22-000000", true},
		{v1alpha1.UpgradeFromPreviousMinus1, "4.15.1-2026-11-22-120000", "4.15.1-2026-11-21-000000", true},
		{v1alpha1.UpgradeFromPreviousMinor, "4.15.1-2026-11-22-120000", "4.14.9-2026-11-10-000000", true},
		{v1alpha1.UpgradeFromPreviousPatch, "4.15.1-2026-11-22-120000", "4.15.0-2026-11-20-000000", true},
		{v1alpha1.UpgradeFromPreviousPatch, "4.15.0-2026-11-22-120000", "", false},
		{v1alpha1.UpgradeFromPreviousMinor, "4.0.0-2026-11-22-120000", "", false},
		{v1alpha1.UpgradeFromPrevious, "4.14.0-2026-01-01-000000", "", false},
		{v1alpha1.UpgradeFromPrevious, "garbage", "", false},
		// The payload itself, and newer ones, are never sources.
		{v1alpha1.UpgradeFromPrevious, "4.15.0-2026-11-20-000000", "4.14.9-2026-11-10-000000", true},
	}
	for _, tt := range tests {
		got, ok := SelectUpgradeSource(tt.mode, tt.tag, accepted)
		if got != tt.want || ok != tt.wantOK {
			t.Errorf("SelectUpgradeSource(%s, %s) = %q, %v; want %q, %v", tt.mode, tt.tag, got, ok, tt.want, tt.wantOK)
		}
	}
}

func TestBackoffDelay(t *testing.T) {
	b := Backoff{Base: 10 * time.Second, Cap: time.Minute}
	for failures, want := range map[int32]time.Duration{1: 10 * time.Second, 2: 20 * time.Second, 3: 40 * time.Second, 4: time.Minute, 30: time.Minute} {
		if got := b.Delay(failures); got != want {
			t.Errorf("Delay(%d) = %s, want %s", failures, got, want)
		}
	}
}

var now = time.Date(2026, 11, 22, 12, 0, 0, 0, time.UTC)

func ended(attempt int32, state v1alpha1.JobState, ago time.Duration) v1alpha1.JobRun {
	t := metav1.NewTime(now.Add(-ago))
	return v1alpha1.JobRun{Kind: v1alpha1.RunKindJob, Name: "r", Attempt: attempt, State: state, CompletionTime: &t}
}

func payloadWith(verifications []v1alpha1.Verification, status []v1alpha1.VerificationStatus) *v1alpha1.ReleasePayload {
	return &v1alpha1.ReleasePayload{
		ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "4.15.1-2026-11-22-120000"},
		Spec: v1alpha1.ReleasePayloadSpec{
			PayloadCoordinates:        v1alpha1.PayloadCoordinates{Stream: "nightly", Tag: "4.15.1-2026-11-22-120000"},
			PayloadVerificationConfig: v1alpha1.PayloadVerificationConfig{Verifications: verifications},
		},
		Status: v1alpha1.ReleasePayloadStatus{Phase: v1alpha1.PhaseReady, PayloadImage: "registry/release@sha256:abc", Verifications: status},
	}
}

func TestPlanRuns(t *testing.T) {
	backoff := Backoff{Base: time.Minute, Cap: 10 * time.Minute}
	own := []UpgradeSource{{Tag: "4.15.0-2026-11-20-000000", Image: "registry/release@sha256:old"}}
	accepted := Accepted{"nightly": own, "4.14-stable": {{Tag: "4.14.8", Image: "registry/stable@sha256:s8"}}}
	retried := v1alpha1.Verification{Name: "e2e", MaxRetries: 2}
	pending := v1alpha1.JobPending
	type launch struct {
		name        string
		attempt     int32
		upgradeFrom string
	}
	tests := []struct {
		name     string
		payload  *v1alpha1.ReleasePayload
		accepted Accepted
		want     []launch
		skipped  []string
		requeue  time.Duration
	}{
		{"not built yet", func() *v1alpha1.ReleasePayload {
			p := payloadWith([]v1alpha1.Verification{retried}, nil)
			p.Status.PayloadImage = ""
			return p
		}(), accepted, nil, nil, 0},
		{"failed payload", func() *v1alpha1.ReleasePayload {
			p := payloadWith([]v1alpha1.Verification{retried}, nil)
			p.Status.Phase = v1alpha1.PhaseFailed
			return p
		}(), accepted, nil, nil, 0},
		{"first runs", payloadWith([]v1alpha1.Verification{retried, {Name: "lint", Type: v1alpha1.Informing}}, nil), accepted,
			[]launch{{"e2e", 1, ""}, {"lint", 1, ""}}, nil, 0},
		{"running", payloadWith([]v1alpha1.Verification{retried}, []v1alpha1.VerificationStatus{{Name: "e2e", State: pending, Runs: []v1alpha1.JobRun{{Attempt: 1, State: pending}}}}), accepted,
			nil, nil, 0},
		{"retry waits for the backoff", payloadWith([]v1alpha1.Verification{retried}, []v1alpha1.VerificationStatus{{Name: "e2e", State: pending, Runs: []v1alpha1.JobRun{ended(1, v1alpha1.JobFailure, 20*time.Second)}}}), accepted,
			nil, nil, 40 * time.Second},
		{"retry after the backoff", payloadWith([]v1alpha1.Verification{retried}, []v1alpha1.VerificationStatus{{Name: "e2e", State: pending, Runs: []v1alpha1.JobRun{ended(1, v1alpha1.JobFailure, 2*time.Minute)}}}), accepted,
			[]launch{{"e2e", 2, ""}}, nil, 0},
		{"second retry backs off longer", payloadWith([]v1alpha1.Verification{retried}, []v1alpha1.VerificationStatus{{Name: "e2e", State: pending, Runs: []v1alpha1.JobRun{ended(1, v1alpha1.JobFailure, 5*time.Minute), ended(2, v1alpha1.JobUnknown, 90*time.Second)}}}), accepted,
			nil, nil, 30 * time.Second},
		{"out of attempts", payloadWith([]v1alpha1.Verification{retried}, []v1alpha1.VerificationStatus{{Name: "e2e", State: v1alpha1.JobFailure, Runs: []v1alpha1.JobRun{ended(1, v1alpha1.JobFailure, time.Hour), ended(2, v1alpha1.JobFailure, time.Hour), ended(3, v1alpha1.JobFailure, time.Hour)}}}), accepted,
			nil, nil, 0},
		{"passed", payloadWith([]v1alpha1.Verification{retried}, []v1alpha1.VerificationStatus{{Name: "e2e", State: v1alpha1.JobSuccess, Runs: []v1alpha1.JobRun{ended(1, v1alpha1.JobSuccess, time.Hour)}}}), accepted,
			nil, nil, 0},
		{"aggregated launches the missing runs", payloadWith([]v1alpha1.Verification{{Name: "agg", Aggregation: &v1alpha1.Aggregation{Runs: 3, PassRatio: 0.6}}},
			[]v1alpha1.VerificationStatus{{Name: "agg", State: pending, Runs: []v1alpha1.JobRun{{Attempt: 2, State: pending}}}}), accepted,
			[]launch{{"agg", 1, ""}, {"agg", 3, ""}}, nil, 0},
		{"upgrade from the previous accepted", payloadWith([]v1alpha1.Verification{{Name: "upgrade", UpgradeFrom: v1alpha1.UpgradeFromPrevious}}, nil), accepted,
			[]launch{{"upgrade", 1, "4.15.0-2026-11-20-000000"}}, nil, 0},
		{"upgrade without a candidate is skipped", payloadWith([]v1alpha1.Verification{{Name: "upgrade", UpgradeFrom: v1alpha1.UpgradeFromPreviousMinor}}, nil), accepted,
			nil, []string{"upgrade"}, 0},
		{"upgrade retry keeps its source", payloadWith([]v1alpha1.Verification{{Name: "upgrade", UpgradeFrom: v1alpha1.UpgradeFromPrevious, MaxRetries: 1}},
			[]v1alpha1.VerificationStatus{{Name: "upgrade", State: pending, Runs: []v1alpha1.JobRun{func() v1alpha1.JobRun {
				r := ended(1, v1alpha1.JobFailure, time.Hour)
				r.UpgradeFrom = "4.14.9-2026-11-10-000000"
				return r
			}()}}}), Accepted{"nightly": append([]UpgradeSource{{Tag: "4.14.9-2026-11-10-000000", Image: "registry/release@sha256:older"}}, own...)},
			[]launch{{"upgrade", 2, "4.14.9-2026-11-10-000000"}}, nil, 0},
		{"upgrade from another stream's accepted payload", payloadWith([]v1alpha1.Verification{{Name: "upgrade-minor", UpgradeFrom: v1alpha1.UpgradeFromPrevious, From: &v1alpha1.UpgradeSourceStream{Stream: "4.14-stable"}}}, nil), accepted,
			[]launch{{"upgrade-minor", 1, "4.14.8"}}, nil, 0},
		{"another stream without an accepted payload is skipped, never this stream's", payloadWith([]v1alpha1.Verification{{Name: "upgrade-minor", UpgradeFrom: v1alpha1.UpgradeFromPrevious, From: &v1alpha1.UpgradeSourceStream{Stream: "4.13-stable"}}}, nil), accepted,
			nil, []string{"upgrade-minor"}, 0},
		{"a lost run is run again", payloadWith([]v1alpha1.Verification{{Name: "e2e"}}, []v1alpha1.VerificationStatus{{Name: "e2e", State: pending, Runs: []v1alpha1.JobRun{ended(1, v1alpha1.JobUnknown, time.Hour)}}}), accepted,
			[]launch{{"e2e", 2, ""}}, nil, 0},
		{"lost runs stop at MaxRuns", payloadWith([]v1alpha1.Verification{{Name: "e2e"}}, []v1alpha1.VerificationStatus{{Name: "e2e", State: v1alpha1.JobUnknown, Runs: []v1alpha1.JobRun{ended(1, v1alpha1.JobUnknown, time.Hour), ended(2, v1alpha1.JobUnknown, time.Hour)}}}), accepted,
			nil, nil, 0},
		{"skipped stays skipped", func() *v1alpha1.ReleasePayload {
			p := payloadWith([]v1alpha1.Verification{{Name: "upgrade", UpgradeFrom: v1alpha1.UpgradeFromPrevious}}, nil)
			p.Annotations = map[string]string{v1alpha1.AnnotationUpgradeSkipped: "upgrade"}
			return p
		}(), accepted, nil, nil, 0},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			plan := PlanRuns(tt.payload, now, backoff, tt.accepted)
			var got []launch
			for _, l := range plan.Launches {
				got = append(got, launch{l.Verification.Name, l.Attempt, l.UpgradeFrom})
				if l.UpgradeFrom != "" && l.UpgradeFromImage == "" {
					t.Errorf("upgrade launch without an image: %+v", l)
				}
			}
			if !equal(got, tt.want) || !equal(plan.Skipped, tt.skipped) || plan.RequeueAfter != tt.requeue {
				t.Errorf("PlanRuns() = %v skipped %v requeue %s; want %v skipped %v requeue %s", got, plan.Skipped, plan.RequeueAfter, tt.want, tt.skipped, tt.requeue)
			}
		})
	}
}

func equal[T comparable](a, b []T) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i] != b[i] {
			return false
		}
	}
	return true
}

func TestNewJob(t *testing.T) {
	p := payloadWith(nil, nil)
	p.UID = "uid-1"
	v := v1alpha1.Verification{Name: "upgrade", Job: &v1alpha1.JobBackend{Template: batchv1.JobTemplateSpec{
		ObjectMeta: metav1.ObjectMeta{Labels: map[string]string{"team": "qe"}},
		Spec: batchv1.JobSpec{Template: corev1.PodTemplateSpec{Spec: corev1.PodSpec{
			InitContainers: []corev1.Container{{Name: "init", Image: "busybox"}},
			Containers:     []corev1.Container{{Name: "test", Image: "tests", Env: []corev1.EnvVar{{Name: "RELEASE_TAG", Value: "stale"}, {Name: "KEEP", Value: "1"}}}},
		}}},
	}}}
	job, err := NewJob(p, Launch{Verification: v, Attempt: 2, UpgradeFrom: "4.15.0-2026-11-20-000000", UpgradeFromImage: "registry/release@sha256:old"})
	if err != nil {
		t.Fatal(err)
	}
	if job.Name != "4.15.1-2026-11-22-120000-upgrade-2" || job.Namespace != "ns" {
		t.Errorf("job named %s/%s", job.Namespace, job.Name)
	}
	wantLabels := map[string]string{"team": "qe", v1alpha1.LabelStream: "nightly", v1alpha1.LabelPayload: p.Name, v1alpha1.LabelJobType: v1alpha1.JobTypeVerification, v1alpha1.LabelVerify: "upgrade"}
	for k, v := range wantLabels {
		if job.Labels[k] != v {
			t.Errorf("label %s = %q, want %q", k, job.Labels[k], v)
		}
	}
	if job.Annotations[v1alpha1.AnnotationAttempt] != "2" || job.Annotations[v1alpha1.AnnotationUpgradeFrom] != "4.15.0-2026-11-20-000000" {
		t.Errorf("annotations %v", job.Annotations)
	}
	if len(job.OwnerReferences) != 1 || job.OwnerReferences[0].UID != "uid-1" {
		t.Errorf("owner references %v", job.OwnerReferences)
	}
	if job.Spec.Template.Spec.RestartPolicy != corev1.RestartPolicyNever {
		t.Errorf("restart policy %q", job.Spec.Template.Spec.RestartPolicy)
	}
	for _, c := range append(job.Spec.Template.Spec.InitContainers, job.Spec.Template.Spec.Containers...) {
		env := map[string]string{}
		for _, e := range c.Env {
			if _, dup := env[e.Name]; dup {
				t.Errorf("container %s: %s set twice", c.Name, e.Name)
			}
			env[e.Name] = e.Value
		}
		if env["RELEASE_IMAGE_LATEST"] != "registry/release@sha256:abc" || env["RELEASE_TAG"] != p.Name || env["RELEASE_STREAM"] != "nightly" || env["RELEASE_IMAGE_INITIAL"] != "registry/release@sha256:old" {
			t.Errorf("container %s env %v", c.Name, env)
		}
	}
	if v.Job.Template.Spec.Template.Spec.Containers[0].Env[0].Value != "stale" {
		t.Error("NewJob modified the payload's template")
	}
}

func TestNewProwJob(t *testing.T) {
	p := payloadWith(nil, nil)
	v := v1alpha1.Verification{Name: "e2e-aws", ProwJob: &v1alpha1.ProwJobBackend{Namespace: "ci", Spec: prowv1.ProwJobSpec{
		Job: "periodic-e2e-aws", PodSpec: &corev1.PodSpec{Containers: []corev1.Container{{Name: "test", Image: "tests"}}},
	}}}
	pj, err := NewProwJob(p, Launch{Verification: v, Attempt: 1})
	if err != nil {
		t.Fatal(err)
	}
	if pj.Namespace != "ci" || pj.Labels[v1alpha1.LabelPayloadNamespace] != "ns" || len(pj.OwnerReferences) != 0 {
		t.Errorf("prowjob in another namespace: %s labels %v owners %v", pj.Namespace, pj.Labels, pj.OwnerReferences)
	}
	if pj.Spec.Type != prowv1.PeriodicJob || pj.Spec.Agent != prowv1.KubernetesAgent || pj.Spec.Job != "periodic-e2e-aws" {
		t.Errorf("spec %+v", pj.Spec)
	}
	if env := pj.Spec.PodSpec.Containers[0].Env; len(env) != 3 || !strings.HasPrefix(env[0].Value, "registry/release@") {
		t.Errorf("env %v", env)
	}
}

// TestNewJobOnPlatform: a run of a verification with a platform carries it in a label and the
// environment, and is scheduled on nodes of that OS and architecture; the template's other
// node selectors stay.
func TestNewJobOnPlatform(t *testing.T) {
	p := payloadWith(nil, nil)
	v := v1alpha1.Verification{Name: "e2e-arm64", Platforms: []string{"linux/arm64/v8"}, Job: &v1alpha1.JobBackend{Template: batchv1.JobTemplateSpec{
		Spec: batchv1.JobSpec{Template: corev1.PodTemplateSpec{Spec: corev1.PodSpec{
			NodeSelector: map[string]string{"pool": "tests", corev1.LabelArchStable: "amd64"},
			Containers:   []corev1.Container{{Name: "test", Image: "tests"}},
		}}},
	}}}
	job, err := NewJob(p, Launch{Verification: v, Attempt: 1})
	if err != nil {
		t.Fatal(err)
	}
	if got := job.Labels[v1alpha1.LabelPlatform]; got != "linux-arm64-v8" {
		t.Errorf("platform label %q", got)
	}
	want := map[string]string{"pool": "tests", corev1.LabelOSStable: "linux", corev1.LabelArchStable: "arm64"}
	if got := job.Spec.Template.Spec.NodeSelector; !maps.Equal(got, want) {
		t.Errorf("node selector %v, want %v", got, want)
	}
	if v.Job.Template.Spec.Template.Spec.NodeSelector[corev1.LabelArchStable] != "amd64" {
		t.Error("NewJob modified the payload's template")
	}
	env := map[string]string{}
	for _, e := range job.Spec.Template.Spec.Containers[0].Env {
		env[e.Name] = e.Value
	}
	if env[v1alpha1.EnvReleasePlatform] != "linux/arm64/v8" {
		t.Errorf("env %v", env)
	}
	// Without platforms: no label, no selector, no variable.
	v.Platforms = nil
	v.Job.Template.Spec.Template.Spec.NodeSelector = nil
	job, err = NewJob(p, Launch{Verification: v, Attempt: 1})
	if err != nil {
		t.Fatal(err)
	}
	if _, ok := job.Labels[v1alpha1.LabelPlatform]; ok || job.Spec.Template.Spec.NodeSelector != nil {
		t.Errorf("a run without platform has label %v, node selector %v", job.Labels, job.Spec.Template.Spec.NodeSelector)
	}
}

// TestNewProwJobOnPlatform: a ProwJob run of a verification with a platform carries the
// platform label; only a ProwJob with a pod spec gets the variable and the node selectors
// (a ProwJob without one is configured by Prow, which the controller does not change).
func TestNewProwJobOnPlatform(t *testing.T) {
	p := payloadWith(nil, nil)
	tests := []struct {
		name      string
		platforms []string
		podSpec   *corev1.PodSpec
		label     string
		env       string
		selector  map[string]string
	}{
		{
			name:      "pod spec",
			platforms: []string{"linux/arm64/v8"},
			podSpec: &corev1.PodSpec{
				NodeSelector: map[string]string{"pool": "tests", corev1.LabelArchStable: "amd64"},
				Containers:   []corev1.Container{{Name: "test", Image: "tests"}},
			},
			label:    "linux-arm64-v8",
			env:      "linux/arm64/v8",
			selector: map[string]string{"pool": "tests", corev1.LabelOSStable: "linux", corev1.LabelArchStable: "arm64"},
		},
		{
			name:      "no pod spec",
			platforms: []string{"linux/s390x"},
			label:     "linux-s390x",
		},
		{
			name:     "pod spec without platform",
			podSpec:  &corev1.PodSpec{Containers: []corev1.Container{{Name: "test", Image: "tests"}}},
			selector: nil,
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			v := v1alpha1.Verification{Name: "e2e", Platforms: tt.platforms, ProwJob: &v1alpha1.ProwJobBackend{Spec: prowv1.ProwJobSpec{
				Job: "periodic-e2e", PodSpec: tt.podSpec,
			}}}
			pj, err := NewProwJob(p, Launch{Verification: v, Attempt: 1})
			if err != nil {
				t.Fatal(err)
			}
			if got, ok := pj.Labels[v1alpha1.LabelPlatform]; got != tt.label || ok != (tt.label != "") {
				t.Errorf("platform label %q (set: %t), want %q", got, ok, tt.label)
			}
			if tt.podSpec == nil {
				if pj.Spec.PodSpec != nil {
					t.Errorf("a ProwJob without pod spec got one: %+v", pj.Spec.PodSpec)
				}
				return
			}
			if got := pj.Spec.PodSpec.NodeSelector; !maps.Equal(got, tt.selector) {
				t.Errorf("node selector %v, want %v", got, tt.selector)
			}
			env := map[string]string{}
			for _, e := range pj.Spec.PodSpec.Containers[0].Env {
				env[e.Name] = e.Value
			}
			if got, ok := env[v1alpha1.EnvReleasePlatform]; got != tt.env || ok != (tt.env != "") {
				t.Errorf("%s = %q (set: %t), want %q", v1alpha1.EnvReleasePlatform, got, ok, tt.env)
			}
			if env[v1alpha1.EnvReleaseTag] != p.Name {
				t.Errorf("env %v lacks the release tag", env)
			}
			if tt.podSpec.NodeSelector[corev1.LabelArchStable] == "arm64" || len(tt.podSpec.Containers[0].Env) != 0 {
				t.Error("NewProwJob modified the verification's pod spec")
			}
		})
	}
}

// TestBuildJobForAnotherOwner: the builder the payload's runs use serves any owner: the
// object's name, labels, annotations and owner are the caller's, the tenancy rules hold for
// the account given, and the template is not changed.
func TestBuildJobForAnotherOwner(t *testing.T) {
	v := v1alpha1.Verification{Name: "smoke", Job: &v1alpha1.JobBackend{Template: batchv1.JobTemplateSpec{
		ObjectMeta: metav1.ObjectMeta{Labels: map[string]string{"team": "qe"}},
		Spec: batchv1.JobSpec{Template: corev1.PodTemplateSpec{Spec: corev1.PodSpec{
			Containers: []corev1.Container{{Name: "test", Image: "tests", Env: []corev1.EnvVar{{Name: "RELEASE_REVISION", Value: "stale"}}}},
		}}},
	}}}
	owner := metav1.OwnerReference{Kind: "Pipeline", Name: "web", UID: "uid-2"}
	o := RunObject{Namespace: "team-a", Name: "web-dev-1-smoke-1", Labels: map[string]string{"release-controller.dev/pipeline": "web"},
		Annotations: map[string]string{"release-controller.dev/revision": "1"}, Owner: &owner}
	account := &v1alpha1.VerificationServiceAccount{Name: "deployer"}
	job, err := BuildJob(&v, o, account, []corev1.EnvVar{{Name: "RELEASE_REVISION", Value: "1"}})
	if err != nil {
		t.Fatal(err)
	}
	if job.Namespace != "team-a" || job.Name != "web-dev-1-smoke-1" || job.Labels["team"] != "qe" || job.Labels["release-controller.dev/pipeline"] != "web" ||
		job.Annotations["release-controller.dev/revision"] != "1" || len(job.OwnerReferences) != 1 || job.OwnerReferences[0].UID != "uid-2" {
		t.Errorf("job metadata %+v", job.ObjectMeta)
	}
	pod := job.Spec.Template.Spec
	if pod.ServiceAccountName != "deployer" || pod.AutomountServiceAccountToken == nil || *pod.AutomountServiceAccountToken {
		t.Errorf("runs as %q, token %v", pod.ServiceAccountName, pod.AutomountServiceAccountToken)
	}
	if env := pod.Containers[0].Env; len(env) != 1 || env[0].Value != "1" {
		t.Errorf("env %v", env)
	}
	if v.Job.Template.Spec.Template.Spec.Containers[0].Env[0].Value != "stale" {
		t.Error("BuildJob modified the template")
	}
	v.Job.Template.Spec.Template.Spec.ServiceAccountName = "admin"
	var refusal *Refusal
	if _, err := BuildJob(&v, o, account, nil); !errors.As(err, &refusal) || !strings.Contains(err.Error(), `"deployer"`) {
		t.Errorf("a template naming another account: %v", err)
	}
}
