package bench

import "syscall"

// dieWithParent makes the kernel kill the subprocess when the benchmark process dies, so a
// benchmark killed by go test's timeout or ^C leaves no release-controller behind.
func dieWithParent(attr *syscall.SysProcAttr) { attr.Pdeathsig = syscall.SIGKILL }
