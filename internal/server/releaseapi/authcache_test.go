//go:build !unit

package releaseapi_test

import (
	"context"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"connectrpc.com/connect"
	. "github.com/onsi/gomega"
	"google.golang.org/protobuf/types/known/timestamppb"
	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/rest"
	clocktesting "k8s.io/utils/clock/testing"
	"sigs.k8s.io/controller-runtime/pkg/client"

	releasecontrollerv1 "github.com/release-controller/release-controller/internal/gen/releasecontroller/v1"
	"github.com/release-controller/release-controller/internal/releaselog"
	"github.com/release-controller/release-controller/internal/server/releaseapi"
)

// reviewCounter counts the reviews a client sends to the API server, as they leave it.
type reviewCounter struct {
	tokenReviews, accessReviews atomic.Int64
}

type roundTripperFunc func(*http.Request) (*http.Response, error)

func (f roundTripperFunc) RoundTrip(r *http.Request) (*http.Response, error) { return f(r) }

// countingClient is a client of the test's API server whose TokenReviews and
// SubjectAccessReviews are counted on the wire.
func countingClient(t *testing.T, counts *reviewCounter) client.Client {
	t.Helper()
	cfg := rest.CopyConfig(env.Config)
	wrapped := cfg.WrapTransport
	cfg.WrapTransport = func(rt http.RoundTripper) http.RoundTripper {
		if wrapped != nil {
			rt = wrapped(rt)
		}
		return roundTripperFunc(func(r *http.Request) (*http.Response, error) {
			if r.Method == http.MethodPost {
				switch {
				case strings.HasSuffix(r.URL.Path, "/apis/authentication.k8s.io/v1/tokenreviews"):
					counts.tokenReviews.Add(1)
				case strings.HasSuffix(r.URL.Path, "/apis/authorization.k8s.io/v1/subjectaccessreviews"):
					counts.accessReviews.Add(1)
				}
			}
			return rt.RoundTrip(r)
		})
	}
	c, err := client.New(cfg, client.Options{Scheme: env.Client.Scheme()})
	if err != nil {
		t.Fatal(err)
	}
	return c
}

// A burst of writes with one token costs the API server one TokenReview and one
// SubjectAccessReview; refusals are remembered too, briefly; once an answer expires the next
// write asks again, and sees a revoked role binding.
func TestWritesShareCachedReviews(t *testing.T) {
	var counts reviewCounter
	clock := clocktesting.NewFakeClock(time.Now())
	w := newWriteEnvAuth(t, releaselog.Options{Types: releaselog.DefaultTypes()}, func(ns string) *releaseapi.Authorizer {
		return releaseapi.NewAuthorizerWithOptions(countingClient(t, &counts), ns, releaseapi.AuthorizerOptions{Clock: clock})
	})
	c := newClient(t, w.url, protocols[0])
	ctx := context.Background()
	date := timestamppb.New(time.Now().Add(-24 * time.Hour))
	add := func(token, version string) error {
		_, err := c.AddRelease(ctx, withBearer(addRequest(&releasecontrollerv1.Release{Type: "release", Version: version, Origin: "ci", Date: date}), token))
		return err
	}
	expectReviews := func(step string, tokenReviews, accessReviews int64) {
		t.Helper()
		if tr, sar := counts.tokenReviews.Load(), counts.accessReviews.Load(); tr != tokenReviews || sar != accessReviews {
			t.Errorf("%s: %d TokenReviews and %d SubjectAccessReviews so far, want %d and %d", step, tr, sar, tokenReviews, accessReviews)
		}
	}

	// A burst of 20 concurrent writes, then 5 more one after the other.
	var wg sync.WaitGroup
	errs := make(chan error, 20)
	for i := range 20 {
		wg.Go(func() { errs <- add(w.writerToken, "1.0."+strconv.Itoa(i)) })
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		if err != nil {
			t.Fatalf("a write of the burst: %v", err)
		}
	}
	for i := range 5 {
		if err := add(w.writerToken, "1.1."+strconv.Itoa(i)); err != nil {
			t.Fatal(err)
		}
	}
	expectReviews("25 writes with one token", 1, 1)

	// Refusals are cached as well: a user RBAC denies, a token the API server does not know.
	for range 3 {
		expectCode(t, add(w.readerToken, "2.0.0"), connect.CodePermissionDenied)
		expectCode(t, add("not-a-token-the-api-server-issued", "2.0.0"), connect.CodeUnauthenticated)
	}
	expectReviews("3 denied and 3 unauthenticated writes", 3, 2)

	// After the denied answers' time to live, those are asked again; the writer's answers
	// still hold, and so does the reader's authentication (a yes, kept longer).
	clock.Step(releaseapi.DefaultDeniedTTL + time.Second)
	expectCode(t, add(w.readerToken, "2.0.0"), connect.CodePermissionDenied)
	expectCode(t, add("not-a-token-the-api-server-issued", "2.0.0"), connect.CodeUnauthenticated)
	if err := add(w.writerToken, "1.2.0"); err != nil {
		t.Fatal(err)
	}
	expectReviews("after the denied answers expired", 4, 3)

	// Revoke the writer's role binding: the cached yes holds until it expires, then the next
	// write asks again and is refused.
	binding := &rbacv1.RoleBinding{ObjectMeta: metav1.ObjectMeta{Namespace: w.parts.Namespace, Name: "release-log-writer"}}
	if err := env.Client.Delete(ctx, binding); err != nil {
		t.Fatal(err)
	}
	eventually(t, func(g Gomega) {
		allowed, err := allowed(ctx, w.parts.Namespace, w.writerUser, "entries")
		g.Expect(err).NotTo(HaveOccurred())
		g.Expect(allowed).To(BeFalse(), "the API server still applies the deleted binding")
	})
	if err := add(w.writerToken, "1.3.0"); err != nil {
		t.Errorf("within its time to live the writer's cached permission was not used: %v", err)
	}
	expectReviews("a write within the allowed answers' time to live", 4, 3)
	clock.Step(releaseapi.DefaultAllowedTTL)
	expectCode(t, add(w.writerToken, "1.4.0"), connect.CodePermissionDenied)
	expectReviews("after the allowed answers expired", 5, 4)
}
