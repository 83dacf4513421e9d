package localcluster

import (
	"bufio"
	"errors"
	"fmt"
	"io/fs"
	"maps"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"time"
)

// iptablesComment marks the rules the cluster adds itself.
const iptablesComment = "release-controller-cluster"

// run runs a host command and returns its error with its output.
func run(name string, args ...string) error {
	out, err := exec.Command(name, args...).CombinedOutput()
	if err != nil {
		return fmt.Errorf("%s %s: %w: %s", name, strings.Join(args, " "), err, strings.TrimSpace(string(out)))
	}
	return nil
}

func output(name string, args ...string) (string, error) {
	out, err := exec.Command(name, args...).Output()
	if err != nil {
		var exit *exec.ExitError
		if errors.As(err, &exit) {
			return "", fmt.Errorf("%s %s: %w: %s", name, strings.Join(args, " "), err, strings.TrimSpace(string(exit.Stderr)))
		}
		return "", fmt.Errorf("%s %s: %w", name, strings.Join(args, " "), err)
	}
	return string(out), nil
}

// setUpNetwork makes the bridge with its address, routes the Service range to it, and drops
// what pods send anywhere but the bridge. The CNI bridge plugin finds the bridge made.
func setUpNetwork() error {
	steps := [][]string{
		{"ip", "link", "add", Bridge, "type", "bridge"},
		{"ip", "addr", "add", Gateway + "/24", "dev", Bridge},
		{"ip", "link", "set", Bridge, "up"},
		{"ip", "route", "add", ServiceCIDR, "dev", Bridge},
		{"iptables", "-w", "-I", "FORWARD", "1", "-i", Bridge, "!", "-o", Bridge, "-m", "comment", "--comment", iptablesComment, "-j", "DROP"},
	}
	for _, s := range steps {
		if err := run(s[0], s[1:]...); err != nil {
			return err
		}
	}
	return nil
}

// linkExists reports whether a network interface is there.
func linkExists(name string) bool {
	_, err := os.Stat(filepath.Join("/sys/class/net", name))
	return err == nil
}

// removeNetwork deletes the bridge (its routes go with it) and every interface still enslaved
// to it (the host ends of pods' veth pairs whose namespace outlived its pod).
func removeNetwork() error {
	var errs []error
	if ports, err := os.ReadDir(filepath.Join("/sys/class/net", Bridge, "brif")); err == nil {
		for _, port := range ports {
			if err := run("ip", "link", "del", port.Name()); err != nil && linkExists(port.Name()) {
				errs = append(errs, err)
			}
		}
	}
	if linkExists(Bridge) {
		if err := run("ip", "link", "del", Bridge); err != nil {
			errs = append(errs, err)
		}
	}
	return errors.Join(errs...)
}

// iptablesTables are the tables the kubelet, kube-proxy and this package write to.
var iptablesTables = []string{"filter", "nat", "mangle"}

// kubeChains lists, per table, the chains named KUBE-* (the kubelet's and kube-proxy's).
func kubeChains(cmd string) (map[string][]string, error) {
	found := map[string][]string{}
	for _, table := range iptablesTables {
		out, err := output(cmd+"-save", "-t", table)
		if err != nil {
			return nil, err
		}
		for _, line := range strings.Split(out, "\n") {
			if strings.HasPrefix(line, ":KUBE-") {
				found[table] = append(found[table], strings.Fields(line[1:])[0])
			}
		}
	}
	return found, nil
}

// ourRules lists the rules, as iptables -S prints them, that jump to a KUBE-* chain or carry
// iptablesComment, in the built-in chains of each table.
func ourRules(cmd string) (map[string][]string, error) {
	found := map[string][]string{}
	for _, table := range iptablesTables {
		out, err := output(cmd, "-w", "-t", table, "-S")
		if err != nil {
			return nil, err
		}
		for _, line := range strings.Split(out, "\n") {
			if !strings.HasPrefix(line, "-A ") {
				continue
			}
			chain := strings.Fields(line)[1]
			if strings.HasPrefix(chain, "KUBE-") {
				continue // goes with its chain
			}
			if strings.Contains(line, "-j KUBE-") || strings.Contains(line, iptablesComment) {
				found[table] = append(found[table], line)
			}
		}
	}
	return found, nil
}

