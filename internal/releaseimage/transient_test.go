package releaseimage

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"os"
	"syscall"
	"testing"

	"github.com/google/go-containerregistry/pkg/v1/remote/transport"
)

func TestTransient(t *testing.T) {
	refused := &net.OpError{Op: "dial", Net: "tcp", Err: os.NewSyscallError("connect", syscall.ECONNREFUSED)}
	for _, tc := range []struct {
		name string
		err  error
		want bool
	}{
		{"no error", nil, false},
		{"connection refused", fmt.Errorf("pushing: %w", refused), true},
		{"registry named around it", unreachable(refused, "registry.example.com"), true},
		{"response timeout", fmt.Errorf("reading: %w", context.DeadlineExceeded), true},
		{"503", &transport.Error{StatusCode: http.StatusServiceUnavailable}, true},
		{"500", fmt.Errorf("x: %w", &transport.Error{StatusCode: http.StatusInternalServerError}), true},
		{"429", &transport.Error{StatusCode: http.StatusTooManyRequests}, true},
		{"404", &transport.Error{StatusCode: http.StatusNotFound}, false},
		{"401", &transport.Error{StatusCode: http.StatusUnauthorized}, false},
		{"cancelled", fmt.Errorf("x: %w", context.Canceled), false},
		{"invalid component", errors.New(`component "api": image "x" is not a pull spec by digest`), false},
	} {
		if got := Transient(tc.err); got != tc.want {
			t.Errorf("%s: Transient(%v) = %v, want %v", tc.name, tc.err, got, tc.want)
		}
	}
}
