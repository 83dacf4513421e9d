package localcluster

import (
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"text/tabwriter"
)

// Usage is what one component of the running cluster takes.
type Usage struct {
	Component string
	Processes int
	// RSSBytes is the resident memory of its processes.
	RSSBytes int64
}

// Status lists the components of the cluster recorded in StateFile with their memory: each
// Kubernetes component, containerd with its shims, the registry, and the pods' processes
// (their cgroups). It fails when no cluster is recorded.
func Status() ([]Usage, string, error) {
	s, err := readState()
	if err != nil {
		return nil, "", err
	}
	if s == nil {
		return nil, "", fmt.Errorf("no local cluster recorded in %s", StateFile)
	}
	procs, err := processesOf(s.Dir)
	if err != nil {
		return nil, "", err
	}
	byComponent := map[string]*Usage{}
	add := func(component string, pid int) {
		u := byComponent[component]
		if u == nil {
			u = &Usage{Component: component}
			byComponent[component] = u
		}
		u.Processes++
		u.RSSBytes += rss(pid)
	}
	for _, p := range procs {
		name := filepath.Base(p.cmdline[0])
		switch {
		case name == "containerd-shim-runc-v2":
			name = "containerd shims"
		case len(p.cmdline) > 1 && p.cmdline[1] == "registry":
			name = "registry"
		}
		add(name, p.pid)
	}
	for _, pid := range cgroupPids() {
		add("pods", pid)
	}
	var out []Usage
	for _, u := range byComponent {
		out = append(out, *u)
	}
	slices.SortFunc(out, func(a, b Usage) int { return strings.Compare(a.Component, b.Component) })
	return out, s.Dir, nil
}

// PrintStatus writes Status as a table with a total.
func PrintStatus(w io.Writer) error {
	usage, dir, err := Status()
	if err != nil {
		return err
	}
	fmt.Fprintf(w, "cluster in %s\n", dir)
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintln(tw, "component\tprocesses\tRSS (MiB)\t")
	var total int64
	for _, u := range usage {
		total += u.RSSBytes
		fmt.Fprintf(tw, "%s\t%d\t%.0f\t\n", u.Component, u.Processes, float64(u.RSSBytes)/(1<<20))
	}
	fmt.Fprintf(tw, "total\t\t%.0f\t\n", float64(total)/(1<<20))
	return tw.Flush()
}

// rss is a process's resident memory in bytes (0 when it is gone).
func rss(pid int) int64 {
	data, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		return 0
	}
	for _, line := range strings.Split(string(data), "\n") {
		if v, ok := strings.CutPrefix(line, "VmRSS:"); ok {
			fields := strings.Fields(v)
			if len(fields) > 0 {
				kb, _ := strconv.ParseInt(fields[0], 10, 64)
				return kb << 10
			}
		}
	}
	return 0
}
