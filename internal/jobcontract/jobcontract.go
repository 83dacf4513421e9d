// Package jobcontract is the contract between the controller and the jobs it creates
// (DESIGN §2): the labels and annotations on every Job and ProwJob, their names, how a
// verification's runs are numbered and bounded, how a job is traced back to its payload, and
// the semantic-version order of release tags. The stream controller writes the contract
// (stream, verify), the payload controller and the job cache read it back (payload): all
// three use this package, which is pure.
package jobcontract

import (
	"cmp"
	"crypto/sha256"
	"encoding/hex"
	"slices"
	"strconv"
	"strings"

	"github.com/Masterminds/semver/v3"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/selection"

	"github.com/release-controller/release-controller/api/v1alpha1"
)

// MaxNameLength is the longest Job or ProwJob name the controller creates: Job names become
// pod labels, which are limited to 63 characters.
const MaxNameLength = 63

// ObjectName joins parts with "-" into a valid object name. A name longer than MaxNameLength
// keeps a readable head and ends with a hash of the whole, so the same parts always give the
// same name and a restarted controller finds the object it created.
func ObjectName(parts ...string) string {
	full := strings.ToLower(strings.Join(parts, "-"))
	if len(full) <= MaxNameLength {
		return full
	}
	sum := sha256.Sum256([]byte(full))
	suffix := hex.EncodeToString(sum[:])[:10]
	head := strings.TrimRight(full[:MaxNameLength-len(suffix)-1], "-.")
	return head + "-" + suffix
}

// CreationJobName is the name of the Job that builds the payload tag: "<tag>-build".
func CreationJobName(tag string) string {
	return ObjectName(tag, "build")
}

// RunName is the name of a verification run's Job or ProwJob: "<tag>-<verification>-<attempt>".
func RunName(tag, verification string, attempt int32) string {
	return ObjectName(tag, verification, strconv.Itoa(int(attempt)))
}

// Job is what the labels and annotations of one of the controller's jobs say.
type Job struct {
	// Stream is the payload's stream (release-controller.dev/stream).
	Stream string
	// PayloadNamespace is the payload's namespace: the release-controller.dev/payload-namespace
	// label of a job in another namespace, else the job's own namespace.
	PayloadNamespace string
	// Payload is the payload's tag, which is also its name (release-controller.dev/payload).
	Payload string
	// Type is v1alpha1.JobTypeCreation or v1alpha1.JobTypeVerification
	// (release-controller.dev/job-type).
	Type string
	// Verification names the verification a run belongs to (release-controller.dev/verify).
	Verification string
	// Attempt numbers the run within its verification, from 1 (release-controller.dev/attempt).
	Attempt int32
	// UpgradeFrom is the release tag an upgrade run starts from (release-controller.dev/upgrade-from).
	UpgradeFrom string
}

// CreationJob is the contract of the payload's creation job.
func CreationJob(p *v1alpha1.ReleasePayload) Job {
	return Job{Stream: p.Spec.PayloadCoordinates.Stream, PayloadNamespace: p.Namespace, Payload: p.Name, Type: v1alpha1.JobTypeCreation}
}

// VerificationRun is the contract of one run of the payload's verification.
func VerificationRun(p *v1alpha1.ReleasePayload, verification string, attempt int32, upgradeFrom string) Job {
	return Job{
		Stream: p.Spec.PayloadCoordinates.Stream, PayloadNamespace: p.Namespace, Payload: p.Name,
		Type: v1alpha1.JobTypeVerification, Verification: verification, Attempt: attempt, UpgradeFrom: upgradeFrom,
	}
}

// Name is the job's object name.
func (j Job) Name() string {
	if j.Type == v1alpha1.JobTypeCreation {
		return CreationJobName(j.Payload)
	}
	return RunName(j.Payload, j.Verification, j.Attempt)
}

// Labels are the job's labels (a contract) for an object in namespace: the stream, payload
// and job type, the verification of a run, and the payload's namespace when the object lives
// in another one.
func (j Job) Labels(namespace string) map[string]string {
	l := map[string]string{
		v1alpha1.LabelStream:  j.Stream,
		v1alpha1.LabelPayload: j.Payload,
		v1alpha1.LabelJobType: j.Type,
	}
	if j.Verification != "" {
		l[v1alpha1.LabelVerify] = j.Verification
	}
	if namespace != j.PayloadNamespace {
		l[v1alpha1.LabelPayloadNamespace] = j.PayloadNamespace
	}
	return l
}

