package changelog

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"net/http"
	"net/http/httptest"
	"net/http/httputil"
	"net/netip"
	"net/url"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/go-git/go-git/v5/plumbing"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"

	"github.com/release-controller/release-controller/api/v1alpha1"
	"github.com/release-controller/release-controller/internal/pipeline/gittest"
)

func TestClassifyAddress(t *testing.T) {
	for addr, want := range map[string]string{
		"127.0.0.1":            "loopback",
		"127.255.0.9":          "loopback",
		"::1":                  "loopback",
		"::ffff:127.0.0.1":     "loopback", // IPv4-mapped
		"64:ff9b::7f00:1":      "loopback", // NAT64 of 127.0.0.1
		"10.1.2.3":             "private",
		"172.16.0.1":           "private",
		"172.31.255.255":       "private",
		"192.168.1.1":          "private",
		"::ffff:10.0.0.1":      "private",
		"fd00::1":              "private", // unique local
		"fc00::1":              "private",
		"fec0::1":              "private", // site-local
		"169.254.169.254":      "link-local",
		"fe80::1":              "link-local",
		"fe80::1%eth0":         "link-local",
		"0.0.0.0":              "unspecified",
		"::":                   "unspecified",
		"224.0.0.1":            "multicast",
		"ff02::1":              "multicast",
		"255.255.255.255":      "broadcast",
		"100.64.0.10":          "shared (100.64.0.0/10, used inside clusters)",
		"240.0.0.1":            "reserved",
		"::7f00:1":             "reserved", // IPv4-compatible
		"8.8.8.8":              "",
		"140.82.112.3":         "", // github.com
		"172.32.0.1":           "", // just past 172.16.0.0/12
		"100.128.0.1":          "", // just past 100.64.0.0/10
		"2606:4700:4700::1111": "",
		"64:ff9b::808:808":     "", // NAT64 of 8.8.8.8
	} {
		if got := ClassifyAddress(netip.MustParseAddr(addr)); got != want {
			t.Errorf("ClassifyAddress(%s) = %q, want %q", addr, got, want)
		}
	}
	if got := ClassifyAddress(netip.Addr{}); got != "invalid" {
		t.Errorf("the zero address: %q", got)
	}
}

func TestNetworkPolicyCheck(t *testing.T) {
	allow, err := ParseCIDRs([]string{"10.20.0.0/16", " 127.0.0.1 ", "", "fd00::/8"})
	if err != nil {
		t.Fatal(err)
	}
	p := NetworkPolicy{Allow: allow}
	for addr, refused := range map[string]string{
		"10.20.3.4":        "",
		"10.21.0.1":        "private",
		"127.0.0.1":        "",
		"::ffff:127.0.0.1": "",
		"127.0.0.2":        "loopback",
		"fd12::1":          "",
		"fc00::1":          "private",
		"8.8.8.8":          "",
		"169.254.169.254":  "link-local",
	} {
		err := p.Check(netip.MustParseAddr(addr))
		var re *AddressRefusedError
		switch {
		case refused == "" && err != nil:
			t.Errorf("%s refused: %v", addr, err)
		case refused != "" && (!errors.As(err, &re) || re.Class != refused):
			t.Errorf("%s: %v, want refused as %s", addr, err, refused)
		}
	}
	if err := (NetworkPolicy{}).Check(netip.MustParseAddr("10.0.0.1")); err == nil ||
		err.Error() != "refused to connect to 10.0.0.1: the address is private (--changelog-allow-cidrs allows such addresses)" {
		t.Errorf("the message: %v", err)
	}
	if _, err := ParseCIDRs([]string{"10.0.0.0/33"}); err == nil || !strings.Contains(err.Error(), `"10.0.0.0/33" is neither a CIDR`) {
		t.Errorf("a bad CIDR: %v", err)
	}
}

// gitProxy is a real git server (git's http-backend) behind a reverse proxy on 127.0.0.1
// that counts requests and, while fail is set, answers them with that status and a body
// holding marker.
type gitProxy struct {
	URL      string
	git      *gittest.Server
	requests atomic.Int32
	fail     atomic.Int32
	stall    atomic.Bool
}

const marker = "MARKER-3f9c-the-remote-said-this"

func newGitProxy(t *testing.T) *gitProxy {
	t.Helper()
	p := &gitProxy{git: gittest.NewServer(t, "", "")}
	target, err := url.Parse(p.git.URL)
	if err != nil {
		t.Fatal(err)
	}
	rp := httputil.NewSingleHostReverseProxy(target)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		p.requests.Add(1)
		if p.stall.Load() {
			<-r.Context().Done()
			return
		}
		if code := int(p.fail.Load()); code != 0 {
			http.Error(w, "<html>"+marker+" internal detail</html>", code)
			return
		}
		rp.ServeHTTP(w, r)
	}))
	t.Cleanup(srv.Close)
	p.URL = srv.URL
	return p
}

