package devenv

import (
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"syscall"
)

// state is what must stay the same across restarts of one environment: the ports, so the
// kubeconfig, the registry address in image references and the URLs keep working.
type state struct {
	APIServerPort int `json:"apiServerPort"`
	EtcdPort      int `json:"etcdPort"`
	EtcdPeerPort  int `json:"etcdPeerPort"`
	RegistryPort  int `json:"registryPort"`
}

const stateFile = "state.json"

// RegistryAddr is the embedded registry's address.
func (s *state) RegistryAddr() string {
	return fmt.Sprintf("127.0.0.1:%d", s.RegistryPort)
}

// loadState reads the environment's state, choosing free ports on the first start.
func loadState(dataDir string) (*state, error) {
	path := filepath.Join(dataDir, stateFile)
	st := &state{}
	data, err := os.ReadFile(path)
	switch {
	case err == nil:
		if err := json.Unmarshal(data, st); err != nil {
			return nil, fmt.Errorf("reading %s: %w", path, err)
		}
	case errors.Is(err, os.ErrNotExist):
	default:
		return nil, err
	}
	for _, port := range []*int{&st.APIServerPort, &st.EtcdPort, &st.EtcdPeerPort, &st.RegistryPort} {
		if *port == 0 {
			if *port, err = freePort(); err != nil {
				return nil, err
			}
		}
	}
	data, err = json.MarshalIndent(st, "", "  ")
	if err != nil {
		return nil, err
	}
	return st, os.WriteFile(path, data, 0o600)
}

// ReadRegistryAddr returns the registry address of the environment in dataDir, for
// commands that talk to a running environment.
func ReadRegistryAddr(dataDir string) (string, error) {
	data, err := os.ReadFile(filepath.Join(dataDir, stateFile))
	if err != nil {
		return "", fmt.Errorf("no environment in %s (start one with `release-controller dev`): %w", dataDir, err)
	}
	st := &state{}
	if err := json.Unmarshal(data, st); err != nil {
		return "", err
	}
	return st.RegistryAddr(), nil
}

func freePort() (int, error) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return 0, err
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port, nil
}

// lockDataDir takes an exclusive lock on the data directory for as long as the environment
// runs, so a second `release-controller dev` on it stops with a clear error.
func lockDataDir(dataDir string) (unlock func(), err error) {
	f, err := os.OpenFile(filepath.Join(dataDir, "lock"), os.O_CREATE|os.O_RDWR, 0o600)
	if err != nil {
		return nil, err
	}
	if err := syscall.Flock(int(f.Fd()), syscall.LOCK_EX|syscall.LOCK_NB); err != nil {
		f.Close()
		return nil, fmt.Errorf("another release-controller dev is running on %s (stop it first, or use another --data-dir)", dataDir)
	}
	return func() { f.Close() }, nil
}

// checkPorts fails when a port the environment needs is taken by another program.
func (s *state) checkPorts() error {
	for name, port := range map[string]int{"kube-apiserver": s.APIServerPort, "etcd": s.EtcdPort, "etcd peer": s.EtcdPeerPort, "registry": s.RegistryPort} {
		l, err := net.Listen("tcp", fmt.Sprintf("127.0.0.1:%d", port))
		if err != nil {
			return fmt.Errorf("port %d, which this environment's %s uses, is taken by another program: stop it, or delete %s to choose new ports", port, name, stateFile)
		}
		l.Close()
	}
	return nil
}
