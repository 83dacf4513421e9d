// Package demo is the demo of `release-controller dev`: a sample stream whose components are
// real images built in-process from local git repositories with real commits, a simulated
// build system that publishes new builds (some of them broken on purpose), and the
// verification checks the stream's jobs run, which pass, fail and flake.
//
// On disk (Options.Dir):
//
//	git/<component>/   one git repository per component
//	demo.lock          serialises builds between processes
//
// In the registry (Options.Registry), with the default namespace "demo":
//
//	demo/<component>:latest   the newest build of each component
//	demo/release:<tag>        the payloads, written by the release controller
package demo

import (
	"context"
	"errors"
	"fmt"
	"path/filepath"
	"slices"
	"time"

	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/google/go-containerregistry/pkg/v1/remote"

	"github.com/release-controller/release-controller/api/v1alpha1"
)

// DefaultNamespace holds the demo's stream and names its registry folder.
const DefaultNamespace = "demo"

// StreamName is the name of the demo's ReleaseStream.
const StreamName = "nightly"

// Platforms are what every demo build and payload is built for.
var Platforms = []string{"linux/amd64", "linux/arm64"}

// TagPrefix starts the demo stream's release tags.
const TagPrefix = "1.0.0-0.nightly"

// DefaultCheckImage is the image of the verification jobs unless Options.CheckImage names
// one; the local job runner does not pull it, it runs the command with the dev binary.
const DefaultCheckImage = "release-controller:dev"

// Components are the demo product's components, in the order the stream lists them.
var Components = []string{"api", "web", "worker", "operator"}

// Options say where the demo lives.
type Options struct {
	// Dir holds the git repositories and the build lock. Required.
	Dir string
	// Registry is the host:port of the registry the images are pushed to. Required.
	Registry string
	// Namespace holds the stream; it also names the registry folder of the images, so
	// several demos can share one registry. Default DefaultNamespace.
	Namespace string
	// Remote options (transport, credentials) for every registry call.
	Remote []remote.Option
	// CheckImage is the verification jobs' image: dev passes the release-controller image it
	// pushed to its registry, so the jobs name a real image. Default DefaultCheckImage.
	CheckImage string
	// WebURL is the base URL of dev's pages, which the sample risk links. Default DefaultWebURL.
	WebURL string
}

func (o Options) checkImage() string {
	if o.CheckImage == "" {
		return DefaultCheckImage
	}
	return o.CheckImage
}

func (o Options) namespace() string {
	if o.Namespace == "" {
		return DefaultNamespace
	}
	return o.Namespace
}

func (o Options) validate() error {
	if o.Dir == "" {
		return errors.New("demo: Options.Dir is required")
	}
	if o.Registry == "" {
		return errors.New("demo: Options.Registry is required")
	}
	return nil
}

// ComponentRepository is the registry repository of a component's images.
func (o Options) ComponentRepository(component string) string {
	return o.Registry + "/" + o.namespace() + "/" + component
}

// PayloadRepository is the registry repository of the demo's payloads.
func (o Options) PayloadRepository() string {
	return o.Registry + "/" + o.namespace() + "/release"
}

// GitRoot is the folder of the components' git repositories.
func (o Options) GitRoot() string { return filepath.Join(o.Dir, "git") }

// GitDir is the git repository of a component.
func (o Options) GitDir(component string) string {
	return filepath.Join(o.GitRoot(), component)
}

// The verification check kinds, run as `release-controller dev check <kind>`.
const (
	CheckE2E         = "e2e"
	CheckFlaky       = "flaky"
	CheckUpgrade     = "upgrade"
	CheckConformance = "conformance"
	// CheckSmoke is the demo pipeline's check of its dev environment after each rollout.
	CheckSmoke = "smoke"
)

// CheckCommand is the command of a verification job running the check kind.
func CheckCommand(kind string) []string {
	return []string{"release-controller", "dev", "check", kind}
}

// checkJob is the Job backend running a check: one pod, no pod-level retries, since the
// stream's maxRetries decides about retries.
func checkJob(kind, image string) *v1alpha1.JobBackend {
	return &v1alpha1.JobBackend{Template: batchv1.JobTemplateSpec{Spec: batchv1.JobSpec{
		BackoffLimit: ptr.To[int32](0),
		Template: corev1.PodTemplateSpec{Spec: corev1.PodSpec{
			RestartPolicy: corev1.RestartPolicyNever,
			Containers: []corev1.Container{{
				Name:    kind,
				Image:   image,
				Command: CheckCommand(kind),
			}},
		}},
	}}}
}

