package kubeauth

import (
	"errors"
	"fmt"
	"net/http"
	"strings"

	"github.com/go-logr/logr"
	authorizationv1 "k8s.io/api/authorization/v1"
	metricsserver "sigs.k8s.io/controller-runtime/pkg/metrics/server"
)

// Filter guards a handler as the API server guards its non-resource URLs (and as
// controller-runtime's filters.WithAuthenticationAndAuthorization guards a controller's
// metrics): the request needs a bearer token whose user RBAC allows the request's verb (the
// method in lower case: get, post...) on its path, e.g. a ClusterRole with
//
//	rules:
//	- nonResourceURLs: ["/metrics"]
//	  verbs: ["get"]
//
// It answers 401 without a valid token, 403 when RBAC says no, and 500 when the API server
// cannot answer. It is a metricsserver.Filter, so it plugs in where controller-runtime's does.
func (r *Reviewer) Filter() metricsserver.Filter {
	return func(log logr.Logger, h http.Handler) (http.Handler, error) {
		return http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
			token, err := BearerToken(req.Header.Get("Authorization"))
			if errors.Is(err, ErrNoAuthorization) {
				unauthorized(w, req.URL.Path+" needs an Authorization: Bearer <token> header")
				return
			}
			if err != nil {
				unauthorized(w, err.Error())
				return
			}
			id, err := r.Authenticate(req.Context(), token)
			if err != nil {
				log.Error(err, "checking a bearer token with the API server", "path", req.URL.Path)
				http.Error(w, "checking the bearer token with the API server failed", http.StatusInternalServerError)
				return
			}
			if !id.Authenticated {
				msg := "the bearer token is not valid"
				if id.Error != "" {
					msg += ": " + id.Error
				}
				unauthorized(w, msg)
				return
			}
			verb := strings.ToLower(req.Method)
			d, err := r.Authorize(req.Context(), id.User, Access{NonResource: &authorizationv1.NonResourceAttributes{Path: req.URL.Path, Verb: verb}})
			if err != nil {
				log.Error(err, "checking a user's access with the API server", "user", id.User.Username, "path", req.URL.Path)
				http.Error(w, "checking the access with the API server failed", http.StatusInternalServerError)
				return
			}
			if !d.Allowed {
				msg := fmt.Sprintf("user %q may not %s %s", id.User.Username, verb, req.URL.Path)
				if d.Reason != "" {
					msg += " (" + d.Reason + ")"
				}
				http.Error(w, msg, http.StatusForbidden)
				return
			}
			h.ServeHTTP(w, req)
		}), nil
	}
}

func unauthorized(w http.ResponseWriter, msg string) {
	w.Header().Set("WWW-Authenticate", `Bearer realm="release-controller"`)
	http.Error(w, msg, http.StatusUnauthorized)
}
