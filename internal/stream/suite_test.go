//go:build !unit

package stream_test

import (
	"context"
	"fmt"
	"os"
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
	eventsv1 "k8s.io/api/events/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/log/zap"
	"sigs.k8s.io/controller-runtime/pkg/metrics"

	"github.com/release-controller/release-controller/api/v1alpha1"
	"github.com/release-controller/release-controller/internal/devenv/jobstatus"
	"github.com/release-controller/release-controller/internal/devenv/registry"
	"github.com/release-controller/release-controller/internal/jobcontract"
	"github.com/release-controller/release-controller/internal/manager"
	"github.com/release-controller/release-controller/internal/registryclient"
	"github.com/release-controller/release-controller/internal/stream"
	"github.com/release-controller/release-controller/internal/testenv"
	"github.com/release-controller/release-controller/internal/verify"
)

var (
	env *testenv.Env
	reg *registry.Server
	// leaf is a second API server, a build farm that verifications name (clusters_test.go).
	leaf *testenv.Leaf
)

const waitTimeout = 60 * time.Second

func TestMain(m *testing.M) {
	ctrl.SetLogger(zap.New(zap.WriteTo(os.Stderr), zap.Level(zapcore.ErrorLevel)))
	testenv.Main(m, &env, func(e *testenv.Env) (func(), error) {
		dir, err := os.MkdirTemp("", "registry-")
		if err != nil {
			return nil, err
		}
		ctx, cancel := context.WithCancel(context.Background())
		if reg, err = registry.Start(ctx, registry.Options{Dir: dir}); err != nil {
			cancel()
			return nil, err
		}
		if leaf, err = testenv.StartLeaf(); err != nil {
			cancel()
			_ = reg.Close()
			return nil, err
		}
		opts := manager.Options{
			MetricsAddr: "0", ProbeAddr: "0",
			ClusterHealthInterval: 500 * time.Millisecond,
			ImportInterval:        500 * time.Millisecond,
			RetryBackoff:          verify.Backoff{Base: 200 * time.Millisecond, Cap: time.Second},
			BuildImage:            "release-controller:test",
		}
		stopControllers, err := e.StartControllers(opts)
		if err != nil {
			cancel()
			_ = leaf.Stop()
			return nil, err
		}
		return func() {
			stopControllers()
			_ = leaf.Stop()
			cancel()
			_ = reg.Close()
			_ = os.RemoveAll(dir)
		}, nil
	})
}

// pushImage pushes a new random image with the given labels to ref and returns it by digest.
func pushImage(t testing.TB, ref string, labels map[string]string) string {
	t.Helper()
	img, err := random.Image(256, 1)
	if err != nil {
		t.Fatal(err)
	}
	cfg, err := img.ConfigFile()
	if err != nil {
		t.Fatal(err)
	}
	cfg = cfg.DeepCopy()
	cfg.Config.Labels = labels
	if img, err = mutate.ConfigFile(img, cfg); err != nil {
		t.Fatal(err)
	}
	r, err := name.ParseReference(ref)
	if err != nil {
		t.Fatal(err)
	}
	if err := remote.Write(r, img); err != nil {
		t.Fatalf("pushing %s: %v", ref, err)
	}
	digest, err := img.Digest()
	if err != nil {
		t.Fatal(err)
	}
	return r.Context().Digest(digest.String()).String()
}

// digestOf returns the digest ref a tag points at in the registry, or "" when it does not exist.
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

func repo(ns, image string) string { return fmt.Sprintf("%s/%s/%s", reg.Addr(), ns, image) }

func jobVerification(name string) v1alpha1.Verification {
	return v1alpha1.Verification{Name: name, Job: &v1alpha1.JobBackend{Template: batchv1.JobTemplateSpec{Spec: batchv1.JobSpec{
		Template: corev1.PodTemplateSpec{Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "test", Image: "tests", Command: []string{"true"}}}}},
	}}}}
}

