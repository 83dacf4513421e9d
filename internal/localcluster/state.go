package localcluster

import (
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"time"
)

// StateFile is the machine-wide record of the cluster running on this machine: which folder
// it lives in, the sysctls as they were before it started, and which folders at fixed paths
// it found already there. It is written before the cluster changes anything, so that the next
// Up, from whatever folder, can remove what a crashed cluster left.
var StateFile = "/var/lib/release-controller-cluster/state.json"

// fixedPaths are folders at fixed paths that the cluster's components create whatever their
// flags say: the kubelet's device-plugin socket (/var/lib/kubelet/device-plugins/kubelet.sock),
// containerd's shim sockets (/run/containerd/s), libcni's cache (/var/lib/cni) and the
// kubelet's links to container logs (/var/log/containers).
var fixedPaths = []string{"/var/lib/kubelet", "/run/containerd", "/var/lib/cni", "/var/log/containers"}

// state is what StateFile holds.
type state struct {
	Dir     string            `json:"dir"`
	Started time.Time         `json:"started"`
	Sysctls map[string]string `json:"sysctls"`
	// Preexisting names the fixedPaths that were there before the cluster started; the
	// others are removed with it.
	Preexisting map[string]bool `json:"preexisting"`
	// NftTables are the nftables tables there were ("ip filter", ...): iptables-nft makes its
	// tables when the kubelet first writes a rule, and Down deletes those it made, once empty.
	NftTables []string `json:"nftTables"`
}

func readState() (*state, error) {
	data, err := os.ReadFile(StateFile)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	var s state
	if err := json.Unmarshal(data, &s); err != nil {
		return nil, fmt.Errorf("%s: %w", StateFile, err)
	}
	return &s, nil
}

func writeState(s *state) error {
	data, err := json.MarshalIndent(s, "", "  ")
	if err != nil {
		return err
	}
	if err := os.MkdirAll(filepath.Dir(StateFile), 0o755); err != nil {
		return err
	}
	tmp := StateFile + ".tmp"
	if err := os.WriteFile(tmp, data, 0o644); err != nil {
		return err
	}
	return os.Rename(tmp, StateFile)
}

func removeState() error {
	if err := os.Remove(StateFile); err != nil && !errors.Is(err, fs.ErrNotExist) {
		return err
	}
	if err := os.Remove(filepath.Dir(StateFile)); err != nil && !errors.Is(err, fs.ErrNotExist) {
		return nil // something else is in there: leave the folder
	}
	return nil
}

// newState records the host as it is now, for the cluster about to start in dir.
func newState(dir string) *state {
	s := &state{Dir: dir, Started: time.Now().UTC(), Sysctls: readSysctls(), Preexisting: map[string]bool{}, NftTables: nftTables()}
	for _, p := range fixedPaths {
		if _, err := os.Lstat(p); err == nil {
			s.Preexisting[p] = true
		}
	}
	return s
}