// removeIptables deletes the rules in built-in chains that lead to KUBE-* chains or carry the
// cluster's comment, then flushes and deletes every KUBE-* chain, for IPv4 and IPv6. Up
// refuses to start where KUBE-* chains exist that no cluster of its own made, so every one
// found here is the cluster's.
func removeIptables() error {
	var errs []error
	for _, cmd := range []string{"iptables", "ip6tables"} {
		if _, err := exec.LookPath(cmd); err != nil {
			continue
		}
		rules, err := ourRules(cmd)
		if err != nil {
			errs = append(errs, err)
			continue
		}
		for table, lines := range rules {
			for _, line := range lines {
				args := append([]string{"-w", "-t", table, "-D"}, splitRule(strings.TrimPrefix(line, "-A "))...)
				if err := run(cmd, args...); err != nil {
					errs = append(errs, err)
				}
			}
		}
		chains, err := kubeChains(cmd)
		if err != nil {
			errs = append(errs, err)
			continue
		}
		for table, names := range chains {
			for _, chain := range names {
				if err := run(cmd, "-w", "-t", table, "-F", chain); err != nil {
					errs = append(errs, err)
				}
			}
			for _, chain := range names {
				if err := run(cmd, "-w", "-t", table, "-X", chain); err != nil {
					errs = append(errs, err)
				}
			}
		}
	}
	return errors.Join(errs...)
}

// nftTables lists the nftables tables ("ip filter", "ip6 nat", ...); none where nft is not
// installed.
func nftTables() []string {
	out, err := output("nft", "list", "tables")
	if err != nil {
		return nil
	}
	var tables []string
	for _, line := range strings.Split(out, "\n") {
		if t, ok := strings.CutPrefix(strings.TrimSpace(line), "table "); ok {
			tables = append(tables, t)
		}
	}
	return tables
}

// removeEmptyIptablesTables deletes the tables of iptables-nft that were not there before the
// cluster started (keep) and now hold nothing but empty built-in chains.
func removeEmptyIptablesTables(keep []string) error {
	var errs []error
	for _, t := range nftTables() {
		family, table, _ := strings.Cut(t, " ")
		cmd := map[string]string{"ip": "iptables", "ip6": "ip6tables"}[family]
		if cmd == "" || !slices.Contains(iptablesTables, table) || slices.Contains(keep, t) {
			continue
		}
		out, err := output(cmd+"-save", "-t", table)
		if err != nil {
			errs = append(errs, err)
			continue
		}
		empty := true
		for _, line := range strings.Split(out, "\n") {
			if strings.HasPrefix(line, "-A ") || (strings.HasPrefix(line, ":") && !strings.Contains(line, " ACCEPT ")) {
				empty = false
			}
		}
		if empty {
			if err := run("nft", "delete", "table", family, table); err != nil {
				errs = append(errs, err)
			}
		}
	}
	return errors.Join(errs...)
}

// forgetConnections deletes the conntrack entries of the cluster's addresses.
func forgetConnections() {
	for _, cidr := range []string{PodCIDR, ServiceCIDR} {
		for _, dir := range []string{"--src", "--dst"} {
			_ = exec.Command("conntrack", "-D", dir, cidr).Run() // exits 1 when nothing matched
		}
	}
}

// splitRule splits a rule as iptables -S prints it into arguments, keeping quoted comments
// whole.
func splitRule(rule string) []string {
	var args []string
	var cur strings.Builder
	quoted := false
	for _, r := range rule {
		switch {
		case r == '"':
			quoted = !quoted
		case r == ' ' && !quoted:
			if cur.Len() > 0 {
				args = append(args, cur.String())
				cur.Reset()
			}
		default:
			cur.WriteRune(r)
		}
	}
	if cur.Len() > 0 {
		args = append(args, cur.String())
	}
	return args
}

