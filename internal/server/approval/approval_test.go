package approval

import (
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/release-controller/release-controller/api/v1alpha1"
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

// pipelines is a cache holding the given pipelines.
type pipelines []*v1alpha1.Pipeline

func (ps pipelines) Pipeline(namespace, name string) (*v1alpha1.Pipeline, bool) {
	for _, p := range ps {
		if p.Namespace == namespace && p.Name == name {
			return p, true
		}
	}
	return nil, false
}

// A signed request to an environment whose approval has no secretRef (bearer tokens only) is
// refused naming the field, before any key or pipeline is read: the handler has no client
// and no keys here. It used to dereference the absent reference.
func TestSignedWithoutSecretRef(t *testing.T) {
	p := &v1alpha1.Pipeline{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "web"}, Spec: v1alpha1.PipelineSpec{
		Environments: []v1alpha1.Environment{{Name: "prod", Approval: &v1alpha1.Approval{MinApprovers: 1}}},
	}}
	s := server.New()
	Register(s, &Handler{Pipelines: pipelines{p}, Verifier: signature.NewVerifier(nil), Now: time.Now})
	path := "/pipelines/ns/web/prod/1.0.0/approve"
	ts := time.Now().UTC().Format(time.RFC3339)
	req := httptest.NewRequest(http.MethodPost, path, nil)
	req.Header.Set(signature.HeaderTimestamp, ts)
	req.Header.Set(signature.HeaderSignature, signature.Header([]byte("any key"), http.MethodPost, path, ts, nil))
	rec := httptest.NewRecorder()
	s.Handler().ServeHTTP(rec, req)
	if rec.Code != http.StatusForbidden || !strings.Contains(rec.Body.String(), `environment "prod" has no approval.secretRef`) {
		t.Errorf("POST %s: %d %s, want 403 naming approval.secretRef", path, rec.Code, rec.Body)
	}
}
