package testenv

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"net"
	"net/url"
	"os"
	"slices"
	"strings"
	"syscall"
	"time"

	"k8s.io/client-go/kubernetes"

	"github.com/release-controller/release-controller/internal/childproc"
	"github.com/release-controller/release-controller/internal/testbinary"
)

// The control plane's processes, which fault tests kill and start again.
const (
	APIServer = "kube-apiserver"
	Etcd      = "etcd"
)

// component is one control-plane process as the fault methods know it: the command line it
// was started with, and the process running now (envtest's, or one Restart started).
type component struct {
	argv []string
	pid  int                 // the running process, 0 once killed
	own  *testbinary.Process // set when Restart started it
}

// Kill ends the named control-plane process (APIServer or Etcd) with SIGKILL, as a crash
// would, and waits until it is gone. Its data and certificates stay, so Restart brings the
// same API server back.
func (e *Env) Kill(name string) error {
	c, err := e.component(name)
	if err != nil {
		return err
	}
	if c.pid == 0 {
		return fmt.Errorf("%s is not running", name)
	}
	if c.own != nil {
		err = c.own.Kill()
	} else {
		err = syscall.Kill(c.pid, syscall.SIGKILL)
		// envtest waits for its own process; once it has, the pid is gone.
		for err == nil && syscall.Kill(c.pid, 0) == nil {
			time.Sleep(20 * time.Millisecond)
		}
	}
	c.pid = 0
	return err
}

// Restart starts a process Kill ended with the same command line (same ports, data folder and
// certificates) and waits until it serves: the API server's /readyz, etcd's client port. Its
// output goes to logPath.
func (e *Env) Restart(name, logPath string) error {
	c, err := e.component(name)
	if err != nil {
		return err
	}
	if c.pid != 0 {
		return fmt.Errorf("%s is running", name)
	}
	p, err := testbinary.Start(c.argv[0], logPath, c.argv[1:]...)
	if err != nil {
		return fmt.Errorf("starting %s again: %w", name, err)
	}
	c.own, c.pid = p, p.Pid()
	deadline := time.Now().Add(2 * time.Minute)
	for {
		if !p.Running() {
			return fmt.Errorf("%s exited at once (%s):\n%s", name, p.ExitStatus(), p.Tail(20))
		}
		if e.serves(name, c.argv) {
			return nil
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("%s does not serve 2 minutes after it was started again:\n%s", name, p.Tail(20))
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// Running reports whether the named process runs (it was not killed, or was started again).
func (e *Env) Running(name string) bool {
	c, err := e.component(name)
	return err == nil && c.pid != 0
}

func (e *Env) serves(name string, argv []string) bool {
	if name == APIServer {
		cs, err := kubernetes.NewForConfig(e.Config)
		if err != nil {
			return false
		}
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		body, err := cs.Discovery().RESTClient().Get().AbsPath("/readyz").DoRaw(ctx)
		return err == nil && bytes.Equal(body, []byte("ok"))
	}
	for _, arg := range argv {
		if v, ok := strings.CutPrefix(arg, "--listen-client-urls="); ok {
			u, err := url.Parse(strings.Split(v, ",")[0])
			if err != nil {
				return false
			}
			conn, err := net.DialTimeout("tcp", u.Host, time.Second)
			if err != nil {
				return false
			}
			_ = conn.Close()
			return true
		}
	}
	return false
}

// component finds the named process among this process's children the first time.
func (e *Env) component(name string) (*component, error) {
	if name != APIServer && name != Etcd {
		return nil, fmt.Errorf("unknown control-plane process %q", name)
	}
	if c, ok := e.components[name]; ok {
		return c, nil
	}
	pid, argv, err := childProcess(name, e.ownArg(name))
	if err != nil {
		return nil, err
	}
	if e.components == nil {
		e.components = map[string]*component{}
	}
	c := &component{argv: argv, pid: pid}
	e.components[name] = c
	return c, nil
}

// ownArg is an argument only this Env's process of name has: its API server's secure port,
// or its etcd's client URL, so that a test process running several API servers kills the
// right one.
func (e *Env) ownArg(name string) string {
	if name == APIServer {
		u, err := url.Parse(e.Config.Host)
		if err != nil {
			return ""
		}
		return "--secure-port=" + u.Port()
	}
	return "--listen-client-urls=" + e.env.ControlPlane.Etcd.URL.String()
}

// childProcess finds this process's child whose command is name and whose command line holds
// arg, and its command line.
func childProcess(name, arg string) (int, []string, error) {
	children, err := childproc.Children(os.Getpid(), name)
	if err != nil {
		return 0, nil, err
	}
	for _, c := range children {
		if slices.Contains(c.Argv, arg) {
			return c.Pid, c.Argv, nil
		}
	}
	return 0, nil, fmt.Errorf("no %s process with %s among the children of pid %d", name, arg, os.Getpid())
}

// stopRestarted stops the processes Restart started, which envtest does not know of.
func (e *Env) stopRestarted() error {
	var errs []error
	for _, name := range []string{APIServer, Etcd} { // the API server before its storage
		if c := e.components[name]; c != nil && c.own != nil && c.own.Running() {
			c.own.Stop(30 * time.Second)
			if c.own.Running() {
				errs = append(errs, fmt.Errorf("%s did not stop", name))
			}
		}
	}
	return errors.Join(errs...)
}
