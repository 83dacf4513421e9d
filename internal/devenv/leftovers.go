package devenv

import (
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"syscall"
	"time"

	"github.com/release-controller/release-controller/internal/childproc"
)

// controlPlaneFile records the kube-apiserver and etcd a running environment started, so that
// the next start can stop them when the environment was killed without stopping them (SIGKILL,
// a crash): they would hold its ports and its etcd data.
const controlPlaneFile = "control-plane.json"

// recordControlPlane writes this process's kube-apiserver and etcd children to dataDir.
func recordControlPlane(dataDir string) error {
	var procs []childproc.Process
	for _, name := range []string{"kube-apiserver", "etcd"} {
		children, err := childproc.Children(os.Getpid(), name)
		if err != nil {
			return err
		}
		procs = append(procs, children...)
	}
	data, err := json.Marshal(procs)
	if err != nil {
		return err
	}
	return os.WriteFile(filepath.Join(dataDir, controlPlaneFile), data, 0o600)
}

// forgetControlPlane removes the record once the processes were stopped.
func forgetControlPlane(dataDir string) error {
	err := os.Remove(filepath.Join(dataDir, controlPlaneFile))
	if errors.Is(err, os.ErrNotExist) {
		return nil
	}
	return err
}

// stopLeftovers kills the recorded processes of an earlier start that still run (the same pid
// and start time: never a process that reused the pid) and waits until they are gone. It
// returns how many it stopped.
func stopLeftovers(dataDir string) (int, error) {
	data, err := os.ReadFile(filepath.Join(dataDir, controlPlaneFile))
	if errors.Is(err, os.ErrNotExist) {
		return 0, nil
	}
	if err != nil {
		return 0, err
	}
	var procs []childproc.Process
	if err := json.Unmarshal(data, &procs); err != nil {
		return 0, fmt.Errorf("reading %s: %w", controlPlaneFile, err)
	}
	stopped := 0
	for _, p := range procs {
		if !childproc.Alive(p) {
			continue
		}
		if err := syscall.Kill(p.Pid, syscall.SIGKILL); err != nil && !errors.Is(err, syscall.ESRCH) {
			return stopped, fmt.Errorf("stopping the %s (pid %d) an earlier start left running: %w", filepath.Base(p.Argv[0]), p.Pid, err)
		}
		for deadline := time.Now().Add(10 * time.Second); childproc.Alive(p); time.Sleep(20 * time.Millisecond) {
			if time.Now().After(deadline) {
				// An orphan is reaped by init; a zombie holds no port, but say so.
				return stopped, fmt.Errorf("the %s (pid %d) an earlier start left running does not exit", filepath.Base(p.Argv[0]), p.Pid)
			}
		}
		stopped++
	}
	return stopped, forgetControlPlane(dataDir)
}
