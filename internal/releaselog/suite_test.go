//go:build !unit

package releaselog_test

import (
	"context"
	"fmt"
	"os"
	"testing"
	"time"

	. "github.com/onsi/gomega"
	"go.uber.org/zap/zapcore"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/util/retry"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/log/zap"

	"github.com/release-controller/release-controller/api/v1alpha1"
	"github.com/release-controller/release-controller/config/crd"
	"github.com/release-controller/release-controller/internal/manager"
	"github.com/release-controller/release-controller/internal/releaselog"
	"github.com/release-controller/release-controller/internal/testenv"
)

// env is the API server shared by the package's tests. Each test starts its own manager with
// the release log in the test's namespace.
var env *testenv.Env

// waitTimeout bounds every wait; it is a deadline for a broken test, not a performance assertion.
const waitTimeout = 60 * time.Second

func TestMain(m *testing.M) {
	ctrl.SetLogger(zap.New(zap.WriteTo(os.Stderr), zap.Level(zapcore.ErrorLevel)))
	// The tests run the log on fake clocks, on days far from the API server's now, which the
	// release log's admission policy refuses (api/v1alpha1's tests check it): here the
	// controllers meet the objects that predate the policy or bypassed it.
	testenv.MainWith(m, testenv.Options{SkipPolicies: []string{crd.ReleaseLogPolicy}}, &env, nil)
}

// logControllers is one running manager with every controller, the release log's included.
type logControllers struct {
	Store  *releaselog.Store
	Writer *releaselog.Writer
	// Client and APIReader are the manager's, for more writers.
	Client    client.Client
	APIReader client.Reader
	stop      func()
}

// start runs every controller against the test API server, restricted to ns, which also holds
// the release log, until the test ends or Stop is called.
func start(t *testing.T, ns string, logOpts releaselog.Options) *logControllers {
	t.Helper()
	logOpts.Store = releaselog.NewStore()
	opts := manager.Options{
		MetricsAddr: "0", ProbeAddr: "0", Namespace: ns, ReleaseLog: logOpts,
		SkipControllerNameValidation: true,
	}
	mgr, err := manager.New(env.Config, opts)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	if err := manager.AddControllers(ctx, mgr, opts); err != nil {
		cancel()
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() { done <- mgr.Start(ctx) }()
	c := &logControllers{
		Store:     logOpts.Store,
		Writer:    releaselog.NewWriter(mgr.GetClient(), mgr.GetAPIReader(), logOpts.WithDefaults(ns)),
		Client:    mgr.GetClient(),
		APIReader: mgr.GetAPIReader(),
	}
	stopped := false
	c.stop = func() {
		if stopped {
			return
		}
		stopped = true
		cancel()
		if err := <-done; err != nil {
			t.Errorf("manager stopped with: %v", err)
		}
	}
	t.Cleanup(c.stop)
	return c
}

// Stop stops the manager and waits until it stopped.
func (c *logControllers) Stop() { c.stop() }

func apiEntry(version, date string) v1alpha1.ReleaseLogEntry {
	return v1alpha1.ReleaseLogEntry{Type: "release", Version: version, Origin: "test", Date: metav1.NewTime(at(date))}
}

func createLog(t *testing.T, ns, name string, entries ...v1alpha1.ReleaseLogEntry) *v1alpha1.ReleaseLog {
	t.Helper()
	l := &v1alpha1.ReleaseLog{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name}, Spec: v1alpha1.ReleaseLogSpec{Entries: entries}}
	if err := env.Client.Create(context.Background(), l); err != nil {
		t.Fatalf("creating %s: %v", name, err)
	}
	return l
}

// getLog reads a day from the API server.
func getLog(ns, name string) (*v1alpha1.ReleaseLog, error) {
	var l v1alpha1.ReleaseLog
	err := env.Client.Get(context.Background(), types.NamespacedName{Namespace: ns, Name: name}, &l)
	return &l, err
}

// updateLog changes the live object as a person would with kubectl edit: read, change,
// write, again when the controller wrote in between.
func updateLog(l *v1alpha1.ReleaseLog, mutate func(*v1alpha1.ReleaseLog)) error {
	return retry.RetryOnConflict(retry.DefaultRetry, func() error {
		if err := env.Client.Get(context.Background(), client.ObjectKeyFromObject(l), l); err != nil {
			return err
		}
		mutate(l)
		return env.Client.Update(context.Background(), l)
	})
}

// waitLog waits until check passes on the day's object.
func waitLog(t *testing.T, ns, name string, check func(g Gomega, l *v1alpha1.ReleaseLog)) *v1alpha1.ReleaseLog {
	t.Helper()
	var l *v1alpha1.ReleaseLog
	NewWithT(t).Eventually(func(g Gomega) {
		var err error
		l, err = getLog(ns, name)
		g.Expect(err).NotTo(HaveOccurred())
		check(g, l)
	}).WithTimeout(waitTimeout).WithPolling(50 * time.Millisecond).Should(Succeed())
	return l
}

// waitGone waits until the day's object is deleted.
func waitGone(t *testing.T, ns, name string) {
	t.Helper()
	NewWithT(t).Eventually(func() error {
		_, err := getLog(ns, name)
		if apierrors.IsNotFound(err) {
			return nil
		}
		return fmt.Errorf("%s still exists (err %w)", name, err)
	}).WithTimeout(waitTimeout).WithPolling(50 * time.Millisecond).Should(Succeed())
}

// eventually waits until check passes.
func eventually(t *testing.T, check func(g Gomega)) {
	t.Helper()
	NewWithT(t).Eventually(check).WithTimeout(waitTimeout).WithPolling(50 * time.Millisecond).Should(Succeed())
}
