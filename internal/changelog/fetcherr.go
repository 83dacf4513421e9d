package changelog

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"net"
	"syscall"
	"time"

	"github.com/go-git/go-git/v5/plumbing/transport"
	"k8s.io/apimachinery/pkg/api/resource"
)

// FetchError is a clone or fetch that failed. Its message is the status the pages show
// ("the repository could not be fetched (timed out …)"), decided from the kind of failure
// only: the remote's own text (an error page, a git "ERR" line) is never part of it, as
// pages are public and the remote is whoever the source label names. Err, the whole error,
// is for the server's log (RepoCacheOptions.OnFetchError).
type FetchError struct {
	URL    string
	Status string
	Err    error
}

func (e *FetchError) Error() string { return "the repository could not be fetched (" + e.Status + ")" }

func (e *FetchError) Unwrap() error { return e.Err }

// fetchStatus says what became of a fetch, from what its guard saw and the error's kind.
func fetchStatus(err error, st *fetchState, timeout time.Duration, timedOut bool) string {
	var refused *AddressRefusedError
	switch {
	case st != nil && st.refusal() != nil:
		refused = st.refusal()
		return "refused: address is " + refused.Class
	case errors.As(err, &refused):
		return "refused: address is " + refused.Class
	case (st != nil && st.tooLarge.Load()) || errors.Is(err, ErrFetchTooLarge):
		limit := int64(0)
		if st != nil {
			limit = st.guard.maxBytes
		}
		return fmt.Sprintf("too large: more than %s received", resource.NewQuantity(limit, resource.BinarySI))
	case timedOut:
		return fmt.Sprintf("timed out after %s", timeout)
	case errors.Is(err, transport.ErrAuthenticationRequired):
		return "authentication required"
	case errors.Is(err, transport.ErrAuthorizationFailed):
		return "authorization failed"
	case errors.Is(err, transport.ErrRepositoryNotFound):
		return "repository not found"
	case errors.Is(err, transport.ErrEmptyRemoteRepository):
		return "the repository is empty"
	case errors.Is(err, context.DeadlineExceeded):
		return "timed out"
	}
	var dns *net.DNSError
	if errors.As(err, &dns) {
		if dns.IsNotFound {
			return "host not found"
		}
		return "the host's name could not be resolved"
	}
	if errors.Is(err, syscall.ECONNREFUSED) {
		return "connection refused"
	}
	var unknownCA x509.UnknownAuthorityError
	var hostname x509.HostnameError
	var verify *tls.CertificateVerificationError
	if errors.As(err, &unknownCA) || errors.As(err, &hostname) || errors.As(err, &verify) {
		return "its TLS certificate is not trusted"
	}
	var netErr net.Error
	if errors.As(err, &netErr) && netErr.Timeout() {
		return "timed out"
	}
	return "failed; the server’s log has the details"
}

// PublicMessage is what a public page may say of an error of PayloadChangeLogs (a changelog
// that could not be computed) or of reading a payload image: the status of a FetchError, that
// it timed out, or that it failed. The rest of an error may hold what a remote answered (a
// registry's or git server's error text, named by a tenant's stream or an image's label):
// the page says the server's log has it.
func PublicMessage(err error) string {
	var fe *FetchError
	var noImage *NoImageError
	switch {
	case err == nil:
		return ""
	case errors.As(err, &fe):
		return fe.Error()
	case errors.As(err, &noImage):
		return noImage.Error()
	case errors.Is(err, context.DeadlineExceeded):
		return "it timed out"
	case errors.Is(err, context.Canceled):
		return "it was canceled"
	}
	return "it failed; the server’s log has the details"
}

// NoImageError is a payload without an image yet: there is nothing to compute a changelog from.
type NoImageError struct{ Payload string }

func (e *NoImageError) Error() string { return fmt.Sprintf("payload %s has no image yet", e.Payload) }
