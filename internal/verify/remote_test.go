package verify

import (
	"testing"

	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"

	"github.com/release-controller/release-controller/api/v1alpha1"
	"github.com/release-controller/release-controller/internal/clusters"
)

func TestClusters(t *testing.T) {
	farm := &v1alpha1.VerificationCluster{SecretRef: "farm"}
	tests := []struct {
		name          string
		verifications []v1alpha1.Verification
		want          map[clusters.Key][]string
	}{
		{name: "every verification local", verifications: []v1alpha1.Verification{{Name: "e2e"}}},
		{
			name: "one cluster, the payload's namespace there and another",
			verifications: []v1alpha1.Verification{
				{Name: "e2e", Cluster: farm}, {Name: "lint", Cluster: farm},
				{Name: "upgrade", Cluster: &v1alpha1.VerificationCluster{SecretRef: "farm", Namespace: "ci"}},
				{Name: "unit"},
			},
			want: map[clusters.Key][]string{{Namespace: "ns", Secret: "farm"}: {"ns", "ci"}},
		},
		{
			name:          "two clusters",
			verifications: []v1alpha1.Verification{{Name: "e2e", Cluster: farm}, {Name: "arm", Cluster: &v1alpha1.VerificationCluster{SecretRef: "arm"}}},
			want:          map[clusters.Key][]string{{Namespace: "ns", Secret: "farm"}: {"ns"}, {Namespace: "ns", Secret: "arm"}: {"ns"}},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := Clusters(nil, payloadWith(tt.verifications, nil))
			if len(got) != len(tt.want) {
				t.Fatalf("got %v, want %v", got, tt.want)
			}
			for k, namespaces := range tt.want {
				if g := got[k]; len(g) != len(namespaces) || (len(g) > 0 && (g[0] != namespaces[0] || g[len(g)-1] != namespaces[len(namespaces)-1])) {
					t.Errorf("%s: got %v, want %v", k, g, namespaces)
				}
			}
		})
	}
}

func TestNewClusterJob(t *testing.T) {
	v := v1alpha1.Verification{Name: "e2e", Job: &v1alpha1.JobBackend{Template: batchv1.JobTemplateSpec{Spec: batchv1.JobSpec{
		Template: corev1.PodTemplateSpec{Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "test", Image: "tests"}}}},
	}}}}
	for _, tt := range []struct {
		name, namespace, wantNamespace string
		wantPayloadNamespaceLabel      bool
	}{
		{name: "the payload's namespace name", wantNamespace: "ns"},
		{name: "a namespace of its own", namespace: "ci", wantNamespace: "ci", wantPayloadNamespaceLabel: true},
	} {
		t.Run(tt.name, func(t *testing.T) {
			v := v
			v.Cluster = &v1alpha1.VerificationCluster{SecretRef: "farm", Namespace: tt.namespace}
			p := payloadWith([]v1alpha1.Verification{v}, nil)
			job, err := NewClusterJob(p, Launch{Verification: v, Attempt: 1})
			if err != nil {
				t.Fatal(err)
			}
			local, err := NewJob(p, Launch{Verification: v, Attempt: 1})
			if err != nil {
				t.Fatal(err)
			}
			if job.Namespace != tt.wantNamespace || job.Name != local.Name {
				t.Errorf("job %s/%s, want %s/%s", job.Namespace, job.Name, tt.wantNamespace, local.Name)
			}
			if len(job.OwnerReferences) != 0 {
				t.Errorf("owner references %v: the payload is not on that cluster", job.OwnerReferences)
			}
			for _, l := range []string{v1alpha1.LabelStream, v1alpha1.LabelPayload, v1alpha1.LabelJobType, v1alpha1.LabelVerify} {
				if job.Labels[l] != local.Labels[l] {
					t.Errorf("label %s = %q, want %q", l, job.Labels[l], local.Labels[l])
				}
			}
			if got := job.Labels[v1alpha1.LabelPayloadNamespace] == "ns"; got != tt.wantPayloadNamespaceLabel {
				t.Errorf("payload-namespace label %q", job.Labels[v1alpha1.LabelPayloadNamespace])
			}
		})
	}
}
