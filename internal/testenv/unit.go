//go:build unit

package testenv

// startsUnderUnit says a test binary built for `make unit` tried to start an API server: its
// file lacks //go:build !unit.
const startsUnderUnit = true
