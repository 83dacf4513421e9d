package approval

import (
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/release-controller/release-controller/internal/pipeline/signature"
	"github.com/release-controller/release-controller/internal/server"
)

// A route whose namespace or pipeline name no object can have is a pipeline not found (404),
// answered before anything is read: the client refuses to ask the API server for names with
// '/' or '%' or "..", and that refusal used to answer 500. The handler has no client here, so
// a read would panic.
func TestInvalidNamesAreNotFound(t *testing.T) {
	s := server.New()
	Register(s, &Handler{Verifier: signature.NewVerifier(nil), Now: time.Now})
	for _, path := range []string{
		"/pipelines/%2e%2e/web/staging/1.0.0/approve",
		"/pipelines/ns/%2e%2e/staging/1.0.0/approve",
		"/pipelines/ns/a%2fb/staging/1.0.0/approve",
		"/pipelines/%25/web/staging/1.0.0/approve",
		"/pipelines/ns/a%25b/staging/1.0.0/approve",
		"/pipelines/NS/web/staging/1.0.0/approve",
		"/pipelines/ns/" + strings.Repeat("a", 254) + "/staging/1.0.0/approve",
	} {
		req := httptest.NewRequest(http.MethodPost, path, nil)
		req.Header.Set(signature.HeaderTimestamp, time.Now().UTC().Format(time.RFC3339))
		req.Header.Set(signature.HeaderSignature, "sha256="+strings.Repeat("0", 64))
		rec := httptest.NewRecorder()
		s.Handler().ServeHTTP(rec, req)
		if rec.Code != http.StatusNotFound || !strings.Contains(rec.Body.String(), "not found") {
			t.Errorf("POST %s: %d %s, want 404", path, rec.Code, rec.Body)
		}
	}
}
