package payload

import (
	"strings"
	"testing"
	"time"

	batchv1 "k8s.io/api/batch/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/release-controller/release-controller/api/v1alpha1"
	"github.com/release-controller/release-controller/internal/devenv/jobstatus"
)

func TestClusterCondition(t *testing.T) {
	tests := []struct {
		name   string
		states map[string]ClusterState
		// want is nil for no condition, else its status, reason and words of its message.
		want  *metav1.Condition
		words []string
	}{
		{name: "no verification names a cluster"},
		{
			name:   "every cluster answers",
			states: map[string]ClusterState{"e2e": {Cluster: "ns/farm"}, "upgrade": {Cluster: "ns/arm"}},
			want:   &metav1.Condition{Status: metav1.ConditionFalse, Reason: v1alpha1.ReasonClustersReachable},
			words:  []string{"ns/arm, ns/farm"},
		},
		{
			name: "one cluster does not answer",
			states: map[string]ClusterState{
				"e2e": {Cluster: "ns/farm", Problem: "cluster ns/farm unreachable: connection refused"}, "lint": {Cluster: "ns/farm", Problem: "cluster ns/farm unreachable: connection refused"},
				"upgrade": {Cluster: "ns/arm"},
			},
			want:  &metav1.Condition{Status: metav1.ConditionTrue, Reason: v1alpha1.ReasonClusterUnreachable},
			words: []string{"cluster ns/farm unreachable: connection refused (verifications e2e, lint)"},
		},
		{
			name: "a Secret that gives no cluster",
			states: map[string]ClusterState{
				"e2e": {Cluster: "ns/farm", Problem: "kubeconfig Secret ns/farm not found", Invalid: true},
			},
			want:  &metav1.Condition{Status: metav1.ConditionTrue, Reason: v1alpha1.ReasonKubeconfigInvalid},
			words: []string{"kubeconfig Secret ns/farm not found (verifications e2e)"},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := ClusterCondition(tt.states)
			if tt.want == nil {
				if got != nil {
					t.Fatalf("got %+v, want no condition", got)
				}
				return
			}
			if got == nil || got.Type != v1alpha1.ConditionClusterUnreachable || got.Status != tt.want.Status || got.Reason != tt.want.Reason {
				t.Fatalf("got %+v, want %s %s", got, tt.want.Status, tt.want.Reason)
			}
			for _, w := range tt.words {
				if !strings.Contains(got.Message, w) {
					t.Errorf("message %q lacks %q", got.Message, w)
				}
			}
		})
	}
}

