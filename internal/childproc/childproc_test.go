package childproc

import (
	"os"
	"os/exec"
	"testing"
)

func TestChildrenAndAlive(t *testing.T) {
	cmd := exec.Command("sleep", "60")
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = cmd.Process.Kill(); _ = cmd.Wait() })
	children, err := Children(os.Getpid(), "sleep")
	if err != nil {
		t.Fatal(err)
	}
	if len(children) != 1 || children[0].Pid != cmd.Process.Pid || children[0].Argv[1] != "60" {
		t.Fatalf("children named sleep: %+v, want pid %d", children, cmd.Process.Pid)
	}
	p := children[0]
	if !Alive(p) {
		t.Fatal("the running sleep is not alive")
	}
	if reused := (Process{Pid: p.Pid, Start: p.Start + 1}); Alive(reused) {
		t.Error("a process started at another time under the same pid reads as alive")
	}
	_ = cmd.Process.Kill()
	_ = cmd.Wait()
	if Alive(p) {
		t.Error("the killed sleep is alive")
	}
}
