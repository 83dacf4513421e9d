package demo

import (
	"context"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"slices"
	"strings"
	"time"

	"github.com/Masterminds/semver/v3"
	"github.com/google/go-containerregistry/pkg/name"
	"github.com/google/go-containerregistry/pkg/v1/remote"

	"github.com/release-controller/release-controller/api/v1alpha1"
	"github.com/release-controller/release-controller/internal/releaseimage"
)

// CheckPause is the longest pause a check takes before it starts, so that runs stay visible
// for a moment; each pause is random between a quarter of it and all of it. Zero pauses not
// at all (tests).
var CheckPause = 4 * time.Second

// Chances that the random checks fail.
const (
	FlakyFailureChance       = 0.35
	ConformanceFailureChance = 0.20
)

// chance draws the number in [0, 1) the random checks compare with their failure chance;
// tests replace it to pick an outcome.
var chance = rand.Float64

// CheckKinds are the known check kinds.
var CheckKinds = []string{CheckE2E, CheckFlaky, CheckUpgrade, CheckConformance, CheckSmoke}

// Check runs the verification check kind against the payload of the verification job's
// environment (env is os.Getenv in a job): it reads the payload image RELEASE_IMAGE_LATEST,
// prints what it checks to out, and returns an error when the check fails.
//
//   - e2e fails when a component's commit message carries MarkerBreaksE2E;
//   - flaky fails at random, FlakyFailureChance of the time;
//   - upgrade needs RELEASE_IMAGE_INITIAL, a payload with an older release tag;
//   - conformance fails at random, ConformanceFailureChance of the time;
//   - smoke is the demo pipeline's check of its dev environment (checkSmoke).
func Check(ctx context.Context, kind string, env func(string) string, out io.Writer, remoteOpts ...remote.Option) error {
	if !slices.Contains(CheckKinds, kind) {
		return fmt.Errorf("unknown check kind %q (known: %s)", kind, strings.Join(CheckKinds, ", "))
	}
	if err := pause(ctx); err != nil {
		return err
	}
	if kind == CheckSmoke {
		return checkSmoke(ctx, env, out, remoteOpts)
	}
	latest, err := payload(ctx, env, out, remoteOpts)
	if err != nil {
		return err
	}
	switch kind {
	case CheckE2E:
		return checkE2E(ctx, latest, out, remoteOpts)
	case CheckFlaky:
		return checkRandom(latest, "integration", FlakyFailureChance, out)
	case CheckUpgrade:
		return checkUpgrade(ctx, latest, env, out, remoteOpts)
	default:
		return checkRandom(latest, "conformance", ConformanceFailureChance, out)
	}
}

func pause(ctx context.Context) error {
	if CheckPause <= 0 {
		return nil
	}
	d := CheckPause/4 + rand.N(CheckPause*3/4+1)
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
		return ctx.Err()
	case <-t.C:
		return nil
	}
}

// payload reads the payload under test and checks it is the release the job was given.
func payload(ctx context.Context, env func(string) string, out io.Writer, remoteOpts []remote.Option) (*releaseimage.PayloadInfo, error) {
	image := env(v1alpha1.EnvReleaseImageLatest)
	if image == "" {
		return nil, fmt.Errorf("%s is not set: a check needs the payload image to test", v1alpha1.EnvReleaseImageLatest)
	}
	// A run for one platform reads that platform's image; others the first platform's.
	info, err := releaseimage.PlatformInfo(ctx, image, env(v1alpha1.EnvReleasePlatform), remoteOpts...)
	if err != nil {
		return nil, err
	}
	fmt.Fprintf(out, "payload %s of stream %s: %s (%d components)\n",
		info.Metadata.Version, info.Metadata.Stream, info.Image, len(info.References.Components))
	if tag := env(v1alpha1.EnvReleaseTag); tag != "" && tag != info.Metadata.Version {
		return nil, fmt.Errorf("the payload image holds release %s, but %s is %s", info.Metadata.Version, v1alpha1.EnvReleaseTag, tag)
	}
	if stream := env(v1alpha1.EnvReleaseStream); stream != "" && stream != info.Metadata.Stream {
		return nil, fmt.Errorf("the payload image belongs to stream %s, but %s is %s", info.Metadata.Stream, v1alpha1.EnvReleaseStream, stream)
	}
	return info, nil
}