// hostSysctls are the settings the kubelet (vm.*, kernel.*), the CNI bridge plugin and
// kube-proxy (net.*) change; Up records them before the cluster starts and Down puts them
// back.
var hostSysctls = []string{
	"vm.overcommit_memory",
	"vm.panic_on_oom",
	"kernel.panic",
	"kernel.panic_on_oops",
	"kernel.keys.root_maxkeys",
	"kernel.keys.root_maxbytes",
	"net.ipv4.ip_forward",
	"net.ipv4.conf.all.route_localnet",
	"net.bridge.bridge-nf-call-iptables",
	"net.bridge.bridge-nf-call-ip6tables",
}

func sysctlPath(name string) string {
	return filepath.Join("/proc/sys", strings.ReplaceAll(name, ".", "/"))
}

// readSysctls reads the current values of hostSysctls that exist on this machine.
func readSysctls() map[string]string {
	values := map[string]string{}
	for _, name := range hostSysctls {
		if data, err := os.ReadFile(sysctlPath(name)); err == nil {
			values[name] = strings.TrimSpace(string(data))
		}
	}
	return values
}

// restoreSysctls writes back the values recorded, where they changed.
func restoreSysctls(values map[string]string) error {
	var errs []error
	for _, name := range slices.Sorted(maps.Keys(values)) {
		path := sysctlPath(name)
		data, err := os.ReadFile(path)
		if err != nil || strings.TrimSpace(string(data)) == values[name] {
			continue
		}
		if err := os.WriteFile(path, []byte(values[name]+"\n"), 0o644); err != nil {
			errs = append(errs, fmt.Errorf("restoring %s to %s: %w", name, values[name], err))
		}
	}
	return errors.Join(errs...)
}

// mountsUnder lists the mount points at or below dir, deepest first.
func mountsUnder(dirs ...string) ([]string, error) {
	f, err := os.Open("/proc/self/mountinfo")
	if err != nil {
		return nil, err
	}
	defer f.Close()
	var found []string
	s := bufio.NewScanner(f)
	s.Buffer(make([]byte, 1<<20), 1<<20)
	for s.Scan() {
		fields := strings.Fields(s.Text())
		if len(fields) < 5 {
			continue
		}
		point := unescapeMount(fields[4])
		for _, dir := range dirs {
			if point == dir || strings.HasPrefix(point, dir+"/") {
				found = append(found, point)
				break
			}
		}
	}
	slices.SortFunc(found, func(a, b string) int { return strings.Count(b, "/") - strings.Count(a, "/") })
	return slices.Compact(found), s.Err()
}

