//go:build !unit

package demo

import (
	"bytes"
	"context"
	"fmt"
	"path/filepath"
	"testing"
	"time"

	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/release-controller/release-controller/api/v1alpha1"
	"github.com/release-controller/release-controller/internal/releaseimage"
)

// buildPayload builds the payload of the demo's current components, as the creation job
// would, and returns it by digest. Minutes order the tags of one test.
func buildPayload(t *testing.T, opts Options, minute int) (tag, image string) {
	t.Helper()
	created := time.Date(2026, 11, 22, 9, minute, 0, 0, time.UTC)
	tag = fmt.Sprintf("%s-%s", TagPrefix, created.Format("2006-01-02-150405"))
	var components []releaseimage.Component
	for _, c := range Components {
		components = append(components, releaseimage.Component{Name: c, Image: latest(t, opts, c)})
	}
	res, err := releaseimage.Build(context.Background(), releaseimage.BuildOptions{
		Tag: tag, Stream: StreamName, Repository: opts.PayloadRepository(), Components: components, Created: created,
	})
	if err != nil {
		t.Fatalf("building payload %s: %v", tag, err)
	}
	return tag, res.Image
}

// jobEnv is the environment a verification job gets.
func jobEnv(tag, image, initial string) func(string) string {
	vars := map[string]string{
		v1alpha1.EnvReleaseImageLatest: image,
		v1alpha1.EnvReleaseTag:         tag,
		v1alpha1.EnvReleaseStream:      StreamName,
	}
	if initial != "" {
		vars[v1alpha1.EnvReleaseImageInitial] = initial
	}
	return func(k string) string { return vars[k] }
}

func check(kind string, env func(string) string) (string, error) {
	var out bytes.Buffer
	err := Check(context.Background(), kind, env, &out)
	return out.String(), err
}

func TestCheckE2E(t *testing.T) {
	g := NewWithT(t)
	opts := setup(t)
	tag, image := buildPayload(t, opts, 0)
	out, err := check(CheckE2E, jobEnv(tag, image, ""))
	g.Expect(err).NotTo(HaveOccurred(), out)
	g.Expect(out).To(ContainSubstring("payload " + tag + " of stream nightly"))
	for _, c := range Components {
		g.Expect(out).To(MatchRegexp(`  %s +revision [0-9a-f]{7} "Start the %s component": ok`, c, c))
	}
	g.Expect(out).To(ContainSubstring("e2e: PASS"))

	broken, err := Bump(context.Background(), opts, "web", BreakE2E)
	g.Expect(err).NotTo(HaveOccurred())
	tag, image = buildPayload(t, opts, 1)
	out, err = check(CheckE2E, jobEnv(tag, image, ""))
	g.Expect(err).To(MatchError(fmt.Sprintf("e2e failed: web (revision %.7s) breaks the end-to-end tests", broken.Commit)))
	g.Expect(out).To(ContainSubstring(broken.Message + `": BREAKS E2E`))
	g.Expect(out).To(ContainSubstring("e2e: FAIL"))

	// The next ordinary build of the component repairs it.
	_, err = Bump(context.Background(), opts, "web", NoBreakage)
	g.Expect(err).NotTo(HaveOccurred())
	tag, image = buildPayload(t, opts, 2)
	out, err = check(CheckE2E, jobEnv(tag, image, ""))
	g.Expect(err).NotTo(HaveOccurred(), out)

	// The job's tag must be the payload's.
	_, err = check(CheckE2E, jobEnv(TagPrefix+"-2026-11-22-093000", image, ""))
	g.Expect(err).To(MatchError(ContainSubstring("but RELEASE_TAG is " + TagPrefix + "-2026-11-22-093000")))
	_, err = check(CheckE2E, jobEnv(tag, "", ""))
	g.Expect(err).To(MatchError(ContainSubstring("RELEASE_IMAGE_LATEST is not set")))
}

func TestCheckUpgrade(t *testing.T) {
	g := NewWithT(t)
	opts := setup(t)
	oldTag, oldImage := buildPayload(t, opts, 0)
	_, err := Bump(context.Background(), opts, "operator", NoBreakage)
	g.Expect(err).NotTo(HaveOccurred())
	newTag, newImage := buildPayload(t, opts, 1)

	out, err := check(CheckUpgrade, jobEnv(newTag, newImage, oldImage))
	g.Expect(err).NotTo(HaveOccurred(), out)
	g.Expect(out).To(ContainSubstring("upgrade from " + oldTag + " to " + newTag))
	g.Expect(out).To(ContainSubstring("components changed: operator\n"))

	// Upgrading to an older release, or to itself, is no upgrade.
	out, err = check(CheckUpgrade, jobEnv(oldTag, oldImage, newImage))
	g.Expect(err).To(MatchError("upgrade failed: " + newTag + " is not older than " + oldTag))
	g.Expect(out).To(ContainSubstring("upgrade from " + newTag + " to " + oldTag))
	_, err = check(CheckUpgrade, jobEnv(newTag, newImage, newImage))
	g.Expect(err).To(MatchError(ContainSubstring("is not older than")))

	// It needs a payload to upgrade from.
	_, err = check(CheckUpgrade, jobEnv(newTag, newImage, ""))
	g.Expect(err).To(MatchError(ContainSubstring("RELEASE_IMAGE_INITIAL is not set")))
	_, err = check(CheckUpgrade, jobEnv(newTag, newImage, latest(t, opts, "api")))
	g.Expect(err).To(MatchError(ContainSubstring("is not a release payload image")))
}

