//go:build !unit

package stream_test

import (
	"context"
	"testing"

	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/release-controller/release-controller/api/v1alpha1"
	"github.com/release-controller/release-controller/internal/jobcontract"
	"github.com/release-controller/release-controller/internal/releaseimage"
	"github.com/release-controller/release-controller/internal/releaseimage/releaseimagetest"
)

// TestPlatformStream: a stream built for linux/amd64 and linux/arm64 names a component that
// lacks arm64 and creates no payload until it has it; its payload pins the platforms, is
// built as an image index whose platform images the stream records, and runs its e2e once
// per platform, on nodes of that architecture; the verdict needs both.
func TestPlatformStream(t *testing.T) {
	ns := env.Namespace(t)
	releaseimagetest.PushIndex(t, repo(ns, "api")+":latest", nil, "amd64", "arm64")
	pushImage(t, repo(ns, "web")+":latest", nil) // one image, of no declared platform
	e2e := jobVerification("e2e")
	e2e.Platforms = []string{"linux/amd64", "linux/arm64"}
	s := newStream(t, ns, func(s *v1alpha1.ReleaseStream) {
		s.Spec.Platforms = []string{"linux/amd64", "linux/arm64"}
		s.Spec.Verification = []v1alpha1.Verification{e2e}
	}, "api", "web")
	waitStream(t, s, func(g Gomega, s *v1alpha1.ReleaseStream) {
		c := meta.FindStatusCondition(s.Status.Conditions, v1alpha1.ConditionImported)
		g.Expect(c).NotTo(BeNil())
		g.Expect(c.Status).To(Equal(metav1.ConditionFalse))
		g.Expect(c.Message).To(ContainSubstring("lacks platform linux/amd64, linux/arm64 of the stream"))
	})
	NewWithT(t).Expect(payloads(NewWithT(t), ns)).To(BeEmpty())

	releaseimagetest.PushIndex(t, repo(ns, "web")+":latest", nil, "amd64", "arm64", "s390x")
	p := waitPayloads(t, ns, 1)[0]
	g := NewWithT(t)
	g.Expect(p.Spec.PayloadCreationConfig.Platforms).To(Equal([]string{"linux/amd64", "linux/arm64"}))
	var names []string
	for _, v := range p.Spec.PayloadVerificationConfig.Verifications {
		names = append(names, v.Name)
	}
	g.Expect(names).To(Equal([]string{"e2e-amd64", "e2e-arm64"}))

	// The creation job's work, done here by the build itself.
	components := make([]releaseimage.Component, len(p.Spec.Components))
	for i, c := range p.Spec.Components {
		components[i] = releaseimage.Component{Name: c.Name, Image: c.Image}
	}
	res, err := releaseimage.Build(context.Background(), releaseimage.BuildOptions{
		Tag: p.Name, Stream: "nightly", Repository: p.Spec.PayloadCreationConfig.Repository, Components: components,
		Platforms: p.Spec.PayloadCreationConfig.Platforms, Created: p.CreationTimestamp.Time,
	})
	g.Expect(err).NotTo(HaveOccurred())
	finish(t, waitJob(t, ns, jobcontract.CreationJobName(p.Name)), true)
	repository := p.Spec.PayloadCreationConfig.Repository
	waitPayload(t, ns, p.Name, func(g Gomega, p *v1alpha1.ReleasePayload) {
		g.Expect(p.Status.PayloadImage).To(Equal(res.Image))
		g.Expect(p.Status.PlatformImages).To(Equal([]v1alpha1.PlatformImage{
			{Platform: "linux/amd64", Image: repository + "@" + res.Platforms[0].Digest.String()},
			{Platform: "linux/arm64", Image: repository + "@" + res.Platforms[1].Digest.String()},
		}))
	})

	amd := waitJob(t, ns, jobcontract.RunName(p.Name, "e2e-amd64", 1))
	arm := waitJob(t, ns, jobcontract.RunName(p.Name, "e2e-arm64", 1))
	g.Expect(arm.Labels).To(HaveKeyWithValue(v1alpha1.LabelPlatform, "linux-arm64"))
	g.Expect(arm.Spec.Template.Spec.NodeSelector).To(HaveKeyWithValue(corev1.LabelArchStable, "arm64"))
	g.Expect(envOf(arm)).To(HaveKeyWithValue(v1alpha1.EnvReleasePlatform, "linux/arm64"))
	g.Expect(envOf(arm)).To(HaveKeyWithValue(v1alpha1.EnvReleaseImageLatest, res.Image))
	g.Expect(amd.Spec.Template.Spec.NodeSelector).To(HaveKeyWithValue(corev1.LabelArchStable, "amd64"))

	finish(t, amd, true)
	waitPayload(t, ns, p.Name, func(g Gomega, p *v1alpha1.ReleasePayload) {
		g.Expect(p.Status.Verifications).To(ContainElement(And(HaveField("Name", "e2e-amd64"), HaveField("State", v1alpha1.JobSuccess))))
		g.Expect(p.Status.Phase).To(Equal(v1alpha1.PhaseReady), "one platform's e2e is not a verdict")
	})
	finish(t, arm, true)
	waitPayload(t, ns, p.Name, func(g Gomega, p *v1alpha1.ReleasePayload) {
		g.Expect(p.Status.Phase).To(Equal(v1alpha1.PhaseAccepted))
	})
}