// newStream creates a stream of the components (pushed already) in ns.
func newStream(t testing.TB, ns string, mutate func(s *v1alpha1.ReleaseStream), components ...string) *v1alpha1.ReleaseStream {
	t.Helper()
	s := &v1alpha1.ReleaseStream{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "nightly"},
		Spec: v1alpha1.ReleaseStreamSpec{
			TagPrefix:          "4.15.0-0.nightly",
			PayloadRepository:  repo(ns, "release"),
			MaxUnreadyReleases: 1,
		},
	}
	for _, c := range components {
		s.Spec.Components = append(s.Spec.Components, v1alpha1.ComponentSource{Name: c, Image: repo(ns, c) + ":latest"})
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

// waitPayloads waits until the namespace has n payloads and returns them, newest first.
func waitPayloads(t testing.TB, ns string, n int) []v1alpha1.ReleasePayload {
	t.Helper()
	var got []v1alpha1.ReleasePayload
	NewWithT(t).Eventually(func(g Gomega) {
		got = payloads(g, ns)
		g.Expect(got).To(HaveLen(n))
	}).WithTimeout(waitTimeout).Should(Succeed())
	return got
}

func waitPayload(t testing.TB, ns, name string, check func(g Gomega, p *v1alpha1.ReleasePayload)) *v1alpha1.ReleasePayload {
	t.Helper()
	p := &v1alpha1.ReleasePayload{}
	NewWithT(t).Eventually(func(g Gomega) {
		g.Expect(env.Client.Get(context.Background(), client.ObjectKey{Namespace: ns, Name: name}, p)).To(Succeed())
		check(g, p)
	}).WithTimeout(waitTimeout).Should(Succeed())
	return p
}

func waitStream(t testing.TB, s *v1alpha1.ReleaseStream, check func(g Gomega, s *v1alpha1.ReleaseStream)) {
	t.Helper()
	NewWithT(t).Eventually(func(g Gomega) {
		g.Expect(env.Client.Get(context.Background(), client.ObjectKeyFromObject(s), s)).To(Succeed())
		check(g, s)
	}).WithTimeout(waitTimeout).Should(Succeed())
}

func getJob(g Gomega, ns, name string) *batchv1.Job {
	job := &batchv1.Job{}
	g.Expect(env.Client.Get(context.Background(), client.ObjectKey{Namespace: ns, Name: name}, job)).To(Succeed())
	return job
}

// waitJob waits for the controller to create the Job.
func waitJob(t testing.TB, ns, name string) *batchv1.Job {
	t.Helper()
	var job *batchv1.Job
	NewWithT(t).Eventually(func(g Gomega) { job = getJob(g, ns, name) }).WithTimeout(waitTimeout).Should(Succeed())
	return job
}

// finish sets a job's status as the Kubernetes job controller would when its pod ends.
func finish(t testing.TB, job *batchv1.Job, succeeded bool) {
	t.Helper()
	finishOn(t, env.Client, job, succeeded)
}

// finishOn is finish for a job on the cluster c reaches.
func finishOn(t testing.TB, c client.Client, job *batchv1.Job, succeeded bool) {
	t.Helper()
	now := metav1.NewTime(time.Now().Truncate(time.Second))
	NewWithT(t).Eventually(func() error {
		if err := c.Get(context.Background(), client.ObjectKeyFromObject(job), job); err != nil {
			return err
		}
		if succeeded {
			jobstatus.Succeeded(job, now)
		} else {
			jobstatus.Failed(job, now, 1, "", "")
		}
		return c.Status().Update(context.Background(), job)
	}).WithTimeout(waitTimeout).Should(Succeed())
}

// build plays the creation job: it pushes an image for the payload and lets the job succeed.
func build(t testing.TB, p *v1alpha1.ReleasePayload) string {
	t.Helper()
	image := pushImage(t, p.Spec.PayloadCreationConfig.Repository+":"+p.Name, map[string]string{"io.release-controller.release": p.Name})
	finish(t, waitJob(t, p.Namespace, jobcontract.CreationJobName(p.Name)), true)
	waitPayload(t, p.Namespace, p.Name, func(g Gomega, p *v1alpha1.ReleasePayload) {
		g.Expect(p.Status.PayloadImage).To(Equal(image))
	})
	return image
}

func envOf(job *batchv1.Job) map[string]string {
	env := map[string]string{}
	for _, e := range job.Spec.Template.Spec.Containers[0].Env {
		env[e.Name] = e.Value
	}
	return env
}

// metricValue sums the samples of the metric family name in controller-runtime's registry
// (where the controllers of this process count) whose labels include want.
func metricValue(t testing.TB, name string, want map[string]string) float64 {
	t.Helper()
	families, err := metrics.Registry.Gather()
	if err != nil {
		t.Fatalf("gathering metrics: %v", err)
	}
	var sum float64
	for _, f := range families {
		if f.GetName() != name {
			continue
		}
	samples:
		for _, m := range f.GetMetric() {
			labels := map[string]string{}
			for _, l := range m.GetLabel() {
				labels[l.GetName()] = l.GetValue()
			}
			for k, v := range want {
				if labels[k] != v {
					continue samples
				}
			}
			switch {
			case m.GetCounter() != nil:
				sum += m.GetCounter().GetValue()
			case m.GetGauge() != nil:
				sum += m.GetGauge().GetValue()
			case m.GetHistogram() != nil:
				sum += float64(m.GetHistogram().GetSampleCount())
			}
		}
	}
	return sum
}

// eventsOf returns the reasons of the Events recorded on the object kind/name in ns.
func eventsOf(g Gomega, ns, kind, name string) []string {
	var list eventsv1.EventList
	g.Expect(env.Client.List(context.Background(), &list, client.InNamespace(ns))).To(Succeed())
	var reasons []string
	for _, e := range list.Items {
		if e.Regarding.Kind == kind && e.Regarding.Name == name {
			reasons = append(reasons, e.Reason)
		}
	}
	return reasons
}
