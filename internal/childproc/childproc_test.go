package childproc

import (
	"bufio"
	"os"
	"os/exec"
	"path/filepath"
	"testing"
	"time"
)

// childEnv makes the test binary, started again, a child that says it runs and then waits.
const childEnv = "CHILDPROC_TEST_CHILD"

func TestMain(m *testing.M) {
	if os.Getenv(childEnv) != "" {
		_, _ = os.Stdout.WriteString("running\n")
		time.Sleep(time.Hour)
		os.Exit(0)
	}
	os.Exit(m.Run())
}

func TestChildrenAndAlive(t *testing.T) {
	self, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(self, "-test.run=^$", "marker-argument")
	cmd.Env = append(os.Environ(), childEnv+"=1")
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = cmd.Process.Kill(); _ = cmd.Wait() })
	// cmd.Start returns while the kernel may still be loading the new program (its command
	// line reads empty then); the child's own line says the exec is over.
	if line, err := bufio.NewReader(out).ReadString('\n'); err != nil || line != "running\n" {
		t.Fatalf("the child said %q, %v", line, err)
	}

	children, err := Children(os.Getpid(), filepath.Base(self))
	if err != nil {
		t.Fatal(err)
	}
	if len(children) != 1 || children[0].Pid != cmd.Process.Pid || children[0].Argv[2] != "marker-argument" {
		t.Fatalf("children named %s: %+v, want pid %d", filepath.Base(self), children, cmd.Process.Pid)
	}
	if others, err := Children(os.Getpid(), "no-such-command"); err != nil || len(others) != 0 {
		t.Errorf("children named no-such-command: %+v, %v", others, err)
	}
	p := children[0]
	if !Alive(p) {
		t.Fatal("the running child is not alive")
	}
	if reused := (Process{Pid: p.Pid, Start: p.Start + 1}); Alive(reused) {
		t.Error("a process started at another time under the same pid reads as alive")
	}
	_ = cmd.Process.Kill()
	_ = cmd.Wait()
	if Alive(p) {
		t.Error("the killed child is alive")
	}
}
