package jobrunner

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"syscall"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/ptr"
)

// process is what runs for a pod: its argv and complete environment.
type process struct {
	argv []string
	env  []string
	// serviceAccount, when its Name is set, is the pod's service account: every run gets a
	// kubeconfig holding a fresh token of it, put into env at tokenEnvAt (before the
	// container's own env, which may still override KUBECONFIG).
	serviceAccount types.NamespacedName
	tokenEnvAt     int
}

// processFor builds the process for a pod's first container, which runs in namespace.
// extraEnv comes after the runner's environment and before the container's env (Prow's job
// variables). The error says why the pod cannot run locally; it becomes the object's failure
// message.
func (r *Runner) processFor(namespace string, pod *corev1.PodSpec, extraEnv []string) (process, error) {
	if pod == nil || len(pod.Containers) == 0 {
		return process{}, errors.New("the pod has no containers")
	}
	c := pod.Containers[0]
	if len(c.Command) == 0 {
		return process{}, fmt.Errorf("container %q has no command: the local job runner does not pull images, so it cannot use an image's entrypoint; set command", c.Name)
	}
	if len(c.EnvFrom) > 0 {
		return process{}, fmt.Errorf("container %q uses envFrom, which the local job runner does not support; set literal env values", c.Name)
	}
	var env []string
	for _, name := range []string{"PATH", "HOME"} {
		if v, ok := os.LookupEnv(name); ok {
			env = append(env, name+"="+v)
		}
	}
	env = append(env, r.opts.Env...)
	env = append(env, extraEnv...)
	var account types.NamespacedName
	if r.opts.ServiceAccountAPIServer != nil && pod.ServiceAccountName != "" && ptr.Deref(pod.AutomountServiceAccountToken, true) {
		account = types.NamespacedName{Namespace: namespace, Name: pod.ServiceAccountName}
	}
	tokenEnvAt := len(env)
	for _, e := range c.Env {
		if e.ValueFrom != nil {
			return process{}, fmt.Errorf("container %q: env %s uses valueFrom, which the local job runner does not support; set a literal value", c.Name, e.Name)
		}
		env = append(env, e.Name+"="+expand(e.Value, env))
	}
	var argv []string
	for _, a := range append(append([]string{}, c.Command...), c.Args...) {
		argv = append(argv, expand(a, env))
	}
	// The project's own binary is not in the job's image here: run the local one.
	if filepath.Base(argv[0]) == "release-controller" {
		argv[0] = r.opts.Executable
	}
	return process{argv: argv, env: env, serviceAccount: account, tokenEnvAt: tokenEnvAt}, nil
}

// expand replaces $(NAME) with NAME's value in env, as Kubernetes does in a container's command,
// args and env values: $$ is a literal $, and a reference to an undefined name stays as written.
func expand(s string, env []string) string {
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		if s[i] != '$' || i+1 == len(s) {
			b.WriteByte(s[i])
			continue
		}
		switch s[i+1] {
		case '$':
			b.WriteByte('$')
			i++
		case '(':
			end := strings.IndexByte(s[i+2:], ')')
			if end < 0 {
				b.WriteString(s[i:])
				return b.String()
			}
			ref := s[i : i+3+end]
			if v, ok := lookupEnv(env, ref[2:len(ref)-1]); ok {
				b.WriteString(v)
			} else {
				b.WriteString(ref)
			}
			i += len(ref) - 1
		default:
			b.WriteByte('$')
		}
	}
	return b.String()
}

// lookupEnv finds name in env; the last entry wins, as it does for the process.
func lookupEnv(env []string, name string) (string, bool) {
	for i := len(env) - 1; i >= 0; i-- {
		if k, v, ok := strings.Cut(env[i], "="); ok && k == name {
			return v, true
		}
	}
	return "", false
}

// lookPath finds a command in the PATH of the process's environment (not the runner's), as a
// container's command is looked up in the container.
func lookPath(name string, env []string) (string, error) {
	if strings.Contains(name, "/") {
		return name, nil
	}
	path, _ := lookupEnv(env, "PATH")
	for _, dir := range filepath.SplitList(path) {
		if dir == "" {
			continue
		}
		file := filepath.Join(dir, name)
		if info, err := os.Stat(file); err == nil && info.Mode().IsRegular() && info.Mode()&0o111 != 0 {
			return file, nil
		}
	}
	return "", fmt.Errorf("executable %q not found in PATH %q", name, path)
}

// execute runs p to its end in a fresh working directory, appending its output to logPath. It
// returns nil when the process exits with 0, ctx's cause when ctx ended first (the process
// group is then killed), and otherwise why the process failed.
func (r *Runner) execute(ctx context.Context, logPath string, p process) error {
	if ctx.Err() != nil {
		return context.Cause(ctx)
	}
	logFile, err := openLog(logPath)
	if err != nil {
		return err
	}
	defer logFile.Close()
	dir, err := os.MkdirTemp("", "jobrunner-")
	if err != nil {
		return err
	}
	defer os.RemoveAll(dir)

	env := p.env
	if p.serviceAccount.Name != "" {
		kubeconfig, err := r.serviceAccountKubeconfig(ctx, p.serviceAccount)
		if err != nil {
			fmt.Fprintf(logFile, runnerNotePrefix+" %v\n", err)
			return err
		}
		defer os.RemoveAll(filepath.Dir(kubeconfig))
		env = slices.Insert(slices.Clone(p.env), p.tokenEnvAt, "KUBECONFIG="+kubeconfig)
	}
	path, err := lookPath(p.argv[0], env)
	if err != nil {
		fmt.Fprintf(logFile, runnerNotePrefix+" %v\n", err)
		return err
	}
	cmd := &exec.Cmd{
		Path: path, Args: p.argv, Env: env, Dir: dir, Stdout: logFile, Stderr: logFile,
		// Its own process group, so that everything the command started can be killed with it.
		SysProcAttr: &syscall.SysProcAttr{Setpgid: true},
	}
	if err := cmd.Start(); err != nil {
		fmt.Fprintf(logFile, runnerNotePrefix+" starting %s: %v\n", p.argv[0], err)
		return err
	}
	done := make(chan error, 1)
	go func() { done <- cmd.Wait() }()
	killed := false
	select {
	case err = <-done:
	case <-ctx.Done():
		killed = true
	}
	// A pod's processes end with it: kill the group also when its main process exited.
	_ = syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL)
	if killed {
		exit := <-done
		fmt.Fprintf(logFile, runnerNotePrefix+" process killed: %v (%v)\n", context.Cause(ctx), exit)
		return context.Cause(ctx)
	}
	if err != nil {
		fmt.Fprintf(logFile, runnerNotePrefix+" process ended: %v\n", err)
	}
	return err
}

func openLog(path string) (*os.File, error) {
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		return nil, err
	}
	return os.OpenFile(path, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
}

func appendLog(path, text string) error {
	f, err := openLog(path)
	if err != nil {
		return err
	}
	if _, err := f.WriteString(text); err != nil {
		f.Close()
		return err
	}
	return f.Close()
}

// runnerNotePrefix starts the lines the runner itself adds to a log.
const runnerNotePrefix = "[job runner]"
