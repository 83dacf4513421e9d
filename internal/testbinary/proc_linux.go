package testbinary

import "syscall"

// dieWithParent has the kernel kill the subprocess when the test process dies before its
// cleanup ran (a panic, go test's timeout, ^C), so no controller outlives the test.
func dieWithParent(attr *syscall.SysProcAttr) { attr.Pdeathsig = syscall.SIGKILL }