func TestRandomChecks(t *testing.T) {
	opts := setup(t)
	tag, image := buildPayload(t, opts, 0)
	defer func(old func() float64) { chance = old }(chance)

	for _, tc := range []struct {
		kind    string
		roll    float64
		failure string
	}{
		{CheckFlaky, 0.34, "integration failed at random (it fails 35% of the time)"},
		{CheckFlaky, 0.35, ""},
		{CheckConformance, 0.19, "conformance failed at random (it fails 20% of the time)"},
		{CheckConformance, 0.20, ""},
	} {
		chance = func() float64 { return tc.roll }
		out, err := check(tc.kind, jobEnv(tag, image, ""))
		g := NewWithT(t)
		g.Expect(out).To(ContainSubstring("this check fails at random"))
		if tc.failure == "" {
			g.Expect(err).NotTo(HaveOccurred(), "%s with roll %v", tc.kind, tc.roll)
			g.Expect(out).To(ContainSubstring(": PASS"))
		} else {
			g.Expect(err).To(MatchError(tc.failure), "%s with roll %v", tc.kind, tc.roll)
			g.Expect(out).To(ContainSubstring(": FAIL (random failure)"))
		}
	}
}

func TestCheckUnknownKind(t *testing.T) {
	_, err := check("load", jobEnv("", "", ""))
	NewWithT(t).Expect(err).To(MatchError(`unknown check kind "load" (known: e2e, flaky, upgrade, conformance, smoke)`))
}

// The smoke check reads the app each target runs, rolled out at the revision, and fails on a
// component that breaks smoke, which the stream's e2e check lets through.
func TestCheckSmoke(t *testing.T) {
	g := NewWithT(t)
	ctx := context.Background()
	opts := setup(t)
	kubeconfig := filepath.Join(t.TempDir(), "kubeconfig")
	g.Expect(env.WriteKubeconfig(kubeconfig)).To(Succeed())
	dev := opts.EnvironmentNamespace("dev")
	g.Expect(env.Client.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: dev}})).To(Succeed())
	app := App(opts, dev)
	g.Expect(env.Client.Create(ctx, app)).To(Succeed())
	// rollOut runs the payload tag in the app; done writes the status of a finished rollout.
	rollOut := func(tag string, done bool) {
		t.Helper()
		g.Expect(env.Client.Get(ctx, client.ObjectKeyFromObject(app), app)).To(Succeed())
		app.Spec.Template.Spec.Containers[0].Image = opts.PayloadRepository() + ":" + tag
		g.Expect(env.Client.Update(ctx, app)).To(Succeed())
		if done {
			app.Status = RolledOut(app, metav1.Now())
			g.Expect(env.Client.Status().Update(ctx, app)).To(Succeed())
		}
	}
	smokeEnv := func(revision, targets string) func(string) string {
		vars := map[string]string{
			v1alpha1.EnvRevision: revision, v1alpha1.EnvTargets: targets, v1alpha1.EnvEnvironment: "dev",
			v1alpha1.EnvPipeline: PipelineName, v1alpha1.EnvPipelineNamespace: opts.namespace(), "KUBECONFIG": kubeconfig,
		}
		return func(k string) string { return vars[k] }
	}

	// The app as the demo makes it runs the placeholder, which no payload is yet.
	rollOut(PlaceholderRevision, true)
	out, err := check(CheckSmoke, smokeEnv(PlaceholderRevision, dev))
	g.Expect(err).NotTo(HaveOccurred(), out)
	g.Expect(out).To(ContainSubstring("runs the placeholder :latest, which no payload is yet: nothing to check"))

	good, _ := buildPayload(t, opts, 0)
	rollOut(good, true)
	out, err = check(CheckSmoke, smokeEnv(good, dev))
	g.Expect(err).NotTo(HaveOccurred(), out)
	g.Expect(out).To(ContainSubstring("target " + dev + ": nightly rolled out, running payload " + good + " (4 components)"))
	g.Expect(out).To(ContainSubstring("smoke: PASS"))

	broken, err := Bump(ctx, opts, "web", BreakSmoke)
	g.Expect(err).NotTo(HaveOccurred())
	bad, badImage := buildPayload(t, opts, 1)
	out, err = check(CheckE2E, jobEnv(bad, badImage, ""))
	g.Expect(err).NotTo(HaveOccurred(), "the stream's e2e lets a smoke breakage through: %s", out)

	// A rollout that has not finished is not checked yet.
	rollOut(bad, false)
	_, err = check(CheckSmoke, smokeEnv(bad, dev))
	g.Expect(err).To(MatchError(ContainSubstring("not rolled out at " + bad)))
	rollOut(bad, true)
	out, err = check(CheckSmoke, smokeEnv(bad, dev))
	g.Expect(err).To(MatchError(fmt.Sprintf("smoke failed: web (revision %.7s) in %s breaks the rolled-out app", broken.Commit, dev)))
	g.Expect(out).To(ContainSubstring(broken.Message + `": BREAKS SMOKE`))
	g.Expect(out).To(ContainSubstring("smoke: FAIL"))

	// The app must run the revision verified; targets on other clusters are not read; it runs
	// only as an environment's verification.
	_, err = check(CheckSmoke, smokeEnv(good, dev))
	g.Expect(err).To(MatchError(ContainSubstring(fmt.Sprintf(`the app is at %q`, bad))))
	_, err = check(CheckSmoke, smokeEnv(bad, "remote-cluster:"+dev))
	g.Expect(err).To(MatchError(ContainSubstring("is on another cluster")))
	_, err = check(CheckSmoke, smokeEnv("", ""))
	g.Expect(err).To(MatchError(ContainSubstring("RELEASE_REVISION and RELEASE_TARGETS are not set")))
}