// repo creates a repository and returns its URL through the proxy and its head.
func (p *gitProxy) repo(t *testing.T, name string, files map[string]string) (string, string) {
	t.Helper()
	p.git.CreateRepo(t, name, files)
	return p.URL + "/" + name + ".git", gittest.Git(t, p.git.Bare(name), "rev-parse", "main")
}

func loopback(t *testing.T) NetworkPolicy {
	t.Helper()
	allow, err := ParseCIDRs([]string{"127.0.0.0/8"})
	if err != nil {
		t.Fatal(err)
	}
	return NetworkPolicy{Allow: allow}
}

func fetchError(t *testing.T, err error) *FetchError {
	t.Helper()
	var fe *FetchError
	if !errors.As(err, &fe) {
		t.Fatalf("error %v (%T) is no *FetchError", err, err)
	}
	return fe
}

// A git server on 127.0.0.1 is not dialed by default, whether the URL names the address or a
// name resolving to it ("localhost"); the operator's opt-in lets both through.
func TestFetchRefusesReservedAddressesWhenDialing(t *testing.T) {
	srv := newGitProxy(t)
	byAddr, head := srv.repo(t, "api", map[string]string{"README": "api\n"})
	byName := strings.Replace(byAddr, "127.0.0.1", "localhost", 1)
	if byName == byAddr {
		t.Fatalf("the server's URL %s does not name 127.0.0.1", byAddr)
	}
	var logged []string
	c := newCache(t, RepoCacheOptions{OnFetchError: func(url string, err error) { logged = append(logged, err.Error()) }})
	for _, u := range []string{byAddr, byName} {
		_, err := c.Open(context.Background(), u, head)
		if fe := fetchError(t, err); fe.Error() != "the repository could not be fetched (refused: address is loopback)" {
			t.Errorf("%s: %q", u, fe.Error())
		}
	}
	if n := srv.requests.Load(); n != 0 {
		t.Fatalf("the server got %d requests", n)
	}
	if len(logged) != 2 || !strings.Contains(logged[0], "refused to connect to 127.0.0.1") {
		t.Errorf("the log: %q", logged)
	}
	if len(c.Repos()) != 0 {
		t.Errorf("clones kept: %v", c.Repos())
	}

	allowed := newCache(t, RepoCacheOptions{Network: loopback(t)})
	for _, u := range []string{byAddr, byName} {
		h, err := allowed.Open(context.Background(), u, head)
		if err != nil {
			t.Fatalf("%s with the opt-in: %v", u, err)
		}
		if len(h.Missing) != 0 || h.FetchError != nil {
			t.Errorf("%s: missing %v, %v", u, h.Missing, h.FetchError)
		}
		h.Close()
	}
	if srv.requests.Load() == 0 {
		t.Fatal("the opt-in reached no server")
	}
}

// Another go-git user of the process (the pipelines' pushes) is not subject to the check:
// only requests of a changelog fetch are.
func TestGuardedTransportLeavesOtherRequestsAlone(t *testing.T) {
	var hits atomic.Int32
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) { hits.Add(1) }))
	defer srv.Close()
	req, err := http.NewRequest(http.MethodGet, srv.URL, nil)
	if err != nil {
		t.Fatal(err)
	}
	resp, err := guardedTransport{}.RoundTrip(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	st := &fetchState{guard: newFetchGuard(NetworkPolicy{}, 0)}
	if _, err := (guardedTransport{}).RoundTrip(req.WithContext(withFetchState(context.Background(), st))); err == nil || st.refusal() == nil {
		t.Fatalf("a changelog request to 127.0.0.1: %v, %v", err, st.refusal())
	}
	if hits.Load() != 1 {
		t.Fatalf("%d hits, want the unguarded one only", hits.Load())
	}
}

