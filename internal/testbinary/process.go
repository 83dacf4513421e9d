// Package testbinary runs the built release-controller binary as a subprocess for the tests
// and benchmarks that measure what ships (test/scale, test/bench): started as a user starts
// it, its output in a file, stopped on every path, and killed by the kernel if the test
// process dies first. It also reads the Prometheus text the binary and the API server serve.
package testbinary

import (
	"context"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"strings"
	"sync"
	"syscall"
	"time"
)

// Process is a running subprocess whose stdout and stderr go to LogPath.
type Process struct {
	Cmd     *exec.Cmd
	LogPath string
	exited  chan struct{}
	waitErr error
	stop    sync.Once
}

// Start starts binary with args, its output going to logPath (created). Stop it on every path.
func Start(binary, logPath string, args ...string) (*Process, error) {
	return StartCommand(Command(binary, args...), logPath)
}

// StartCommand starts cmd, made with Command and given whatever else it needs (Env, Dir), its
// output going to logPath (created). Stop it on every path.
func StartCommand(cmd *exec.Cmd, logPath string) (*Process, error) {
	log, err := os.Create(logPath)
	if err != nil {
		return nil, err
	}
	cmd.Stdout, cmd.Stderr = log, log
	if err := cmd.Start(); err != nil {
		_ = log.Close()
		return nil, fmt.Errorf("starting %s: %w", cmd.Path, err)
	}
	p := &Process{Cmd: cmd, LogPath: logPath, exited: make(chan struct{})}
	go func() {
		p.waitErr = cmd.Wait()
		_ = log.Close()
		close(p.exited)
	}()
	return p, nil
}

// Command is exec.Command for a subprocess that the kernel kills when the test process dies.
func Command(binary string, args ...string) *exec.Cmd {
	cmd := exec.Command(binary, args...)
	cmd.SysProcAttr = &syscall.SysProcAttr{}
	dieWithParent(cmd.SysProcAttr)
	return cmd
}

// Pid is the process id.
func (p *Process) Pid() int { return p.Cmd.Process.Pid }

// Running reports whether the process has not ended yet.
func (p *Process) Running() bool {
	select {
	case <-p.exited:
		return false
	default:
		return true
	}
}

// Exited is closed when the process has ended.
func (p *Process) Exited() <-chan struct{} { return p.exited }

// ExitStatus says how the process ended ("exit status 0" for a clean exit); call it once it has.
func (p *Process) ExitStatus() string {
	if p.waitErr == nil {
		return "exit status 0"
	}
	return p.waitErr.Error()
}

// Stop ends the process gracefully (SIGTERM: a controller releases its lease), or kills it
// when it has not ended within grace. Only the first call acts; later ones wait for the end.
func (p *Process) Stop(grace time.Duration) {
	p.stop.Do(func() {
		if !p.Running() {
			return
		}
		_ = p.Cmd.Process.Signal(syscall.SIGTERM)
		select {
		case <-p.exited:
		case <-time.After(grace):
			_ = p.Cmd.Process.Kill()
		}
	})
	<-p.exited
}

// Kill ends the process at once, as a crash or a lost node would, and waits for it.
func (p *Process) Kill() error {
	if err := p.Cmd.Process.Signal(syscall.SIGKILL); err != nil && p.Running() {
		return err
	}
	<-p.exited
	return nil
}

// Log returns the process's output so far.
func (p *Process) Log() string {
	data, err := os.ReadFile(p.LogPath)
	if err != nil {
		return err.Error()
	}
	return string(data)
}

// Tail returns the last n lines of the process's output.
func (p *Process) Tail(n int) string {
	lines := strings.Split(strings.TrimRight(p.Log(), "\n"), "\n")
	return strings.Join(lines[max(0, len(lines)-n):], "\n")
}

// FreeAddr returns a loopback address with a port that was free a moment ago.
func FreeAddr() (string, error) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return "", err
	}
	defer l.Close()
	return l.Addr().String(), nil
}

// Get fetches url with a 5-second limit and returns the body of a 200 answer.
func Get(ctx context.Context, url string) (string, error) {
	ctx, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	if err != nil {
		return "", err
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return "", err
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	if err != nil {
		return "", err
	}
	if resp.StatusCode != http.StatusOK {
		return "", fmt.Errorf("GET %s: %s: %s", url, resp.Status, body)
	}
	return string(body), nil
}

// Build builds the release-controller command into path with `go build`, its output on
// stderr, as `make build` does for users.
func Build(path string) error {
	build := exec.Command("go", "build", "-o", path, "github.com/release-controller/release-controller/cmd/release-controller")
	build.Stdout, build.Stderr = os.Stderr, os.Stderr
	if err := build.Run(); err != nil {
		return fmt.Errorf("building release-controller: %w", err)
	}
	return nil
}