// TestComputeStatusKeepsRunsOfAnUnreachableCluster: while a verification's cluster cannot be
// read, its recorded runs stand (a running one is not lost), the verification says Unknown with
// the cluster's problem, no verdict is reached on it and the payload says ClusterUnreachable;
// once the cluster answers, the same run is read again.
func TestComputeStatusKeepsRunsOfAnUnreachableCluster(t *testing.T) {
	running := v1alpha1.JobRun{Kind: v1alpha1.RunKindJob, Namespace: "ns", Name: "e2e-1", Attempt: 1, State: v1alpha1.JobPending}
	passed := v1alpha1.JobRun{Kind: v1alpha1.RunKindJob, Namespace: "ns", Name: "lint-1", Attempt: 1, State: v1alpha1.JobSuccess}
	e2e := v1alpha1.Verification{Name: "e2e", Cluster: &v1alpha1.VerificationCluster{SecretRef: "farm"}}
	lint := v1alpha1.Verification{Name: "lint", Cluster: &v1alpha1.VerificationCluster{SecretRef: "farm"}}
	p := &v1alpha1.ReleasePayload{
		Spec: v1alpha1.ReleasePayloadSpec{PayloadVerificationConfig: v1alpha1.PayloadVerificationConfig{Verifications: []v1alpha1.Verification{e2e, lint}}},
		Status: v1alpha1.ReleasePayloadStatus{
			PayloadImage: "registry.example.com/release@sha256:1",
			Verifications: []v1alpha1.VerificationStatus{
				{Name: "e2e", State: v1alpha1.JobPending, Runs: []v1alpha1.JobRun{running}},
				{Name: "lint", State: v1alpha1.JobSuccess, Runs: []v1alpha1.JobRun{passed}},
			},
		},
	}
	now := metav1.NewTime(time.Date(2026, 11, 22, 9, 30, 0, 0, time.UTC))
	build := batchv1.Job{ObjectMeta: metav1.ObjectMeta{Name: "build"}}
	jobstatus.Succeeded(&build, now)
	built := []batchv1.Job{build}
	problem := "cluster ns/farm unreachable: connection refused"
	away := map[string]ClusterState{"e2e": {Cluster: "ns/farm", Problem: problem}, "lint": {Cluster: "ns/farm", Problem: problem}}

	status := ComputeStatus(p, Observations{CreationJobs: built, Clusters: away}, now)
	if status.Phase != v1alpha1.PhaseReady {
		t.Errorf("phase %s, want Ready", status.Phase)
	}
	e2eStatus, lintStatus := status.Verifications[0], status.Verifications[1]
	if e2eStatus.State != v1alpha1.JobUnknown || !strings.HasPrefix(e2eStatus.Message, problem) {
		t.Errorf("e2e: %s %q, want Unknown naming the cluster", e2eStatus.State, e2eStatus.Message)
	}
	if len(e2eStatus.Runs) != 1 || e2eStatus.Runs[0].Name != running.Name || e2eStatus.Runs[0].State != v1alpha1.JobPending || e2eStatus.Runs[0].Message != problem {
		t.Errorf("e2e runs %+v, want the running run kept, naming the cluster", e2eStatus.Runs)
	}
	if again := ComputeStatus(&v1alpha1.ReleasePayload{Spec: p.Spec, Status: status}, Observations{CreationJobs: built, Clusters: away}, now); !equality.Semantic.DeepEqual(again, status) {
		t.Errorf("computed again while the cluster is away, the status changed:\n%+v\n%+v", status, again)
	}
	if lintStatus.State != v1alpha1.JobSuccess {
		t.Errorf("lint: %s, want its Success kept", lintStatus.State)
	}
	if c := meta.FindStatusCondition(status.Conditions, v1alpha1.ConditionClusterUnreachable); c == nil || c.Status != metav1.ConditionTrue {
		t.Errorf("ClusterUnreachable = %+v, want True", c)
	}

	// Back: the run is observed again and decides.
	p.Status = status
	done := running
	done.State = v1alpha1.JobSuccess
	back := map[string]ClusterState{"e2e": {Cluster: "ns/farm"}, "lint": {Cluster: "ns/farm"}}
	status = ComputeStatus(p, Observations{CreationJobs: built, Clusters: back, Runs: []ObservedRun{{Verification: "e2e", Run: done}}}, now)
	if status.Phase != v1alpha1.PhaseAccepted || status.Verifications[0].State != v1alpha1.JobSuccess || len(status.Verifications[0].Runs) != 1 {
		t.Errorf("after the cluster answers: phase %s, e2e %+v", status.Phase, status.Verifications[0])
	}
	if c := meta.FindStatusCondition(status.Conditions, v1alpha1.ConditionClusterUnreachable); c == nil || c.Status != metav1.ConditionFalse {
		t.Errorf("ClusterUnreachable = %+v, want False", c)
	}
}

