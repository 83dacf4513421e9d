package kubeauth

import (
	"errors"
	"testing"

	authenticationv1 "k8s.io/api/authentication/v1"
	authorizationv1 "k8s.io/api/authorization/v1"
)

func TestBearerToken(t *testing.T) {
	for _, tc := range []struct {
		header, token string
		err           error
	}{
		{"Bearer abc", "abc", nil},
		{"bearer  abc ", "abc", nil},
		{"", "", ErrNoAuthorization},
		{"Basic d3JpdGVyOnNlY3JldA==", "", ErrNotBearer},
		{"Bearer", "", ErrEmptyToken},
		{"Bearer    ", "", ErrEmptyToken},
	} {
		token, err := BearerToken(tc.header)
		if token != tc.token || !errors.Is(err, tc.err) {
			t.Errorf("BearerToken(%q) = %q, %v; want %q, %v", tc.header, token, err, tc.token, tc.err)
		}
	}
}

// The access key covers everything a SubjectAccessReview decides on, and nothing else: the
// order of groups and extra values does not matter, every other difference does.
func TestAccessKey(t *testing.T) {
	user := authenticationv1.UserInfo{Username: "alice", UID: "1", Groups: []string{"a", "b"},
		Extra: map[string]authenticationv1.ExtraValue{"scopes": {"x", "y"}}}
	create := Access{Resource: &authorizationv1.ResourceAttributes{Namespace: "ns", Verb: "create", Group: "release-controller.dev", Resource: "releaselogs"}}
	base := accessKey(user, create)

	same := user
	same.Groups = []string{"b", "a"}
	same.Extra = map[string]authenticationv1.ExtraValue{"scopes": {"y", "x"}}
	if accessKey(same, create) != base {
		t.Errorf("the order of groups or extra values changed the key")
	}

	differs := map[string]string{}
	add := func(name string, u authenticationv1.UserInfo, a Access) {
		key := accessKey(u, a)
		if key == base {
			t.Errorf("%s: same key as the base", name)
		}
		if other, ok := differs[key]; ok {
			t.Errorf("%s and %s: same key", name, other)
		}
		differs[key] = name
	}
	u := user
	u.Username = "bob"
	add("another user", u, create)
	u = user
	u.UID = "2"
	add("another uid", u, create)
	u = user
	u.Groups = []string{"a"}
	add("fewer groups", u, create)
	u = user
	u.Groups = []string{"a", "b", ""}
	add("an empty group more", u, create)
	u = user
	u.Extra = nil
	add("no extra", u, create)
	// Length prefixes keep shifted boundaries apart.
	u = user
	u.Username, u.UID = "alice1", ""
	add("shifted boundary", u, create)
	get := *create.Resource
	get.Verb = "get"
	add("another verb", user, Access{Resource: &get})
	other := *create.Resource
	other.Namespace = "other"
	add("another namespace", user, Access{Resource: &other})
	add("a non-resource URL", user, Access{NonResource: &authorizationv1.NonResourceAttributes{Path: "/metrics", Verb: "get"}})
	add("another non-resource URL", user, Access{NonResource: &authorizationv1.NonResourceAttributes{Path: "/healthz", Verb: "get"}})
}
