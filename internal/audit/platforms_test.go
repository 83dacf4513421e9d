//go:build !unit

package audit_test

import (
	"context"
	"encoding/json"
	"testing"
	"time"

	"github.com/google/go-containerregistry/pkg/name"
	. "github.com/onsi/gomega"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/release-controller/release-controller/api/v1alpha1"
	"github.com/release-controller/release-controller/internal/audit"
	"github.com/release-controller/release-controller/internal/registryclient"
	"github.com/release-controller/release-controller/internal/releaseimage"
	"github.com/release-controller/release-controller/internal/releaseimage/releaseimagetest"
	"github.com/release-controller/release-controller/internal/signing"
	"github.com/release-controller/release-controller/internal/verdict/verdicttest"
)

// platformPayload builds a payload for linux/amd64 and linux/arm64 of two index components
// and creates it in ns, accepted, with the platform images the stream controller records.
func platformPayload(t *testing.T, ns string) *v1alpha1.ReleasePayload {
	t.Helper()
	created := time.Date(2026, 11, 23, 11, int(minute.Add(1)), 0, 0, time.UTC)
	tag := "4.15.0-0.nightly-" + created.Format("2006-01-02-150405")
	repo := reg.Addr() + "/" + ns + "/release"
	platforms := []string{"linux/amd64", "linux/arm64"}
	var components []releaseimage.Component
	var pinned []v1alpha1.PinnedComponent
	for _, c := range []string{"api", "web"} {
		image := releaseimagetest.PushIndex(t, reg.Addr()+"/"+ns+"/"+c+":latest", nil, "amd64", "arm64")
		components = append(components, releaseimage.Component{Name: c, Image: image})
		pinned = append(pinned, v1alpha1.PinnedComponent{Name: c, Image: image})
	}
	res, err := releaseimage.Build(context.Background(), releaseimage.BuildOptions{
		Tag: tag, Stream: "nightly", Repository: repo, Components: components, Created: created, Platforms: platforms,
	})
	if err != nil {
		t.Fatalf("building payload %s: %v", tag, err)
	}
	p := &v1alpha1.ReleasePayload{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: tag},
		Spec: v1alpha1.ReleasePayloadSpec{
			PayloadCoordinates:    v1alpha1.PayloadCoordinates{Stream: "nightly", Tag: tag},
			Components:            pinned,
			PayloadCreationConfig: v1alpha1.PayloadCreationConfig{Repository: repo, Platforms: platforms},
		},
	}
	ctx := context.Background()
	if err := env.Client.Create(ctx, p); err != nil {
		t.Fatal(err)
	}
	p.Status = v1alpha1.ReleasePayloadStatus{
		PayloadImage:             res.Image,
		ReleaseCreationJobResult: v1alpha1.ReleaseCreationJobResult{Status: v1alpha1.CreationJobSuccess},
	}
	for _, pi := range res.Platforms {
		p.Status.PlatformImages = append(p.Status.PlatformImages, v1alpha1.PlatformImage{Platform: pi.Platform, Image: repo + "@" + pi.Digest.String()})
	}
	verdicttest.Earn(p, v1alpha1.PhaseAccepted)
	if err := env.Client.Status().Update(ctx, p); err != nil {
		t.Fatal(err)
	}
	return p
}

// TestPlatformPayloadIsAuditedAndEveryImageSigned: a payload built for two platforms is
// audited platform by platform, and its index and each platform's image are signed once, so
// `payload verify --platform` verifies what a consumer of one platform pulls.
func TestPlatformPayloadIsAuditedAndEveryImageSigned(t *testing.T) {
	g := NewWithT(t)
	ns := env.Namespace(t)
	dir := t.TempDir()
	key := newKey(t, ns, "signing-key")
	p := platformPayload(t, ns)
	startAudit(t, ns, &audit.Reconciler{Options: audit.Options{Store: openStore(t, dir), KeySecret: key.secret}})
	g.Eventually(condition(g, p, v1alpha1.ConditionPayloadSigned), waitTimeout).Should(withReason(v1alpha1.ReasonSigned))
	audited := condition(g, p, v1alpha1.ConditionPayloadAudited)()
	g.Expect(audited.Status).To(Equal(metav1.ConditionTrue), audited.Message)

	store := openStore(t, dir)
	raw, err := store.Audit(context.Background(), digestOf(p))
	g.Expect(err).NotTo(HaveOccurred())
	var rec audit.Record
	g.Expect(json.Unmarshal(raw, &rec)).To(Succeed())
	var checks []string
	for _, c := range rec.Checks {
		checks = append(checks, c.Name)
	}
	g.Expect(checks).To(Equal([]string{"image-recorded", "tag-digest", "payload-image",
		"payload-image linux/amd64", "version linux/amd64", "components linux/amd64",
		"payload-image linux/arm64", "version linux/arm64", "components linux/arm64", "components-present"}))
	g.Expect(rec.Passed).To(BeTrue())

	for _, image := range append([]string{p.Status.PayloadImage}, p.Status.PlatformImages[0].Image, p.Status.PlatformImages[1].Image) {
		d, err := name.NewDigest(image)
		g.Expect(err).NotTo(HaveOccurred())
		sigs, err := store.Signatures(context.Background(), d.DigestStr())
		g.Expect(err).NotTo(HaveOccurred())
		g.Expect(sigs).To(HaveLen(1), "signatures of %s", image)
	}
	tagRef := p.Spec.PayloadCreationConfig.Repository + ":" + p.Name
	for _, pi := range p.Status.PlatformImages {
		res, err := signing.VerifyPayload(context.Background(), tagRef, signing.VerifyPayloadOptions{
			Keyring: key.key.Keyring(), Signatures: store, Registry: registryclient.New(), Platform: pi.Platform,
		})
		g.Expect(err).NotTo(HaveOccurred())
		g.Expect(res.Image).To(Equal(pi.Image))
	}
	_, err = signing.VerifyPayload(context.Background(), tagRef, signing.VerifyPayloadOptions{
		Keyring: key.key.Keyring(), Signatures: store, Registry: registryclient.New(), Platform: "linux/s390x",
	})
	g.Expect(err).To(MatchError(ContainSubstring("has no image of linux/s390x (it has linux/amd64, linux/arm64)")))
}
