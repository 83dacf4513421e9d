//go:build !unit

package releaseapi_test

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"connectrpc.com/connect"
	. "github.com/onsi/gomega"
	"google.golang.org/protobuf/types/known/timestamppb"
	authenticationv1 "k8s.io/api/authentication/v1"
	authorizationv1 "k8s.io/api/authorization/v1"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/release-controller/release-controller/api/v1alpha1"
	releasecontrollerv1 "github.com/release-controller/release-controller/internal/gen/releasecontroller/v1"
	"github.com/release-controller/release-controller/internal/releaselog"
	"github.com/release-controller/release-controller/internal/server/releaseapi"
)

// writeEnv is the release log of a namespace, with its controllers running, served over HTTP,
// and four service accounts: writer and other, whom a Role allows to add entries (create
// releaselogs/entries); direct, whom a Role allows to write ReleaseLog objects (create, get,
// update and patch releaselogs) but not to add entries; and reader, who may do neither.
type writeEnv struct {
	url   string
	parts *logParts
	// Tokens and usernames of the service accounts.
	writerToken, readerToken, otherToken, directToken string
	writerUser, readerUser, otherUser, directUser     string
}

func newWriteEnv(t *testing.T) *writeEnv {
	t.Helper()
	return newWriteEnvWith(t, releaselog.Options{Types: releaselog.DefaultTypes()})
}

// newWriteEnvWith is newWriteEnv with the release log configured by opts.
func newWriteEnvWith(t *testing.T, opts releaselog.Options) *writeEnv {
	t.Helper()
	return newWriteEnvAuth(t, opts, nil)
}

// newWriteEnvAuth is newWriteEnvWith whose service asks the authorizer auth returns for the
// namespace (nil: the default authorizer on the test's client).
func newWriteEnvAuth(t *testing.T, opts releaselog.Options, auth func(ns string) *releaseapi.Authorizer) *writeEnv {
	t.Helper()
	ctx := context.Background()
	ns := env.Namespace(t)
	parts := startLog(t, ns, opts)
	for _, name := range []string{"writer", "reader", "other", "direct"} {
		sa := &corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name}}
		if err := env.Client.Create(ctx, sa); err != nil {
			t.Fatal(err)
		}
	}
	// The Role config/samples/tenant/releaselog-writer.yaml tells administrators to grant.
	role := &rbacv1.Role{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "release-log-writer"},
		Rules:      []rbacv1.PolicyRule{{APIGroups: []string{"release-controller.dev"}, Resources: []string{"releaselogs/entries"}, Verbs: []string{"create"}}},
	}
	binding := &rbacv1.RoleBinding{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "release-log-writer"},
		RoleRef:    rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "Role", Name: role.Name},
		Subjects: []rbacv1.Subject{
			{Kind: rbacv1.ServiceAccountKind, Namespace: ns, Name: "writer"},
			{Kind: rbacv1.ServiceAccountKind, Namespace: ns, Name: "other"},
		},
	}
	// Write access to the objects themselves, which used to be what AddRelease asked for.
	objectRole := &rbacv1.Role{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "release-log-objects"},
		Rules: []rbacv1.PolicyRule{{APIGroups: []string{"release-controller.dev"}, Resources: []string{"releaselogs"},
			Verbs: []string{"create", "get", "update", "patch"}}},
	}
	objectBinding := &rbacv1.RoleBinding{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "release-log-objects"},
		RoleRef:    rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "Role", Name: objectRole.Name},
		Subjects:   []rbacv1.Subject{{Kind: rbacv1.ServiceAccountKind, Namespace: ns, Name: "direct"}},
	}
	for _, obj := range []client.Object{role, binding, objectRole, objectBinding} {
		if err := env.Client.Create(ctx, obj); err != nil {
			t.Fatal(err)
		}
	}
	authorizer := releaseapi.NewAuthorizer(env.Client, ns)
	if auth != nil {
		authorizer = auth(ns)
	}
	w := &writeEnv{
		url: serveWith(t, parts, authorizer), parts: parts,
		writerToken: mintToken(t, ns, "writer"), readerToken: mintToken(t, ns, "reader"), otherToken: mintToken(t, ns, "other"),
		directToken: mintToken(t, ns, "direct"),
		writerUser:  serviceAccountUser(ns, "writer"), readerUser: serviceAccountUser(ns, "reader"), otherUser: serviceAccountUser(ns, "other"),
		directUser: serviceAccountUser(ns, "direct"),
	}
	// The API server's RBAC authorizer learns of the new binding from its own informers:
	// wait until it does, so the tests below see a settled policy.
	for _, user := range []string{w.writerUser, w.otherUser} {
		eventually(t, func(g Gomega) {
			g.Expect(allowed(ctx, ns, user, "entries")).To(BeTrue(), "the role binding of %s is not in effect yet", user)
		})
	}
	eventually(t, func(g Gomega) {
		g.Expect(allowed(ctx, ns, w.directUser, "")).To(BeTrue(), "the role binding of %s is not in effect yet", w.directUser)
	})
	return w
}