// A failed fetch is remembered for FailureTTL: page views meanwhile get its status at once,
// without a request; after it the repository is tried again. The status never holds what the
// server answered; the log gets the whole error.
func TestFetchFailuresAreRememberedForAWhile(t *testing.T) {
	srv := newGitProxy(t)
	u, head := srv.repo(t, "api", map[string]string{"README": "api\n"})
	var mu sync.Mutex
	now := time.Date(2026, 11, 28, 12, 0, 0, 0, time.UTC)
	clock := func() time.Time { mu.Lock(); defer mu.Unlock(); return now }
	var logged []string
	c := newCache(t, RepoCacheOptions{Network: loopback(t), FailureTTL: time.Minute, Now: clock,
		OnFetchError: func(_ string, err error) { logged = append(logged, err.Error()) }})

	srv.fail.Store(http.StatusNotFound)
	_, err := c.Open(context.Background(), u, head)
	fe := fetchError(t, err)
	if fe.Error() != "the repository could not be fetched (repository not found)" || strings.Contains(fe.Error(), marker) {
		t.Fatalf("the status: %q", fe.Error())
	}
	if len(logged) != 1 || !strings.Contains(logged[0], marker) {
		t.Errorf("the log does not have the whole error: %q", logged)
	}
	first := srv.requests.Load()
	if first == 0 {
		t.Fatal("no request")
	}
	for range 3 {
		if _, err := c.Open(context.Background(), u, head); fetchError(t, err).Status != "repository not found" {
			t.Fatalf("within the TTL: %v", err)
		}
	}
	if n := srv.requests.Load(); n != first {
		t.Fatalf("%d requests within the TTL, want %d (the first fetch's)", n, first)
	}

	srv.fail.Store(0)
	mu.Lock()
	now = now.Add(time.Minute)
	mu.Unlock()
	h, err := c.Open(context.Background(), u, head)
	if err != nil {
		t.Fatalf("after the TTL: %v", err)
	}
	h.Close()
	if srv.requests.Load() == first {
		t.Fatal("not fetched again after the TTL")
	}

	// A clone that has a revision missing and whose fetch fails: the handle says so, and the
	// next open within the TTL does not fetch again either.
	srv.fail.Store(http.StatusForbidden)
	missing := strings.Repeat("e", 40)
	h, err = c.Open(context.Background(), u, head, missing)
	if err != nil || h.FetchError == nil || h.FetchError.Error() != "the repository could not be fetched (authorization failed)" {
		t.Fatalf("a failed fetch of a clone: %v, %+v", err, h)
	}
	h.Close()
	n := srv.requests.Load()
	h, err = c.Open(context.Background(), u, head, missing)
	if err != nil || h.FetchError == nil || srv.requests.Load() != n {
		t.Fatalf("within the TTL: %v, %+v, %d requests more", err, h, srv.requests.Load()-n)
	}
	h.Close()
}

// A clone that receives more than MaxFetchBytes is aborted and says it is too large; one that
// does not hang is aborted at FetchTimeout and says it timed out.
func TestFetchSizeLimitAndTimeout(t *testing.T) {
	srv := newGitProxy(t)
	big := make([]byte, 64<<10)
	if _, err := rand.Read(big); err != nil {
		t.Fatal(err)
	}
	u, head := srv.repo(t, "big", map[string]string{"blob": hex.EncodeToString(big)})
	c := newCache(t, RepoCacheOptions{Network: loopback(t), MaxFetchBytes: 16 << 10})
	_, err := c.Open(context.Background(), u, head)
	if fe := fetchError(t, err); fe.Error() != "the repository could not be fetched (too large: more than 16Ki received)" {
		t.Fatalf("too large: %q (%v)", fe.Error(), fe.Err)
	}
	if len(c.Repos()) != 0 {
		t.Errorf("a clone kept: %v", c.Repos())
	}
	// The same repository within the limit.
	h, err := newCache(t, RepoCacheOptions{Network: loopback(t), MaxFetchBytes: 1 << 20}).Open(context.Background(), u, head)
	if err != nil {
		t.Fatalf("within the limit: %v", err)
	}
	h.Close()

	srv.stall.Store(true)
	slow := newCache(t, RepoCacheOptions{Network: loopback(t), FetchTimeout: 100 * time.Millisecond})
	_, err = slow.Open(context.Background(), u, head)
	if fe := fetchError(t, err); fe.Error() != "the repository could not be fetched (timed out after 100ms)" {
		t.Fatalf("a server that does not answer: %q (%v)", fe.Error(), fe.Err)
	}
}

