//go:build !unit

// Package e2e drives release streams end to end on the pieces of `release-controller dev`,
// in-process: a real API server, the embedded registry, the local job runner running the real
// release-controller binary (payload builds, payload info in verification scripts) and every
// controller.
package e2e

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"testing"
	"time"

	"github.com/google/go-containerregistry/pkg/name"
	"github.com/google/go-containerregistry/pkg/v1/mutate"
	"github.com/google/go-containerregistry/pkg/v1/random"
	"github.com/google/go-containerregistry/pkg/v1/remote"
	. "github.com/onsi/gomega"
	"go.uber.org/zap/zapcore"
	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/log/zap"

	"github.com/release-controller/release-controller/api/v1alpha1"
	"github.com/release-controller/release-controller/internal/devenv/jobrunner"
	"github.com/release-controller/release-controller/internal/devenv/registry"
	"github.com/release-controller/release-controller/internal/manager"
	"github.com/release-controller/release-controller/internal/registryclient"
	"github.com/release-controller/release-controller/internal/releaselog"
	"github.com/release-controller/release-controller/internal/stream"
	"github.com/release-controller/release-controller/internal/testenv"
	"github.com/release-controller/release-controller/internal/verify"
)

var (
	env        *testenv.Env
	reg        *registry.Server
	workDir    string // the binary, the kubeconfig, job logs, scratch files of the scripts
	binary     string
	kubeconfig string
	// logNamespace holds the release log the accepted and rejected payloads are written to.
	logNamespace string
	// stopControllers stops the running controllers and job runner.
	stopControllers func()
)

const waitTimeout = 3 * time.Minute

func TestMain(m *testing.M) {
	ctrl.SetLogger(zap.New(zap.WriteTo(os.Stderr), zap.Level(zapcore.ErrorLevel)))
	testenv.Main(m, &env, func(e *testenv.Env) (func(), error) {
		var err error
		if workDir, err = os.MkdirTemp("", "e2e-"); err != nil {
			return nil, err
		}
		binary = filepath.Join(workDir, "bin", "release-controller")
		build := exec.Command("go", "build", "-o", binary, "github.com/release-controller/release-controller/cmd/release-controller")
		build.Stdout, build.Stderr = os.Stderr, os.Stderr
		if err := build.Run(); err != nil {
			return nil, fmt.Errorf("building release-controller: %w", err)
		}
		logNamespace = "release-log"
		if err := e.Client.Create(context.Background(), &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: logNamespace}}); err != nil {
			return nil, err
		}
		kubeconfig = filepath.Join(workDir, "kubeconfig")
		if err := e.WriteKubeconfig(kubeconfig); err != nil {
			return nil, err
		}
		ctx, cancel := context.WithCancel(context.Background())
		if reg, err = registry.Start(ctx, registry.Options{Dir: filepath.Join(workDir, "registry")}); err != nil {
			cancel()
			return nil, err
		}
		if stopControllers, err = startControllers(); err != nil {
			cancel()
			return nil, err
		}
		return func() {
			if stopControllers != nil {
				stopControllers()
			}
			cancel()
			_ = reg.Close()
			_ = os.RemoveAll(workDir)
		}, nil
	})
}

// startControllers runs every controller and the job runner, as `release-controller dev` does.
func startControllers() (func(), error) {
	opts := manager.Options{
		MetricsAddr: "0", ProbeAddr: "0",
		ImportInterval: time.Second,
		RetryBackoff:   verify.Backoff{Base: 500 * time.Millisecond, Cap: 2 * time.Second},
		BuildImage:     "release-controller:e2e",
		// TestRestartConverges starts the controllers a second time in this process.
		SkipControllerNameValidation: true,
		ReleaseLog:                   releaselog.Options{Namespace: logNamespace},
	}
	return env.StartControllers(opts, func(mgr ctrl.Manager) error {
		runner, err := jobrunner.New(jobrunner.Options{
			Executable: binary,
			LogDir:     filepath.Join(workDir, "logs"),
			Env:        []string{"KUBECONFIG=" + kubeconfig, "PATH=" + filepath.Dir(binary) + ":" + os.Getenv("PATH"), "SCRATCH=" + workDir},
		})
		if err != nil {
			return err
		}
		return runner.SetupWithManager(mgr)
	})
}

func repo(ns, image string) string { return fmt.Sprintf("%s/%s/%s", reg.Addr(), ns, image) }

