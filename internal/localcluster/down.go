package localcluster

import (
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"time"
)

// Down stops the cluster that StateFile records, wherever its folder is, and removes what it
// made on the host: processes, pods' containers, mounts, cgroups, the bridge, iptables rules,
// folders at fixed paths that were not there before, and the state file; the sysctls get
// their earlier values back. The cluster's folder stays (its logs), apart from its mounts.
// With no state file, Down does nothing. Every step runs even when one before failed.
func Down(log io.Writer) error {
	s, err := readState()
	if err != nil {
		return err
	}
	if s == nil {
		fmt.Fprintln(log, "==> no local cluster recorded in", StateFile)
		return nil
	}
	start := time.Now()
	say := func(format string, args ...any) {
		fmt.Fprintf(log, "==> [%5.1fs] %s\n", time.Since(start).Seconds(), fmt.Sprintf(format, args...))
	}
	var errs []error
	step := func(err error) {
		if err != nil {
			fmt.Fprintln(log, "    ", err)
			errs = append(errs, err)
		}
	}

	procs, err := processesOf(s.Dir)
	step(err)
	say("stopping the kubelet, then the pods' containers")
	step(stopProcesses(log, byName(procs, "kubelet"), 10*time.Second))
	step(killPods())
	say("stopping %d processes of %s", len(running(procs)), s.Dir)
	// The API server's clients first, then the API server, so that it has no request to
	// drain; etcd last.
	for _, group := range [][]string{
		{"kube-proxy", "kube-scheduler", "kube-controller-manager", "containerd", "containerd-shim-runc-v2", "cluster"},
		{"kube-apiserver"},
	} {
		var some []process
		for _, name := range group {
			some = append(some, byName(procs, name)...)
		}
		step(stopProcesses(log, some, 10*time.Second))
	}
	step(stopProcesses(log, procs, 10*time.Second))
	// Shims started while the first list was taken, or that a crashed run left.
	if more, err := processesOf(s.Dir); err == nil && len(more) > 0 {
		step(stopProcesses(log, more, 5*time.Second))
	}

	say("unmounting what is mounted under %s", s.Dir)
	step(unmountAll(s.Dir))
	say("removing cgroup %s", CgroupRoot)
	step(removeCgroups())
	say("removing the bridge %s and the iptables rules and KUBE-* chains", Bridge)
	step(removeNetwork())
	step(removeIptables())
	step(removeEmptyIptablesTables(s.NftTables))
	forgetConnections()
	say("restoring sysctls")
	step(restoreSysctls(s.Sysctls))
	for _, path := range fixedPaths {
		if s.Preexisting[path] {
			continue
		}
		step(unmountAll(path))
		if err := os.RemoveAll(path); err != nil && !errors.Is(err, fs.ErrNotExist) {
			step(err)
		}
	}
	if s.Preexisting["/var/log/containers"] {
		step(removeLinksInto("/var/log/containers", s.Dir))
	}
	if len(errs) > 0 {
		return fmt.Errorf("the cluster in %s was not removed entirely (%s kept): %w", s.Dir, StateFile, errors.Join(errs...))
	}
	say("cluster in %s removed", s.Dir)
	return removeState()
}

// removeLinksInto removes the symbolic links in dir that point into target.
func removeLinksInto(dir, target string) error {
	entries, err := os.ReadDir(dir)
	if errors.Is(err, fs.ErrNotExist) {
		return nil
	}
	if err != nil {
		return err
	}
	var errs []error
	for _, e := range entries {
		path := filepath.Join(dir, e.Name())
		if dest, err := os.Readlink(path); err == nil && strings.HasPrefix(dest, target+"/") {
			if err := os.Remove(path); err != nil {
				errs = append(errs, err)
			}
		}
	}
	return errors.Join(errs...)
}
