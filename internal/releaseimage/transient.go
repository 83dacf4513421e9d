package releaseimage

import (
	"context"
	"errors"
	"net"
	"net/http"

	"github.com/google/go-containerregistry/pkg/v1/remote/transport"
)

// Transient reports whether a build failed because the registry could not answer for now
// (unreachable, timed out, a 5xx, or 429 Too Many Requests), so that building again later may
// succeed. A missing image, refused credentials, an invalid component or a cancelled build are
// not transient.
func Transient(err error) bool {
	if err == nil || errors.Is(err, context.Canceled) {
		return false
	}
	var terr *transport.Error
	if errors.As(err, &terr) {
		return terr.StatusCode == http.StatusTooManyRequests || terr.StatusCode >= http.StatusInternalServerError
	}
	var netErr net.Error
	return errors.As(err, &netErr) || errors.Is(err, context.DeadlineExceeded)
}