func serviceAccountUser(ns, name string) string { return "system:serviceaccount:" + ns + ":" + name }

// allowed asks the API server directly whether a service account's user may create
// releaselogs (subresource "") or releaselogs/<subresource> in the namespace.
func allowed(ctx context.Context, ns, user, subresource string) (bool, error) {
	sar := &authorizationv1.SubjectAccessReview{Spec: authorizationv1.SubjectAccessReviewSpec{
		User: user, Groups: []string{"system:serviceaccounts", "system:serviceaccounts:" + ns, "system:authenticated"},
		ResourceAttributes: &authorizationv1.ResourceAttributes{Namespace: ns, Verb: "create", Group: "release-controller.dev", Resource: "releaselogs", Subresource: subresource},
	}}
	if err := env.Client.Create(ctx, sar); err != nil {
		return false, err
	}
	return sar.Status.Allowed, nil
}

// mintToken asks the API server for a token of a service account (the TokenRequest API, what
// kubectl create token does).
func mintToken(t *testing.T, ns, name string) string {
	t.Helper()
	cs, err := kubernetes.NewForConfig(env.Config)
	if err != nil {
		t.Fatal(err)
	}
	req := &authenticationv1.TokenRequest{Spec: authenticationv1.TokenRequestSpec{ExpirationSeconds: ptr.To[int64](3600)}}
	resp, err := cs.CoreV1().ServiceAccounts(ns).CreateToken(context.Background(), name, req, metav1.CreateOptions{})
	if err != nil {
		t.Fatalf("minting a token for %s/%s: %v", ns, name, err)
	}
	return resp.Status.Token
}

func addRequest(r *releasecontrollerv1.Release) *connect.Request[releasecontrollerv1.AddReleaseRequest] {
	return connect.NewRequest(&releasecontrollerv1.AddReleaseRequest{Release: r})
}

