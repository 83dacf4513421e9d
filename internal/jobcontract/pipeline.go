package jobcontract

import (
	"crypto/sha256"
	"encoding/hex"
	"strconv"
	"strings"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/release-controller/release-controller/api/v1alpha1"
)

// PipelineRun is the contract of one run of an environment's verification (a pipeline's
// verification after rollout): what its name, labels and annotations say. The pipeline
// controller writes it and reads it back (through the job cache) to find its runs after a
// restart; nothing else is needed to know which pipeline, environment, revision and
// verification a run is of.
type PipelineRun struct {
	// PipelineNamespace and Pipeline name the pipeline (release-controller.dev/pipeline
	// annotation, namespace/name).
	PipelineNamespace, Pipeline string
	// Environment is the environment verified (release-controller.dev/environment).
	Environment string
	// Revision is the revision verified (release-controller.dev/revision annotation).
	Revision string
	// Verification names the verification (release-controller.dev/verify).
	Verification string
	// Attempt numbers the run within its verification, from 1 (release-controller.dev/attempt).
	Attempt int32
}

// Name is the run's object name: the pipeline, environment, revision, verification and
// attempt, readable, and a hash of them all, so that two runs never share a name however their
// parts are split by dashes, and a restarted controller finds the object it created.
func (r PipelineRun) Name() string {
	attempt := strconv.Itoa(int(max(r.Attempt, 1)))
	sum := sha256.Sum256([]byte(strings.Join([]string{r.PipelineNamespace, r.Pipeline, r.Environment, r.Revision, r.Verification, attempt}, "\x00")))
	return ObjectName(r.Pipeline, r.Environment, nameSafe(r.Revision), r.Verification, attempt, hex.EncodeToString(sum[:4]))
}

// nameSafe is s with every run of characters other than lowercase letters and digits made one
// dash (a revision such as 1.0.3+build.7 or sha256:…), trimmed of dashes.
func nameSafe(s string) string {
	var b strings.Builder
	dash := false
	for _, c := range strings.ToLower(s) {
		if c >= 'a' && c <= 'z' || c >= '0' && c <= '9' {
			b.WriteRune(c)
			dash = false
			continue
		}
		if !dash && b.Len() > 0 {
			b.WriteByte('-')
			dash = true
		}
	}
	return strings.TrimRight(b.String(), "-")
}

// Labels are the run's labels (a contract) for an object in namespace: the job type
// (verification), the verification, the pipeline (its name, as a label value) and the
// environment.
func (r PipelineRun) Labels() map[string]string {
	return map[string]string{
		v1alpha1.LabelJobType:     v1alpha1.JobTypeVerification,
		v1alpha1.LabelVerify:      r.Verification,
		v1alpha1.LabelPipeline:    labelValue(r.Pipeline),
		v1alpha1.LabelEnvironment: r.Environment,
	}
}

// labelValue is name when it fits in a label value, else a readable head of it and a hash
// (ObjectName's rule).
func labelValue(name string) string {
	if len(name) <= MaxNameLength {
		return name
	}
	return ObjectName(name)
}

// Annotations are the run's annotations: its attempt, its pipeline and its revision.
func (r PipelineRun) Annotations() map[string]string {
	return map[string]string{
		v1alpha1.AnnotationAttempt:  strconv.Itoa(int(max(r.Attempt, 1))),
		v1alpha1.AnnotationPipeline: PipelineKey(r.PipelineNamespace, r.Pipeline),
		v1alpha1.AnnotationRevision: r.Revision,
	}
}

// Key is the PipelineKey of the run's pipeline.
func (r PipelineRun) Key() string {
	return PipelineKey(r.PipelineNamespace, r.Pipeline)
}

// PipelineKey identifies a pipeline across namespaces and clusters: "<namespace>/<name>". Its
// runs are indexed by it.
func PipelineKey(namespace, name string) string {
	return namespace + "/" + name
}

// ParsePipelineRun reads the contract back from a run's labels and annotations; ok is false
// when the object is not a run of a pipeline's verification (no pipeline annotation, or not a
// verification). A missing or malformed attempt counts as the first.
func ParsePipelineRun(obj metav1.Object) (r PipelineRun, ok bool) {
	l, a := obj.GetLabels(), obj.GetAnnotations()
	namespace, name, found := strings.Cut(a[v1alpha1.AnnotationPipeline], "/")
	if !found || namespace == "" || name == "" || l[v1alpha1.LabelJobType] != v1alpha1.JobTypeVerification || l[v1alpha1.LabelVerify] == "" {
		return PipelineRun{}, false
	}
	return PipelineRun{
		PipelineNamespace: namespace, Pipeline: name, Environment: l[v1alpha1.LabelEnvironment],
		Revision: a[v1alpha1.AnnotationRevision], Verification: l[v1alpha1.LabelVerify],
		Attempt: ParseAttempt(a[v1alpha1.AnnotationAttempt]),
	}, true
}

// OwnerReferenceToPipeline points at a pipeline, without blocking its deletion: deleting the
// pipeline deletes its runs in its namespace (where a garbage collector runs).
func OwnerReferenceToPipeline(p *v1alpha1.Pipeline) metav1.OwnerReference {
	return metav1.OwnerReference{APIVersion: v1alpha1.GroupVersion.String(), Kind: "Pipeline", Name: p.Name, UID: p.UID}
}