// TestComputeStatusCreationClusterUnreachable: while the creation job's cluster cannot be
// read, an unfinished creation is Unknown naming the cluster and the job last seen (so that it
// is not created again), the payload is neither created nor failed (PayloadCreated Unknown),
// and ClusterUnreachable names the creation job; a finished creation stands; once the cluster
// answers, the job decides.
func TestComputeStatusCreationClusterUnreachable(t *testing.T) {
	now := metav1.NewTime(time.Date(2026, 11, 22, 9, 30, 0, 0, time.UTC))
	problem := "cluster ns/farm unreachable: connection refused"
	running := v1alpha1.ReleaseCreationJobResult{Namespace: "builds", Name: "t-build", Status: v1alpha1.CreationJobUnknown, Message: "creation job t-build is running"}
	built := v1alpha1.ReleaseCreationJobResult{Namespace: "builds", Name: "t-build", Status: v1alpha1.CreationJobSuccess, Message: "the payload image was built"}
	away := map[string]ClusterState{CreationJobCluster: {Cluster: "ns/farm", Problem: problem}}
	back := map[string]ClusterState{CreationJobCluster: {Cluster: "ns/farm"}}
	done := batchv1.Job{ObjectMeta: metav1.ObjectMeta{Namespace: "builds", Name: "t-build"}}
	jobstatus.Succeeded(&done, now)
	for _, tt := range []struct {
		name        string
		last        v1alpha1.ReleaseCreationJobResult
		obs         Observations
		status      v1alpha1.CreationJobStatus
		message     string
		created     metav1.ConditionStatus
		unreachable metav1.ConditionStatus
	}{
		{"running, cluster away: Unknown naming it and the job", running, Observations{Clusters: away}, v1alpha1.CreationJobUnknown, problem, metav1.ConditionUnknown, metav1.ConditionTrue},
		{"never seen, cluster away", v1alpha1.ReleaseCreationJobResult{}, Observations{Clusters: away}, v1alpha1.CreationJobUnknown, problem, metav1.ConditionUnknown, metav1.ConditionTrue},
		{"built, cluster away: the result stands", built, Observations{Clusters: away}, v1alpha1.CreationJobSuccess, "the payload image was built", metav1.ConditionTrue, metav1.ConditionTrue},
		{"cluster back: the job decides", running, Observations{Clusters: back, CreationJobs: []batchv1.Job{done}}, v1alpha1.CreationJobSuccess, "", metav1.ConditionTrue, metav1.ConditionFalse},
	} {
		t.Run(tt.name, func(t *testing.T) {
			p := &v1alpha1.ReleasePayload{Status: v1alpha1.ReleasePayloadStatus{ReleaseCreationJobResult: tt.last}}
			status := ComputeStatus(p, tt.obs, now)
			got := status.ReleaseCreationJobResult
			if got.Status != tt.status || !strings.HasPrefix(got.Message, tt.message) {
				t.Errorf("creation result %s %q, want %s %q…", got.Status, got.Message, tt.status, tt.message)
			}
			if tt.last.Name != "" && got.Name != tt.last.Name {
				t.Errorf("creation job %q, want the one last seen, %q", got.Name, tt.last.Name)
			}
			if c := meta.FindStatusCondition(status.Conditions, v1alpha1.ConditionPayloadCreated); c == nil || c.Status != tt.created {
				t.Errorf("PayloadCreated = %+v, want %s", c, tt.created)
			}
			if meta.IsStatusConditionTrue(status.Conditions, v1alpha1.ConditionPayloadFailed) {
				t.Error("PayloadFailed is True")
			}
			c := meta.FindStatusCondition(status.Conditions, v1alpha1.ConditionClusterUnreachable)
			if c == nil || c.Status != tt.unreachable || !strings.Contains(c.Message, "ns/farm") {
				t.Fatalf("ClusterUnreachable = %+v, want %s naming ns/farm", c, tt.unreachable)
			}
			if tt.unreachable == metav1.ConditionTrue && !strings.Contains(c.Message, "(the creation job)") {
				t.Errorf("ClusterUnreachable %q does not name the creation job", c.Message)
			}
			if again := ComputeStatus(&v1alpha1.ReleasePayload{Status: status}, tt.obs, now); !equality.Semantic.DeepEqual(again, status) {
				t.Errorf("computed again, the status changed:\n%+v\n%+v", status, again)
			}
		})
	}
}

// TestClusterConditionNamesTheCreationJob: one cluster serving the creation job and
// verifications names both.
func TestClusterConditionNamesTheCreationJob(t *testing.T) {
	problem := "cluster ns/farm unreachable: connection refused"
	c := ClusterCondition(map[string]ClusterState{
		CreationJobCluster: {Cluster: "ns/farm", Problem: problem},
		"lint":             {Cluster: "ns/farm", Problem: problem},
		"e2e":              {Cluster: "ns/farm", Problem: problem},
	})
	if want := problem + " (the creation job; verifications e2e, lint)"; c.Message != want {
		t.Errorf("message %q, want %q", c.Message, want)
	}
}