func TestAddReleaseNeedsAnAllowedCaller(t *testing.T) {
	w := newWriteEnv(t)
	ctx := context.Background()
	var added []string
	for _, p := range protocols {
		t.Run(p.name, func(t *testing.T) {
			c := newClient(t, w.url, p)
			release := func(version string) *releasecontrollerv1.Release {
				return &releasecontrollerv1.Release{Type: "release", Version: version, Origin: "ci", Message: "via " + p.name}
			}

			_, err := c.AddRelease(ctx, addRequest(release("anonymous")))
			t.Logf("anonymous: %v", err)
			expectCode(t, err, connect.CodeUnauthenticated)

			req := addRequest(release("basic"))
			req.Header().Set("Authorization", "Basic d3JpdGVyOnNlY3JldA==")
			_, err = c.AddRelease(ctx, req)
			t.Logf("basic auth: %v", err)
			expectCode(t, err, connect.CodeUnauthenticated)

			_, err = c.AddRelease(ctx, withBearer(addRequest(release("empty-token")), ""))
			t.Logf("empty token: %v", err)
			expectCode(t, err, connect.CodeUnauthenticated)

			_, err = c.AddRelease(ctx, withBearer(addRequest(release("bad-token")), "not-a-token-the-api-server-issued"))
			t.Logf("bad token: %v", err)
			expectCode(t, err, connect.CodeUnauthenticated)

			// A valid token of a service account that RBAC does not allow to write.
			_, err = c.AddRelease(ctx, withBearer(addRequest(release("denied")), w.readerToken))
			t.Logf("denied: %v", err)
			msg := expectCode(t, err, connect.CodePermissionDenied)
			for _, want := range []string{w.readerUser, "create releaselogs/entries (group release-controller.dev)", w.parts.Namespace} {
				if !strings.Contains(msg, want) {
					t.Errorf("the denial %q does not say %q", msg, want)
				}
			}

			version := "1.0.0-" + p.name
			before := time.Now()
			resp, err := c.AddRelease(ctx, withBearer(addRequest(release(version)), w.writerToken))
			after := time.Now()
			if err != nil {
				t.Fatalf("the allowed writer was refused: %v", err)
			}
			// No date: the entry is dated now.
			if day := resp.Msg.Day; day != releaselog.DayOf(before) && day != releaselog.DayOf(after) {
				t.Errorf("added to %s, want today", day)
			}
			added = append(added, version)
			eventually(t, func(g Gomega) {
				var got *releaselog.Entry
				for _, e := range w.parts.Store.Entries(resp.Msg.Day) {
					if e.Version == version {
						got = &e
					}
				}
				g.Expect(got).NotTo(BeNil(), "the added entry is not in the store")
				// No author given: the caller is the author, and the entry is sealed.
				g.Expect(got.Author).To(Equal(w.writerUser))
				g.Expect(got.Verified).To(BeTrue(), "the added entry is not verified")
				g.Expect(got.Message).To(Equal("via " + p.name))
			})
		})
	}

	// Only the allowed adds wrote anything.
	if versions := storedVersions(t, w.parts.Namespace); fmt.Sprint(versions) != fmt.Sprint(added) {
		t.Errorf("the API server holds %v, want only the allowed adds %v", versions, added)
	}
}

// storedVersions reads the versions of every entry of the namespace's release log from the API
// server (not the store, which follows it a moment later).
func storedVersions(t *testing.T, ns string) []string {
	t.Helper()
	var logs v1alpha1.ReleaseLogList
	if err := env.Client.List(context.Background(), &logs, client.InNamespace(ns)); err != nil {
		t.Fatal(err)
	}
	var versions []string
	for _, l := range logs.Items {
		for _, e := range l.Spec.Entries {
			versions = append(versions, e.Version)
		}
	}
	return versions
}

func TestAddReleaseMapsTheEntry(t *testing.T) {
	w := newWriteEnv(t)
	c := newClient(t, w.url, protocols[0])
	date := time.Now().UTC().Add(-48 * time.Hour).Truncate(time.Second)
	r := &releasecontrollerv1.Release{
		Type: "hotfix", Version: "4.15.1", Origin: "jenkins", Date: timestamppb.New(date),
		Author: "alice", Message: "fixes the login", Link: "https://ci.example.com/job/42",
	}
	resp, err := c.AddRelease(context.Background(), withBearer(addRequest(r), w.writerToken))
	if err != nil {
		t.Fatal(err)
	}
	if resp.Msg.Day != releaselog.DayOf(date) {
		t.Errorf("added to %s, want the entry's day %s", resp.Msg.Day, releaselog.DayOf(date))
	}
	// The author is the caller; the author the request named is kept as the reported author.
	want := releaselog.Entry{Type: "hotfix", Version: "4.15.1", Origin: "jenkins", Date: date, Author: w.writerUser, ReportedAuthor: "alice",
		Message: "fixes the login", Link: "https://ci.example.com/job/42", Verified: true}
	eventually(t, func(g Gomega) {
		g.Expect(w.parts.Store.Entries(resp.Msg.Day)).To(Equal([]releaselog.Entry{want}))
	})
	// And it reads back through the API as written.
	listed, err := list(c, &releasecontrollerv1.ListReleasesRequest{Day: resp.Msg.Day})
	if err != nil {
		t.Fatal(err)
	}
	got := listed.Releases[0]
	if got.Type != r.Type || got.Version != r.Version || got.Origin != r.Origin || !got.Date.AsTime().Equal(date) ||
		got.Author != w.writerUser || got.ReportedAuthor != "alice" || got.Message != r.Message || got.Link != r.Link || !got.Verified {
		t.Errorf("listed %v, want %v", got, r)
	}
}

