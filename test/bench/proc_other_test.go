//go:build !linux

package bench

import "syscall"

// dieWithParent needs Linux's parent-death signal; elsewhere the deferred stop is all there is.
func dieWithParent(*syscall.SysProcAttr) {}
