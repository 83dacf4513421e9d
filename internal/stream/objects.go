package stream

import (
	"slices"
	"strings"

	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	"github.com/release-controller/release-controller/api/v1alpha1"
	"github.com/release-controller/release-controller/internal/jobcontract"
)

// NewPayload is the payload of stream for tag, pinning components and copying the stream's
// verification list and the account its Jobs run as, so later edits of the stream do not
// change them. With templates, the
// verifications' job templates are in that ConfigMap (see VerificationTemplates) and the
// payload lists the verifications without them; nil: inline.
func NewPayload(stream *v1alpha1.ReleaseStream, tag, hash string, components []v1alpha1.PinnedComponent, templates *v1alpha1.VerificationTemplates) *v1alpha1.ReleasePayload {
	verifications := PerPlatform(stream.Spec.Verification)
	if templates != nil {
		verifications = WithoutBackends(verifications)
	}
	return &v1alpha1.ReleasePayload{
		ObjectMeta: metav1.ObjectMeta{
			Namespace:   stream.Namespace,
			Name:        tag,
			Labels:      map[string]string{v1alpha1.LabelStream: stream.Name},
			Annotations: map[string]string{v1alpha1.AnnotationComponentsHash: hash},
			OwnerReferences: []metav1.OwnerReference{{
				APIVersion: v1alpha1.GroupVersion.String(), Kind: "ReleaseStream", Name: stream.Name, UID: stream.UID,
			}},
		},
		Spec: v1alpha1.ReleasePayloadSpec{
			PayloadCoordinates: v1alpha1.PayloadCoordinates{Stream: stream.Name, Tag: tag},
			Components:         slices.Clone(components),
			PayloadCreationConfig: v1alpha1.PayloadCreationConfig{
				Repository:       stream.Spec.PayloadRepository,
				MirrorRepository: stream.Spec.MirrorRepository,
				Platforms:        slices.Clone(stream.Spec.Platforms),
				BaseComponent:    stream.Spec.PayloadBaseComponent,
				Cluster:          stream.Spec.CreationCluster.DeepCopy(),
			},
			PayloadVerificationConfig: v1alpha1.PayloadVerificationConfig{
				Verifications:  verifications,
				TemplatesFrom:  templates.DeepCopy(),
				ServiceAccount: stream.Spec.VerificationServiceAccount.DeepCopy(),
			},
		},
	}
}

// PerPlatform copies a stream's verifications for a payload: a verification listing several
// platforms becomes one per platform, named <name>-<arch>, each listing its platform alone.
func PerPlatform(in []v1alpha1.Verification) []v1alpha1.Verification {
	out := make([]v1alpha1.Verification, 0, len(in))
	for i := range in {
		if len(in[i].Platforms) < 2 {
			out = append(out, *in[i].DeepCopy())
			continue
		}
		for _, platform := range in[i].Platforms {
			v := in[i].DeepCopy()
			v.Name += "-" + v1alpha1.PlatformSuffix(platform)
			v.Platforms = []string{platform}
			out = append(out, *v)
		}
	}
	return out
}

// VerificationNameClash names a payload verification that two of the stream's verifications
// would both make (e2e with platforms linux/arm64 and a verification named e2e-arm64), ""
// when there is none: such a stream creates no payload until it is fixed.
func VerificationNameClash(in []v1alpha1.Verification) string {
	seen := map[string]bool{}
	for _, v := range PerPlatform(in) {
		if seen[v.Name] {
			return v.Name
		}
		seen[v.Name] = true
	}
	return ""
}

// NewCreationJob is the Job that builds and pushes the payload's image with
// `release-controller payload build`.
func NewCreationJob(p *v1alpha1.ReleasePayload, image, serviceAccount string) *batchv1.Job {
	contract := jobcontract.CreationJob(p)
	return &batchv1.Job{
		ObjectMeta: metav1.ObjectMeta{
			Namespace:       p.Namespace,
			Name:            contract.Name(),
			Labels:          contract.Labels(p.Namespace),
			OwnerReferences: []metav1.OwnerReference{jobcontract.OwnerReference(p)},
		},
		Spec: batchv1.JobSpec{
			// One retry covers a registry hiccup; a broken component fails the payload.
			BackoffLimit:          ptr.To[int32](1),
			ActiveDeadlineSeconds: ptr.To[int64](1800),
			Template: corev1.PodTemplateSpec{
				ObjectMeta: metav1.ObjectMeta{Labels: contract.Labels(p.Namespace)},
				Spec: corev1.PodSpec{
					RestartPolicy:      corev1.RestartPolicyNever,
					ServiceAccountName: serviceAccount,
					// Pod Security "restricted": the release-controller image runs as the
					// numeric non-root user 65532 and writes no files.
					SecurityContext: &corev1.PodSecurityContext{
						RunAsNonRoot:   ptr.To(true),
						SeccompProfile: &corev1.SeccompProfile{Type: corev1.SeccompProfileTypeRuntimeDefault},
					},
					Containers: []corev1.Container{{
						Name:    "build",
						Image:   image,
						Command: []string{"release-controller", "payload", "build", "--payload", p.Namespace + "/" + p.Name},
						SecurityContext: &corev1.SecurityContext{
							AllowPrivilegeEscalation: ptr.To(false),
							Capabilities:             &corev1.Capabilities{Drop: []corev1.Capability{"ALL"}},
							ReadOnlyRootFilesystem:   ptr.To(true),
						},
						// A failed build's last output becomes its termination message, which
						// the payload's PayloadFailed condition quotes.
						TerminationMessagePolicy: corev1.TerminationMessageFallbackToLogsOnError,
						// The binary needs a writable temporary folder from its first instruction
						// (a library it links makes a cache folder there when the program
						// starts), and the root filesystem is read-only.
						VolumeMounts: []corev1.VolumeMount{{Name: "tmp", MountPath: "/tmp"}},
					}},
					Volumes: []corev1.Volume{{Name: "tmp", VolumeSource: corev1.VolumeSource{EmptyDir: &corev1.EmptyDirVolumeSource{}}}},
				},
			},
		},
	}
}

func joinSet(set map[string]bool) string {
	names := make([]string, 0, len(set))
	for name := range set {
		names = append(names, name)
	}
	slices.Sort(names)
	return strings.Join(names, ",")
}
