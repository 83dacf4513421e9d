package localcluster

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"time"
)

// hostPATH finds runc, the containerd shim, iptables and conntrack where Debian puts them.
const hostPATH = "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin"

// startDetached starts a component in a session of its own, so that it outlives the command
// that started it (make cluster returns; the cluster stays). Its output goes to logPath.
func startDetached(logPath, binary string, args ...string) (int, error) {
	if err := os.MkdirAll(filepath.Dir(logPath), 0o755); err != nil {
		return 0, err
	}
	log, err := os.OpenFile(logPath, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
	if err != nil {
		return 0, err
	}
	defer log.Close()
	cmd := exec.Command(binary, args...)
	cmd.Env = append(os.Environ(), "PATH="+hostPATH)
	cmd.Stdout, cmd.Stderr = log, log
	cmd.SysProcAttr = &syscall.SysProcAttr{Setsid: true}
	if err := cmd.Start(); err != nil {
		return 0, fmt.Errorf("starting %s: %w", binary, err)
	}
	pid := cmd.Process.Pid
	return pid, cmd.Process.Release()
}

// process is a running process of this machine.
type process struct {
	pid     int
	cmdline []string
}

func (p process) String() string {
	return fmt.Sprintf("%d (%s)", p.pid, strings.Join(p.cmdline, " "))
}

// processesOf lists the processes whose command line names a path inside dir: every
// component of a cluster there names its folder in a flag, and so do containerd's shims
// (-address). The calling process is left out.
func processesOf(dir string) ([]process, error) {
	entries, err := os.ReadDir("/proc")
	if err != nil {
		return nil, err
	}
	self := os.Getpid()
	var found []process
	for _, e := range entries {
		pid, err := strconv.Atoi(e.Name())
		if err != nil || pid == self {
			continue
		}
		raw, err := os.ReadFile(filepath.Join("/proc", e.Name(), "cmdline"))
		if err != nil || len(raw) == 0 {
			continue // gone, or a kernel thread
		}
		args := strings.Split(strings.TrimRight(string(raw), "\x00"), "\x00")
		if namesPathIn(args, dir) && !zombie(pid) {
			found = append(found, process{pid: pid, cmdline: args})
		}
	}
	return found, nil
}

// namesPathIn reports whether an argument is dir or a path inside it, alone or as a flag's
// value (--flag=PATH, unix://PATH).
func namesPathIn(args []string, dir string) bool {
	dir = filepath.Clean(dir)
	for _, a := range args {
		if i := strings.LastIndex(a, "="); i >= 0 {
			a = a[i+1:]
		}
		a = strings.TrimPrefix(a, "unix://")
		if a == dir || strings.HasPrefix(a, dir+"/") {
			return true
		}
	}
	return false
}

// zombie reports whether pid has exited and waits for its parent to collect it.
func zombie(pid int) bool {
	stat, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return true
	}
	// The state follows the command name, which is in parentheses and may hold spaces.
	i := bytes.LastIndexByte(stat, ')')
	return i < 0 || i+2 >= len(stat) || stat[i+2] == 'Z' || stat[i+2] == 'X'
}

// alive reports whether pid is running (not a zombie).
func alive(pid int) bool {
	return syscall.Kill(pid, 0) == nil && !zombie(pid)
}

// stopProcesses sends SIGTERM to every process, waits up to grace for them to end, and kills
// what is left.
func stopProcesses(log io.Writer, procs []process, grace time.Duration) error {
	for _, p := range procs {
		_ = syscall.Kill(p.pid, syscall.SIGTERM)
	}
	deadline := time.Now().Add(grace)
	for time.Now().Before(deadline) {
		if len(running(procs)) == 0 {
			return nil
		}
		time.Sleep(50 * time.Millisecond)
	}
	left := running(procs)
	for _, p := range left {
		if log != nil {
			fmt.Fprintf(log, "    %s did not stop within %s of SIGTERM: SIGKILL\n", p, grace)
		}
		_ = syscall.Kill(p.pid, syscall.SIGKILL)
	}
	deadline = time.Now().Add(10 * time.Second)
	for time.Now().Before(deadline) {
		if len(running(left)) == 0 {
			return nil
		}
		time.Sleep(50 * time.Millisecond)
	}
	var errs []error
	for _, p := range running(left) {
		errs = append(errs, fmt.Errorf("process %s survived SIGKILL", p))
	}
	return errors.Join(errs...)
}

func running(procs []process) []process {
	var out []process
	for _, p := range procs {
		if alive(p.pid) {
			out = append(out, p)
		}
	}
	return out
}

// byName picks the processes whose program (first argument's base name) is name.
func byName(procs []process, name string) []process {
	var out []process
	for _, p := range procs {
		if filepath.Base(p.cmdline[0]) == name {
			out = append(out, p)
		}
	}
	return out
}