// checkE2E reads every component image's commit message and fails on the ones that say they
// break the end-to-end tests.
func checkE2E(ctx context.Context, p *releaseimage.PayloadInfo, out io.Writer, remoteOpts []remote.Option) error {
	broken, err := marked(ctx, p, MarkerBreaksE2E, "BREAKS E2E", out, remoteOpts)
	if err != nil {
		return err
	}
	if len(broken) > 0 {
		fmt.Fprintf(out, "e2e: FAIL\n")
		return fmt.Errorf("e2e failed: %s breaks the end-to-end tests", strings.Join(broken, ", "))
	}
	fmt.Fprintf(out, "e2e: PASS, %d components\n", len(p.References.Components))
	return nil
}

// marked prints every component image's commit message of p, with verdict beside those that
// carry marker, and returns those components ("web (revision 1a2b3c4)").
func marked(ctx context.Context, p *releaseimage.PayloadInfo, marker, verdict string, out io.Writer, remoteOpts []remote.Option) ([]string, error) {
	opts := append(slices.Clone(remoteOpts), remote.WithContext(ctx))
	var found []string
	for _, c := range p.References.Components {
		ref, err := name.ParseReference(c.Image)
		if err != nil {
			return nil, fmt.Errorf("component %s: %w", c.Name, err)
		}
		img, err := remote.Image(ref, opts...)
		if err != nil {
			return nil, fmt.Errorf("component %s: reading %s: %w", c.Name, c.Image, err)
		}
		config, err := img.ConfigFile()
		if err != nil {
			return nil, fmt.Errorf("component %s: reading the configuration of %s: %w", c.Name, c.Image, err)
		}
		message := config.Config.Labels[LabelMessage]
		says := "ok"
		if strings.Contains(message, marker) {
			says = verdict
			found = append(found, fmt.Sprintf("%s (revision %.7s)", c.Name, c.Revision))
		}
		fmt.Fprintf(out, "  %-10s revision %.7s %q: %s\n", c.Name, c.Revision, message, says)
	}
	return found, nil
}

// checkRandom is a test suite that fails at random with the given chance.
func checkRandom(p *releaseimage.PayloadInfo, suite string, failure float64, out io.Writer) error {
	fmt.Fprintf(out, "%s: testing %s; this check fails at random %.0f%% of the time\n", suite, p.Metadata.Version, failure*100)
	if chance() < failure {
		fmt.Fprintf(out, "%s: FAIL (random failure)\n", suite)
		return fmt.Errorf("%s failed at random (it fails %.0f%% of the time)", suite, failure*100)
	}
	fmt.Fprintf(out, "%s: PASS\n", suite)
	return nil
}

// checkUpgrade reads the payload to upgrade from and checks that it is an older release.
func checkUpgrade(ctx context.Context, latest *releaseimage.PayloadInfo, env func(string) string, out io.Writer, remoteOpts []remote.Option) error {
	image := env(v1alpha1.EnvReleaseImageInitial)
	if image == "" {
		return fmt.Errorf("%s is not set: an upgrade check needs the payload to upgrade from", v1alpha1.EnvReleaseImageInitial)
	}
	initial, err := releaseimage.Info(ctx, image, remoteOpts...)
	if err != nil {
		return fmt.Errorf("the payload to upgrade from: %w", err)
	}
	from, err := semver.StrictNewVersion(initial.Metadata.Version)
	if err != nil {
		return fmt.Errorf("the payload to upgrade from has release tag %q, not a semantic version: %w", initial.Metadata.Version, err)
	}
	to, err := semver.StrictNewVersion(latest.Metadata.Version)
	if err != nil {
		return fmt.Errorf("the payload has release tag %q, not a semantic version: %w", latest.Metadata.Version, err)
	}
	fmt.Fprintf(out, "upgrade from %s to %s\n", from, to)
	if !from.LessThan(to) {
		return errors.New("upgrade failed: " + initial.Metadata.Version + " is not older than " + latest.Metadata.Version)
	}
	before := map[string]string{}
	for _, c := range initial.References.Components {
		before[c.Name] = c.Image
	}
	var changed []string
	for _, c := range latest.References.Components {
		if before[c.Name] != c.Image {
			changed = append(changed, c.Name)
		}
	}
	if len(changed) == 0 {
		changed = []string{"none"}
	}
	fmt.Fprintf(out, "upgrade: components changed: %s\n", strings.Join(changed, ", "))
	fmt.Fprintf(out, "upgrade: PASS\n")
	return nil
}