func TestAddReleaseErrors(t *testing.T) {
	w := newWriteEnv(t)
	c := newClient(t, w.url, protocols[0])
	now := time.Now()
	for _, tc := range []struct {
		name    string
		release *releasecontrollerv1.Release
		code    connect.Code
		says    string
	}{
		{"no release", nil, connect.CodeInvalidArgument, "release is required"},
		{"no origin", &releasecontrollerv1.Release{Type: "release", Version: "1.0.0"}, connect.CodeInvalidArgument, "origin"},
		{"no type", &releasecontrollerv1.Release{Version: "1.0.0", Origin: "ci"}, connect.CodeInvalidArgument, "type"},
		{"no version", &releasecontrollerv1.Release{Type: "release", Origin: "ci"}, connect.CodeInvalidArgument, "version"},
		{"type not allowed", &releasecontrollerv1.Release{Type: "party", Version: "1.0.0", Origin: "ci"}, connect.CodeInvalidArgument, "party"},
		{"invalid date", &releasecontrollerv1.Release{Type: "release", Version: "1.0.0", Origin: "ci", Date: &timestamppb.Timestamp{Nanos: -1}}, connect.CodeInvalidArgument, "date"},
		{"dated in the future", &releasecontrollerv1.Release{Type: "release", Version: "1.0.0", Origin: "ci", Date: timestamppb.New(now.Add(24 * time.Hour))}, connect.CodeInvalidArgument, "future"},
		{"day expired", &releasecontrollerv1.Release{Type: "release", Version: "1.0.0", Origin: "ci", Date: timestamppb.New(now.Add(-60 * 24 * time.Hour))}, connect.CodeFailedPrecondition, "older"},
		{"link not a URL", &releasecontrollerv1.Release{Type: "release", Version: "1.0.0", Origin: "ci", Link: "not a link"}, connect.CodeInvalidArgument, "link"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := c.AddRelease(context.Background(), withBearer(addRequest(tc.release), w.writerToken))
			t.Logf("%v", err)
			if msg := expectCode(t, err, tc.code); !strings.Contains(msg, tc.says) {
				t.Errorf("the error %q does not mention %q", msg, tc.says)
			}
		})
	}
	if versions := storedVersions(t, w.parts.Namespace); len(versions) != 0 {
		t.Errorf("refused adds wrote %v", versions)
	}
}

func TestAddReleaseToAFullDayIsAFailedPrecondition(t *testing.T) {
	w := newWriteEnvWith(t, releaselog.Options{Types: releaselog.DefaultTypes(), MaxEntriesPerDay: 2})
	c := newClient(t, w.url, protocols[0])
	// Dated a day back, so that all three fall on one day whenever the test runs.
	date := timestamppb.New(time.Now().Add(-24 * time.Hour))
	add := func(version string) error {
		_, err := c.AddRelease(context.Background(), withBearer(addRequest(&releasecontrollerv1.Release{
			Type: "release", Version: version, Origin: "ci", Date: date,
		}), w.writerToken))
		return err
	}
	for _, v := range []string{"1.0.0", "1.0.1"} {
		if err := add(v); err != nil {
			t.Fatal(err)
		}
	}
	err := add("1.0.2")
	t.Logf("%v", err)
	if msg := expectCode(t, err, connect.CodeFailedPrecondition); !strings.Contains(msg, "full") || !strings.Contains(msg, "limit of 2 entries a day (--log-max-entries)") {
		t.Errorf("the error %q does not say the day is full and its limit", msg)
	}
	if versions := storedVersions(t, w.parts.Namespace); fmt.Sprint(versions) != "[1.0.0 1.0.1]" {
		t.Errorf("the API server holds %v, want the first two", versions)
	}
}