// What a server answers to a failed fetch (here a 404 page holding marker) is in no form of
// the changelog: the component's error, the Markdown, the HTML, the JSON.
func TestChangeLogNeverShowsTheRemotesErrorBody(t *testing.T) {
	e := newPayloadEnv(t)
	srv := newGitProxy(t)
	u, head := srv.repo(t, "api", map[string]string{"README": "api\n"})
	srv.fail.Store(http.StatusNotFound)
	cls, err := Setup(context.Background(), nil, Config{CacheDir: t.TempDir(), Registry: e.client,
		SourceAllow: []string{"http://"}, AllowCIDRs: []string{"127.0.0.1"}, OnFetchError: func(string, error) {}})
	if err != nil {
		t.Fatal(err)
	}
	p1 := e.payload("1.0.0", e.component("api", u, plumbing.NewHash(strings.Repeat("1", 40))))
	p2 := e.payload("1.0.1", e.component("api", u, plumbing.NewHash(head)))
	cl, err := cls.ChangeLog(context.Background(), p1, p2)
	if err != nil {
		t.Fatal(err)
	}
	if srv.requests.Load() == 0 {
		t.Fatal("the server got no request")
	}
	if ic := findImage(t, cl.UpdatedImages, "api"); ic.Error != "the repository could not be fetched (repository not found)" {
		t.Errorf("the component's error: %q", ic.Error)
	}
	page, err := cl.HTML()
	if err != nil {
		t.Fatal(err)
	}
	data, err := json.Marshal(cl)
	if err != nil {
		t.Fatal(err)
	}
	for form, text := range map[string]string{"markdown": cl.Markdown(), "html": string(page), "json": string(data)} {
		if strings.Contains(text, marker) {
			t.Errorf("the %s holds the remote's text:\n%s", form, text)
		}
	}
}

// The git credentials go only to the URLs their Secret allows (annotation allowed-urls,
// https unless allow-insecure-http), even for a host --git-credentials-hosts names: for a
// refused URL nothing is fetched at all.
func TestCredentialsGoOnlyWhereTheSecretAllows(t *testing.T) {
	srv := gittest.NewServer(t, "x-access-token", "s3cret")
	u := srv.CreateRepo(t, "private", map[string]string{"README": "private\n"})
	head := gittest.Git(t, srv.Bare("private"), "rev-parse", "main")
	insecure := v1alpha1.AnnotationAllowInsecureHTTP
	for _, tc := range []struct {
		name        string
		annotations map[string]string
		refused     string
	}{
		{"no annotation", map[string]string{insecure: "true"}, "has no annotation release-controller.dev/allowed-urls"},
		{"plain http", map[string]string{v1alpha1.AnnotationAllowedURLs: srv.URL}, "is plain http"},
		{"another path", map[string]string{v1alpha1.AnnotationAllowedURLs: srv.URL + "/priv", insecure: "true"}, "is under none of the prefixes"},
		{"allowed", map[string]string{v1alpha1.AnnotationAllowedURLs: "https://github.com/org\n" + srv.URL + "/private.git", insecure: "true"}, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			before := srv.Authorized.Load() + srv.Refused.Load()
			reader := fake.NewClientBuilder().WithObjects(&corev1.Secret{
				ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "git", Annotations: tc.annotations},
				Data:       map[string][]byte{SecretKeyToken: []byte("s3cret")},
			}).Build()
			var logged []string
			cls, err := Setup(context.Background(), reader, Config{CacheDir: t.TempDir(), CredentialsSecret: "ns/git", CredentialsHosts: []string{"127.0.0.1"},
				SourceAllow: []string{"http://"}, AllowCIDRs: []string{"127.0.0.1"}, OnFetchError: func(_ string, err error) { logged = append(logged, err.Error()) }})
			if err != nil {
				t.Fatal(err)
			}
			h, err := cls.Generator().repos.Open(context.Background(), u, head)
			if tc.refused == "" {
				if err != nil || len(h.Missing) != 0 {
					t.Fatalf("allowed: %v", err)
				}
				h.Close()
				if srv.Authorized.Load() == 0 {
					t.Fatal("no request with the credentials")
				}
				return
			}
			want := "the repository could not be fetched (refused: the git credentials Secret does not allow this URL (annotations release-controller.dev/allowed-urls, release-controller.dev/allow-insecure-http))"
			if fe := fetchError(t, err); fe.Error() != want {
				t.Errorf("refused: %q", fe.Error())
			}
			if len(logged) != 1 || !strings.Contains(logged[0], "the git credentials Secret ns/git (--git-credentials-secret) is not sent to "+u+": ") ||
				!strings.Contains(logged[0], tc.refused) {
				t.Errorf("the log: %q", logged)
			}
			if n := srv.Authorized.Load() + srv.Refused.Load(); n != before {
				t.Errorf("the server got %d requests", n-before)
			}
		})
	}
}

func TestCredentialTarget(t *testing.T) {
	for source, want := range map[string]string{
		"https://github.com/org/repo.git":      "https://github.com/org/repo.git",
		"git@github.com:org/repo.git":          "ssh://github.com:22/org/repo.git",
		"ssh://git@github.com:2222/org/repo":   "ssh://github.com:2222/org/repo",
		"https://github.com@evil.com/org/repo": "https://github.com@evil.com/org/repo", // refused as userinfo
	} {
		if got := credentialTarget(source); got != want {
			t.Errorf("credentialTarget(%q) = %q, want %q", source, got, want)
		}
	}
}
