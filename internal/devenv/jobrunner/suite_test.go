//go:build !unit

package jobrunner_test

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	. "github.com/onsi/gomega"
	"go.uber.org/zap/zapcore"
	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/ptr"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/config"
	"sigs.k8s.io/controller-runtime/pkg/log/zap"
	metricsserver "sigs.k8s.io/controller-runtime/pkg/metrics/server"

	prowv1 "github.com/release-controller/release-controller/api/prow/v1"
	"github.com/release-controller/release-controller/internal/devenv/jobrunner"
	"github.com/release-controller/release-controller/internal/manager"
	"github.com/release-controller/release-controller/internal/testenv"
)

// env is the API server shared by the package's tests; each test runs its own job runner,
// watching only the test's namespace, so that a test can stop and restart it.
var env *testenv.Env

// waitTimeout bounds every wait; it is a deadline for a broken test, not a performance assertion.
const waitTimeout = 60 * time.Second

func TestMain(m *testing.M) {
	ctrl.SetLogger(zap.New(zap.WriteTo(os.Stderr), zap.Level(zapcore.ErrorLevel)))
	testenv.Main(m, &env, nil)
}

// startRunner runs a manager with a job runner for ns until the returned stop is called, or
// the test ends. An empty opts.LogDir gets a temporary directory.
func startRunner(t *testing.T, ns string, opts jobrunner.Options) (*jobrunner.Runner, func()) {
	t.Helper()
	if opts.LogDir == "" {
		opts.LogDir = t.TempDir()
	}
	mgr, err := ctrl.NewManager(env.Config, ctrl.Options{
		Scheme:  manager.NewScheme(),
		Cache:   cache.Options{DefaultNamespaces: map[string]cache.Config{ns: {}}},
		Metrics: metricsserver.Options{BindAddress: "0"},
		// A restarted runner registers its controllers again in the same process.
		Controller: config.Controller{SkipNameValidation: ptr.To(true)},
	})
	if err != nil {
		t.Fatalf("creating manager: %v", err)
	}
	runner, err := jobrunner.New(opts)
	if err != nil {
		t.Fatalf("creating runner: %v", err)
	}
	if err := runner.SetupWithManager(mgr); err != nil {
		t.Fatalf("setting up runner: %v", err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- mgr.Start(ctx) }()
	var once sync.Once
	stop := func() {
		once.Do(func() {
			cancel()
			if err := <-done; err != nil {
				t.Errorf("manager stopped with: %v", err)
			}
		})
	}
	t.Cleanup(stop)
	return runner, stop
}

// newJob is a Job whose container runs script with sh.
func newJob(ns, name, script string, env ...corev1.EnvVar) *batchv1.Job {
	return &batchv1.Job{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name},
		Spec: batchv1.JobSpec{Template: corev1.PodTemplateSpec{Spec: corev1.PodSpec{
			RestartPolicy: corev1.RestartPolicyNever,
			Containers: []corev1.Container{{
				Name: "test", Image: "registry.example.com/tests:latest",
				Command: []string{"sh", "-c", script}, Env: env,
			}},
		}}},
	}
}

func create(t *testing.T, obj client.Object) {
	t.Helper()
	if err := env.Client.Create(context.Background(), obj); err != nil {
		t.Fatalf("creating %s: %v", obj.GetName(), err)
	}
}

// waitJob waits until check passes on the Job, or fails the test with check's last error.
func waitJob(t *testing.T, ns, name string, check func(g Gomega, job *batchv1.Job)) *batchv1.Job {
	t.Helper()
	var job batchv1.Job
	NewWithT(t).Eventually(func(g Gomega) {
		g.Expect(env.Client.Get(context.Background(), types.NamespacedName{Namespace: ns, Name: name}, &job)).To(Succeed())
		check(g, &job)
	}).WithTimeout(waitTimeout).WithPolling(50 * time.Millisecond).Should(Succeed())
	return &job
}

// waitProwJob waits until the ProwJob's state is terminal.
func waitProwJob(t *testing.T, ns, name string) *prowv1.ProwJob {
	t.Helper()
	var pj prowv1.ProwJob
	NewWithT(t).Eventually(func(g Gomega) {
		g.Expect(env.Client.Get(context.Background(), types.NamespacedName{Namespace: ns, Name: name}, &pj)).To(Succeed())
		g.Expect(pj.Status.State.IsTerminal()).To(BeTrue(), "state %q", pj.Status.State)
	}).WithTimeout(waitTimeout).WithPolling(50 * time.Millisecond).Should(Succeed())
	return &pj
}

func condition(job *batchv1.Job, t batchv1.JobConditionType) batchv1.JobCondition {
	for _, c := range job.Status.Conditions {
		if c.Type == t {
			return c
		}
	}
	return batchv1.JobCondition{Type: t}
}

func finished(g Gomega, job *batchv1.Job) {
	g.Expect(condition(job, batchv1.JobComplete).Status == corev1.ConditionTrue ||
		condition(job, batchv1.JobFailed).Status == corev1.ConditionTrue).To(BeTrue(), "conditions %+v", job.Status.Conditions)
}

func readFile(t *testing.T, path string) string {
	t.Helper()
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("reading %s: %v", path, err)
	}
	return string(data)
}

// waitPid waits for the pid a test command writes to path.
func waitPid(t *testing.T, path string) int {
	t.Helper()
	var pid int
	NewWithT(t).Eventually(func() error {
		data, err := os.ReadFile(path)
		if err != nil {
			return err
		}
		pid, err = strconv.Atoi(strings.TrimSpace(string(data)))
		return err
	}).WithTimeout(waitTimeout).WithPolling(50 * time.Millisecond).Should(Succeed())
	return pid
}

// waitGone waits until process pid has ended. A killed process whose parent died too may stay a
// zombie until init reaps it: that counts as ended.
func waitGone(t *testing.T, pid int) {
	t.Helper()
	NewWithT(t).Eventually(func() bool {
		if err := syscall.Kill(pid, 0); errors.Is(err, syscall.ESRCH) {
			return true
		}
		stat, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
		if err != nil {
			return errors.Is(err, fs.ErrNotExist)
		}
		// The state follows the command name, which is in parentheses.
		i := bytes.LastIndexByte(stat, ')')
		return i > 0 && i+2 < len(stat) && stat[i+2] == 'Z'
	}).WithTimeout(waitTimeout).WithPolling(50*time.Millisecond).Should(BeTrue(), "process %d still runs", pid)
}