// unescapeMount undoes mountinfo's octal escapes (\040 for a space).
func unescapeMount(s string) string {
	if !strings.Contains(s, `\`) {
		return s
	}
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		if s[i] == '\\' && i+3 < len(s) {
			var v byte
			if _, err := fmt.Sscanf(s[i+1:i+4], "%03o", &v); err == nil {
				b.WriteByte(v)
				i += 3
				continue
			}
		}
		b.WriteByte(s[i])
	}
	return b.String()
}

// unmountAll unmounts every mount at or below dirs, lazily where a plain unmount fails.
func unmountAll(dirs ...string) error {
	var errs []error
	for range 3 { // a mount over a mount shows up again once the upper one is gone
		points, err := mountsUnder(dirs...)
		if err != nil {
			return err
		}
		if len(points) == 0 {
			return nil
		}
		for _, p := range points {
			if err := syscall.Unmount(p, 0); err != nil {
				if err := syscall.Unmount(p, syscall.MNT_DETACH); err != nil && !errors.Is(err, syscall.EINVAL) && !errors.Is(err, syscall.ENOENT) {
					errs = append(errs, fmt.Errorf("unmounting %s: %w", p, err))
				}
			}
		}
	}
	if points, err := mountsUnder(dirs...); err == nil && len(points) > 0 {
		errs = append(errs, fmt.Errorf("still mounted: %s", strings.Join(points, ", ")))
	}
	return errors.Join(errs...)
}

// cgroupHierarchies lists the mounted cgroup hierarchies (v1 controllers and the unified one).
func cgroupHierarchies() []string {
	entries, err := os.ReadDir("/sys/fs/cgroup")
	if err != nil {
		return nil
	}
	var dirs []string
	for _, e := range entries {
		path := filepath.Join("/sys/fs/cgroup", e.Name())
		if info, err := os.Lstat(path); err == nil && info.IsDir() {
			if _, err := os.Stat(filepath.Join(path, "cgroup.procs")); err == nil {
				dirs = append(dirs, path)
			}
		}
	}
	if _, err := os.Stat("/sys/fs/cgroup/cgroup.procs"); err == nil {
		dirs = append(dirs, "/sys/fs/cgroup") // cgroup v2 only
	}
	return dirs
}

// makeCgroupRoot creates the kubelet's cgroupRoot in every v1 hierarchy (the kubelet refuses a
// root that does not exist); a cpuset cgroup needs its CPUs and memory nodes before a task
// may join it.
func makeCgroupRoot() error {
	for _, h := range cgroupHierarchies() {
		dir := filepath.Join(h, CgroupRoot)
		if err := os.MkdirAll(dir, 0o755); err != nil {
			return err
		}
		if filepath.Base(h) == "cpuset" {
			for _, f := range []string{"cpuset.cpus", "cpuset.mems"} {
				v, err := os.ReadFile(filepath.Join(h, f))
				if err != nil {
					return err
				}
				if err := os.WriteFile(filepath.Join(dir, f), v, 0o644); err != nil {
					return fmt.Errorf("%s: %w", filepath.Join(dir, f), err)
				}
			}
		}
	}
	return nil
}

// cgroupPids lists the processes in the cluster's cgroups: the pods' containers.
func cgroupPids() []int {
	seen := map[int]bool{}
	for _, h := range cgroupHierarchies() {
		_ = filepath.WalkDir(filepath.Join(h, CgroupRoot), func(path string, d fs.DirEntry, err error) error {
			if err != nil || d.IsDir() || d.Name() != "cgroup.procs" {
				return nil //nolint:nilerr // a cgroup that went away has no processes
			}
			data, _ := os.ReadFile(path) // nothing read: the cgroup went away
			for _, f := range strings.Fields(string(data)) {
				var pid int
				if _, err := fmt.Sscan(f, &pid); err == nil {
					seen[pid] = true
				}
			}
			return nil
		})
	}
	return slices.Sorted(func(yield func(int) bool) {
		for pid := range seen {
			if !yield(pid) {
				return
			}
		}
	})
}

// killPods kills every process in the cluster's cgroups until none is left.
func killPods() error {
	deadline := time.Now().Add(20 * time.Second)
	for {
		pids := cgroupPids()
		var left []int
		for _, pid := range pids {
			if alive(pid) {
				left = append(left, pid)
				_ = syscall.Kill(pid, syscall.SIGKILL)
			}
		}
		if len(left) == 0 {
			return nil
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("processes %v in cgroup %s survived SIGKILL", left, CgroupRoot)
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// removeCgroups removes the cluster's cgroups, deepest first, in every hierarchy.
func removeCgroups() error {
	var errs []error
	for _, h := range cgroupHierarchies() {
		root := filepath.Join(h, CgroupRoot)
		var dirs []string
		_ = filepath.WalkDir(root, func(path string, d fs.DirEntry, err error) error {
			if err == nil && d.IsDir() {
				dirs = append(dirs, path)
			}
			return nil
		})
		slices.SortFunc(dirs, func(a, b string) int { return strings.Count(b, "/") - strings.Count(a, "/") })
		for _, d := range dirs {
			if err := removeCgroup(d); err != nil {
				errs = append(errs, err)
			}
		}
	}
	return errors.Join(errs...)
}

// removeCgroup removes an empty cgroup, waiting briefly for the kernel to let go of tasks that
// were just killed.
func removeCgroup(dir string) error {
	var err error
	for range 50 {
		if err = syscall.Rmdir(dir); err == nil || errors.Is(err, syscall.ENOENT) {
			return nil
		}
		time.Sleep(100 * time.Millisecond)
	}
	return fmt.Errorf("removing cgroup %s: %w", dir, err)
}
