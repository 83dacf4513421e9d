//go:build !unit

package pipeline_test

import (
	"fmt"
	"os"
	"testing"

	"go.uber.org/zap/zapcore"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/log/zap"

	"github.com/release-controller/release-controller/internal/testenv"
)

// Two real API servers: the management cluster (mgmt: CRDs, pipelines, the controller) and a
// leaf cluster (leaf: only apps), reached through a kubeconfig Secret.
var (
	mgmt       *testenv.Env
	leaf       *testenv.Leaf
	leafClient client.Client
	// leafKubeconfig is the leaf's kubeconfig (admin), for the Secret.
	leafKubeconfig []byte
)

func TestMain(m *testing.M) {
	ctrl.SetLogger(zap.New(zap.WriteTo(os.Stderr), zap.Level(zapcore.ErrorLevel)))
	code, err := run(m)
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	os.Exit(code)
}

func run(m *testing.M) (int, error) {
	var err error
	if mgmt, err = testenv.Start(); err != nil {
		return 0, err
	}
	defer func() { _ = mgmt.Stop() }()

	// The leaf can be stopped and started again behind the same address and CA (the test
	// of an unreachable leaf).
	if leaf, err = testenv.StartLeaf(); err != nil {
		return 0, err
	}
	defer func() { _ = leaf.Stop() }()
	leafClient, leafKubeconfig = leaf.Client, leaf.Kubeconfig
	return m.Run(), nil
}
