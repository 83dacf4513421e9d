// Package childproc finds processes by their parent and command line in /proc (Linux), and
// tells a process from a later one that reused its pid by its start time.
package childproc

import (
	"bytes"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
)

// Process is a running process: its pid, its start time (in clock ticks after boot: with the
// pid, it names the process for good) and its command line.
type Process struct {
	Pid   int
	Start uint64
	Argv  []string

	zombie bool
}

// Children lists the processes whose parent is ppid and whose command's base name is name.
func Children(ppid int, name string) ([]Process, error) {
	entries, err := os.ReadDir("/proc")
	if err != nil {
		return nil, err
	}
	var out []Process
	for _, entry := range entries {
		pid, err := strconv.Atoi(entry.Name())
		if err != nil {
			continue
		}
		p, parent, err := read(pid)
		if err != nil || parent != ppid || len(p.Argv) == 0 || filepath.Base(p.Argv[0]) != name {
			continue
		}
		out = append(out, p)
	}
	return out, nil
}

// Alive reports whether p still runs: its pid names a process started when p was, which has
// not exited (a zombie waiting for its parent to reap it runs no more).
func Alive(p Process) bool {
	now, _, err := read(p.Pid)
	return err == nil && now.Start == p.Start && !now.zombie
}

// read reads a process's start time, parent and command line.
func read(pid int) (Process, int, error) {
	dir := filepath.Join("/proc", strconv.Itoa(pid))
	stat, err := os.ReadFile(filepath.Join(dir, "stat"))
	if err != nil {
		return Process{}, 0, err
	}
	// pid (comm) state ppid … starttime is the 22nd field; comm may hold spaces and
	// parentheses, so the fields are counted after the last ')'.
	end := bytes.LastIndexByte(stat, ')')
	if end < 0 {
		return Process{}, 0, fmt.Errorf("pid %d: unreadable stat", pid)
	}
	fields := strings.Fields(string(stat[end+1:]))
	if len(fields) < 20 {
		return Process{}, 0, fmt.Errorf("pid %d: short stat", pid)
	}
	ppid, err := strconv.Atoi(fields[1])
	if err != nil {
		return Process{}, 0, err
	}
	start, err := strconv.ParseUint(fields[19], 10, 64)
	if err != nil {
		return Process{}, 0, err
	}
	cmdline, err := os.ReadFile(filepath.Join(dir, "cmdline"))
	if err != nil {
		return Process{}, 0, err
	}
	var argv []string
	if trimmed := strings.TrimSuffix(string(cmdline), "\x00"); trimmed != "" {
		argv = strings.Split(trimmed, "\x00")
	}
	return Process{Pid: pid, Start: start, Argv: argv, zombie: fields[0] == "Z"}, ppid, nil
}
