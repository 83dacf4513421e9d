//go:build !unit

package soak

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/release-controller/release-controller/internal/childproc"
	"github.com/release-controller/release-controller/internal/testbinary"
)

// TestDevStartsAfterItWasKilled: `release-controller dev` killed with SIGKILL leaves its
// kube-apiserver and etcd running, on the environment's ports and etcd data; the next start
// stops them (by the record in the data folder) and comes up.
func TestDevStartsAfterItWasKilled(t *testing.T) {
	dir, binary, assets := buildDev(t)
	dataDir := filepath.Join(dir, "data")
	start := func(name string) (*testbinary.Process, string) {
		t.Helper()
		listen := freeAddr(t)
		dev, err := testbinary.Start(binary, filepath.Join(dir, name+".log"), "dev", "--data-dir", dataDir,
			"--listen", listen, "--control-plane-bin", assets, "--demo=false")
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { dev.Stop(time.Minute) })
		waitServing(t, dev, listen)
		return dev, listen
	}
	first, _ := start("first")
	data, err := os.ReadFile(filepath.Join(dataDir, "control-plane.json"))
	if err != nil {
		t.Fatal(err)
	}
	var recorded []childproc.Process
	if err := json.Unmarshal(data, &recorded); err != nil || len(recorded) != 2 {
		t.Fatalf("recorded control plane %s (%v), want kube-apiserver and etcd", data, err)
	}
	if err := first.Kill(); err != nil {
		t.Fatal(err)
	}
	<-first.Exited()
	left := 0
	for _, p := range recorded {
		if childproc.Alive(p) {
			left++
		}
	}
	t.Logf("%d of the killed dev's control-plane processes still run", left)

	start("second")
	for _, p := range recorded {
		if childproc.Alive(p) {
			t.Errorf("%s (pid %d) of the killed dev still runs", p.Argv[0], p.Pid)
		}
	}
}

// waitServing waits until dev's web UI answers.
func waitServing(t testing.TB, dev *testbinary.Process, listen string) {
	t.Helper()
	deadline := time.Now().Add(5 * time.Minute)
	for {
		if !dev.Running() {
			t.Fatalf("dev exited: %s; the end of its log:\n%s", dev.ExitStatus(), dev.Tail(30))
		}
		if _, err := testbinary.Get(context.Background(), "http://"+listen+"/"); err == nil {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("dev does not serve after 5 minutes; the end of its log:\n%s", dev.Tail(30))
		}
		time.Sleep(200 * time.Millisecond)
	}
}