// publish pushes a new build of a component, labelled with its source and revision as a CI
// system would, for platform linux/<arch>; it returns the image by digest.
func publish(t testing.TB, ns, component, revision, arch string) string {
	t.Helper()
	img, err := random.Image(512, 1)
	if err != nil {
		t.Fatal(err)
	}
	cfg, err := img.ConfigFile()
	if err != nil {
		t.Fatal(err)
	}
	cfg = cfg.DeepCopy()
	cfg.OS, cfg.Architecture = "linux", arch
	cfg.Config.Labels = map[string]string{
		"org.opencontainers.image.source":   "https://git.example.com/" + component,
		"org.opencontainers.image.revision": revision,
	}
	if img, err = mutate.ConfigFile(img, cfg); err != nil {
		t.Fatal(err)
	}
	ref, err := name.ParseReference(repo(ns, component) + ":latest")
	if err != nil {
		t.Fatal(err)
	}
	if err := remote.Write(ref, img); err != nil {
		t.Fatal(err)
	}
	digest, err := img.Digest()
	if err != nil {
		t.Fatal(err)
	}
	return ref.Context().Digest(digest.String()).String()
}

// script is a Job verification running a shell script (with release-controller on its PATH).
func script(name, body string) v1alpha1.Verification {
	return v1alpha1.Verification{Name: name, Job: &v1alpha1.JobBackend{Template: batchv1.JobTemplateSpec{Spec: batchv1.JobSpec{
		BackoffLimit: ptr.To[int32](0),
		Template: corev1.PodTemplateSpec{Spec: corev1.PodSpec{
			RestartPolicy: corev1.RestartPolicyNever,
			Containers:    []corev1.Container{{Name: "test", Image: "tests", Command: []string{"sh", "-c", body}}},
		}},
	}}}}
}

// newStream creates a stream "nightly" of the components api and web in ns.
func newStream(t testing.TB, ns string, mutate func(s *v1alpha1.ReleaseStream)) *v1alpha1.ReleaseStream {
	t.Helper()
	s := &v1alpha1.ReleaseStream{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "nightly"},
		Spec: v1alpha1.ReleaseStreamSpec{
			TagPrefix:         "1.0.0-0.nightly",
			PayloadRepository: repo(ns, "release"),
			Components: []v1alpha1.ComponentSource{
				{Name: "api", Image: repo(ns, "api") + ":latest"},
				{Name: "web", Image: repo(ns, "web") + ":latest"},
			},
			MaxUnreadyReleases: 1,
			PublishTags:        []string{"latest"},
		},
	}
	if mutate != nil {
		mutate(s)
	}
	if err := env.Client.Create(context.Background(), s); err != nil {
		t.Fatalf("creating stream: %v", err)
	}
	return s
}

func payloads(g Gomega, ns string) []v1alpha1.ReleasePayload {
	var list v1alpha1.ReleasePayloadList
	g.Expect(env.Client.List(context.Background(), &list, client.InNamespace(ns))).To(Succeed())
	stream.NewestFirst(list.Items)
	return list.Items
}

// waitNewest waits until the namespace's newest payload is the count-th and passes check.
func waitNewest(t testing.TB, ns string, count int, check func(g Gomega, p *v1alpha1.ReleasePayload)) v1alpha1.ReleasePayload {
	t.Helper()
	var newest v1alpha1.ReleasePayload
	NewWithT(t).Eventually(func(g Gomega) {
		list := payloads(g, ns)
		g.Expect(list).To(HaveLen(count))
		newest = list[0]
		check(g, &newest)
	}).WithTimeout(waitTimeout).WithPolling(200 * time.Millisecond).Should(Succeed())
	return newest
}

func phase(want v1alpha1.PayloadPhase) func(g Gomega, p *v1alpha1.ReleasePayload) {
	return func(g Gomega, p *v1alpha1.ReleasePayload) {
		g.Expect(p.Status.Phase).To(Equal(want), "conditions: %+v", p.Status.Conditions)
	}
}

func digestOf(t testing.TB, ref string) string {
	t.Helper()
	resolved, err := registryclient.New().Resolve(context.Background(), ref)
	if err != nil {
		if registryclient.IsNotFound(err) {
			return ""
		}
		t.Fatal(err)
	}
	return resolved
}

// jobsOf lists the Jobs of a payload.
func jobsOf(g Gomega, ns, tag string) []batchv1.Job {
	var list batchv1.JobList
	g.Expect(env.Client.List(context.Background(), &list, client.InNamespace(ns), client.MatchingLabels{v1alpha1.LabelPayload: tag})).To(Succeed())
	return list.Items
}

func logOf(t testing.TB, ns, name string) string {
	t.Helper()
	data, err := os.ReadFile(filepath.Join(workDir, "logs", ns, name+".log"))
	if err != nil {
		t.Fatal(err)
	}
	return string(data)
}

func writeFile(name string) error {
	return os.WriteFile(filepath.Join(workDir, name), nil, 0o644)
}