// Annotations are the run's annotations: its attempt and where an upgrade starts from; none
// for a creation job.
func (j Job) Annotations() map[string]string {
	if j.Type != v1alpha1.JobTypeVerification {
		return nil
	}
	a := map[string]string{v1alpha1.AnnotationAttempt: strconv.Itoa(int(max(j.Attempt, 1)))}
	if j.UpgradeFrom != "" {
		a[v1alpha1.AnnotationUpgradeFrom] = j.UpgradeFrom
	}
	return a
}

// PayloadKey is the key of the job's payload.
func (j Job) PayloadKey() string {
	return PayloadKey(j.PayloadNamespace, j.Payload)
}

// StreamKey is "<payload namespace>/<stream>"; empty without a stream.
func (j Job) StreamKey() string {
	if j.Stream == "" {
		return ""
	}
	return j.PayloadNamespace + "/" + j.Stream
}

// Parse reads the contract back from an object's labels and annotations; ok is false when
// the object is not one of the controller's jobs (no payload or job type label). A missing or
// malformed attempt counts as the first.
func Parse(obj metav1.Object) (j Job, ok bool) {
	l, a := obj.GetLabels(), obj.GetAnnotations()
	j = Job{
		Stream: l[v1alpha1.LabelStream], PayloadNamespace: l[v1alpha1.LabelPayloadNamespace], Payload: l[v1alpha1.LabelPayload],
		Type: l[v1alpha1.LabelJobType], Verification: l[v1alpha1.LabelVerify],
		Attempt: ParseAttempt(a[v1alpha1.AnnotationAttempt]), UpgradeFrom: a[v1alpha1.AnnotationUpgradeFrom],
	}
	if j.PayloadNamespace == "" {
		j.PayloadNamespace = obj.GetNamespace()
	}
	return j, j.Payload != "" && j.Type != ""
}

// ParseAttempt reads an attempt annotation; missing, malformed or below 1 is the first attempt.
func ParseAttempt(s string) int32 {
	n, err := strconv.ParseInt(s, 10, 32)
	if err != nil || n < 1 {
		return 1
	}
	return int32(n)
}

// PayloadKey identifies a payload across namespaces: "<namespace>/<tag>". Jobs are indexed by it.
func PayloadKey(namespace, tag string) string {
	return namespace + "/" + tag
}

// SplitPayloadKey is the inverse of PayloadKey.
func SplitPayloadKey(key string) (namespace, tag string) {
	namespace, tag, _ = strings.Cut(key, "/")
	return namespace, tag
}

// PayloadKeyOf returns the key of the payload a job object (or a creation job's pod, which
// carries its labels) belongs to, or "" when it is not one of the controller's jobs.
func PayloadKeyOf(obj metav1.Object) string {
	if j, ok := Parse(obj); ok {
		return j.PayloadKey()
	}
	return ""
}

// Selector selects the controller's jobs (and their pods): those with a job-type label.
func Selector() labels.Selector {
	req, err := labels.NewRequirement(v1alpha1.LabelJobType, selection.Exists, nil)
	if err != nil {
		panic(err)
	}
	return labels.NewSelector().Add(*req)
}

// OwnerReference points at the payload, without blocking its deletion: deleting the payload
// deletes its jobs in its namespace (where a garbage collector runs).
func OwnerReference(p *v1alpha1.ReleasePayload) metav1.OwnerReference {
	return metav1.OwnerReference{
		APIVersion: v1alpha1.GroupVersion.String(),
		Kind:       "ReleasePayload",
		Name:       p.Name,
		UID:        p.UID,
	}
}

// MaxRuns bounds the runs of a retried verification. Only failed runs use up its attempts
// (maxRetries+1); a run whose object was deleted before it finished is run again, but not
// forever.
func MaxRuns(v v1alpha1.Verification) int32 {
	return 2 * (v.MaxRetries + 1)
}

// Release is a release tag read as a semantic version.
type Release struct {
	Tag     string
	Version *semver.Version
}

// Releases returns the tags that are semantic versions, newest first (equal versions by tag,
// descending); the others are left out.
func Releases(tags []string) []Release {
	releases := make([]Release, 0, len(tags))
	for _, t := range tags {
		if v, err := semver.NewVersion(t); err == nil {
			releases = append(releases, Release{Tag: t, Version: v})
		}
	}
	slices.SortFunc(releases, func(a, b Release) int {
		return cmp.Or(b.Version.Compare(a.Version), cmp.Compare(b.Tag, a.Tag))
	})
	return releases
}

// Newest returns the tag with the highest version; ok is false when no tag is a semantic version.
func Newest(tags []string) (tag string, ok bool) {
	if r := Releases(tags); len(r) > 0 {
		return r[0].Tag, true
	}
	return "", false
}
