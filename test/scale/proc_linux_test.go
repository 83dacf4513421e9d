package scale

import "syscall"

// dieWithParent has the kernel kill a controller subprocess when the test process dies before
// its cleanup ran (a panic, a test timeout), so no controller outlives the test.
func dieWithParent() *syscall.SysProcAttr {
	return &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
}