// Stream is the demo's ReleaseStream: the four components by tag, verifications that pass,
// fail and flake, and the update service's channels (UpdateService).
func Stream(opts Options) *v1alpha1.ReleaseStream {
	s := &v1alpha1.ReleaseStream{
		ObjectMeta: metav1.ObjectMeta{Namespace: opts.namespace(), Name: StreamName},
		Spec: v1alpha1.ReleaseStreamSpec{
			TagPrefix:           TagPrefix,
			PayloadRepository:   opts.PayloadRepository(),
			Platforms:           slices.Clone(Platforms),
			MaxUnreadyReleases:  2,
			MinCreationInterval: &metav1.Duration{Duration: 20 * time.Second},
			PublishTags:         []string{"latest", "1.0"},
			UpdateService:       UpdateService(),
			Retention: v1alpha1.Retention{
				KeepAccepted:    10,
				CompletedJobTTL: &metav1.Duration{Duration: time.Hour},
			},
			Verification: []v1alpha1.Verification{
				// Once per platform: e2e-amd64 and e2e-arm64.
				{Name: "e2e", Type: v1alpha1.Blocking, MaxRetries: 1, Platforms: slices.Clone(Platforms), Job: checkJob(CheckE2E, opts.checkImage())},
				{Name: "integration", Type: v1alpha1.Blocking, MaxRetries: 2, Job: checkJob(CheckFlaky, opts.checkImage())},
				{Name: "upgrade", Type: v1alpha1.Blocking, UpgradeFrom: v1alpha1.UpgradeFromPrevious, Job: checkJob(CheckUpgrade, opts.checkImage())},
				{Name: "conformance", Type: v1alpha1.Informing, Aggregation: &v1alpha1.Aggregation{Runs: 3, PassRatio: 0.6}, Job: checkJob(CheckConformance, opts.checkImage())},
			},
		},
	}
	for _, c := range Components {
		s.Spec.Components = append(s.Spec.Components, v1alpha1.ComponentSource{Name: c, Image: opts.ComponentRepository(c) + ":latest"})
	}
	return s
}

// Setup makes the demo exist, creating only what is missing, so it resumes after a restart
// and never overwrites a user's edits: the git repositories (with an initial commit), an
// image of each repository's newest commit where the component's :latest tag is missing,
// the namespace, the stream and the sample UpgradeRisk.
func Setup(ctx context.Context, c client.Client, opts Options) error {
	if err := opts.validate(); err != nil {
		return err
	}
	if err := withLock(opts, func() error {
		for _, component := range Components {
			if err := ensureComponent(ctx, opts, component); err != nil {
				return fmt.Errorf("demo component %s: %w", component, err)
			}
		}
		return nil
	}); err != nil {
		return err
	}

	ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: opts.namespace()}}
	if err := createIfMissing(ctx, c, ns); err != nil {
		return fmt.Errorf("demo namespace %s: %w", ns.Name, err)
	}
	s := Stream(opts)
	if err := createIfMissing(ctx, c, s); err != nil {
		return fmt.Errorf("demo stream %s/%s: %w", s.Namespace, s.Name, err)
	}
	risk := SampleRisk(opts)
	if err := createIfMissing(ctx, c, risk); err != nil {
		return fmt.Errorf("demo upgrade risk %s/%s: %w", risk.Namespace, risk.Name, err)
	}
	return nil
}

// createIfMissing creates obj unless an object of that name exists already (whatever it holds).
func createIfMissing(ctx context.Context, c client.Client, obj client.Object) error {
	existing := obj.DeepCopyObject().(client.Object)
	err := c.Get(ctx, client.ObjectKeyFromObject(obj), existing)
	if err == nil {
		return nil
	}
	if !apierrors.IsNotFound(err) {
		return err
	}
	// Another process may create it between the read and the write: that is fine too.
	if err := c.Create(ctx, obj); err != nil && !apierrors.IsAlreadyExists(err) {
		return err
	}
	return nil
}
