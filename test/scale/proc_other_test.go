//go:build !linux

package scale

import "syscall"

// dieWithParent: only Linux can tie a child's life to its parent's; elsewhere the tests'
// cleanups stop the controller subprocesses.
func dieWithParent() *syscall.SysProcAttr { return nil }
