package changelog

import (
	"context"
	"crypto/ed25519"
	"crypto/rand"
	"crypto/x509"
	"encoding/pem"
	"net"
	"os"
	"slices"
	"strings"
	"sync"
	"testing"

	githttp "github.com/go-git/go-git/v5/plumbing/transport/http"
	gitssh "github.com/go-git/go-git/v5/plumbing/transport/ssh"
	"golang.org/x/crypto/ssh"
)

func openClose(t *testing.T, c *RepoCache, url string, revs ...string) *RepoHandle {
	t.Helper()
	h, err := c.Open(context.Background(), url, revs...)
	if err != nil {
		t.Fatal(err)
	}
	h.Close()
	return h
}

func exists(path string) bool { _, err := os.Stat(path); return err == nil }

func TestRepoCacheEvictsLeastRecentlyUsed(t *testing.T) {
	var repos []*testRepo
	var heads []string
	for range 3 {
		r := newTestRepo(t)
		h := r.commit("only")
		r.setBranch("master", h)
		repos = append(repos, r)
		heads = append(heads, h.String())
	}
	dir := t.TempDir()
	c := newCache(t, RepoCacheOptions{Dir: dir, MaxRepos: 2})
	a, b, d := repos[0].url(), repos[1].url(), repos[2].url()
	if h := openClose(t, c, a, heads[0]); len(h.Missing) != 0 {
		t.Fatalf("missing %v", h.Missing)
	}
	openClose(t, c, b, heads[1])
	openClose(t, c, a, heads[0]) // a is now the most recent
	openClose(t, c, d, heads[2])
	if got := c.Repos(); !slices.Equal(got, []string{d, a}) {
		t.Fatalf("cached = %v, want [%s %s]", got, d, a)
	}
	if exists(c.Dir(b)) || !exists(c.Dir(a)) || !exists(c.Dir(d)) {
		t.Fatal("evicted clone still on disk, or kept clone gone")
	}
	if c.Size() <= 0 {
		t.Fatal("size not measured")
	}
	entries, _ := os.ReadDir(dir)
	if len(entries) != 2 {
		t.Fatalf("cache dir holds %d entries", len(entries))
	}

	// A new process adopts the clones on disk, and a smaller bound trims them.
	c2 := newCache(t, RepoCacheOptions{Dir: dir, MaxRepos: 1})
	if got := c2.Repos(); len(got) != 1 {
		t.Fatalf("adopted %v", got)
	}
	// The adopted clone has the revision: no fetch needed, so it works even with the origin gone.
	kept := c2.Repos()[0]
	i := slices.Index([]string{a, b, d}, kept)
	if err := os.RemoveAll(repos[i].dir); err != nil {
		t.Fatal(err)
	}
	h, err := c2.Open(context.Background(), kept, heads[i])
	if err != nil || len(h.Missing) != 0 {
		t.Fatalf("adopted clone: %v %v", err, h)
	}
	h.Close()
}

func TestRepoCacheByteBoundAndInUse(t *testing.T) {
	r1, r2 := newTestRepo(t), newTestRepo(t)
	r1.setBranch("master", r1.commit("x"))
	r2.setBranch("master", r2.commit("y"))
	c := newCache(t, RepoCacheOptions{MaxBytes: 1})
	h1, err := c.Open(context.Background(), r1.url())
	if err != nil {
		t.Fatal(err)
	}
	// r1 is in use: opening r2 must not evict it.
	openClose(t, c, r2.url())
	if !exists(c.Dir(r1.url())) || exists(c.Dir(r2.url())) {
		t.Fatal("in-use clone evicted, or idle clone kept beyond the byte bound")
	}
	h1.Close()
	if len(c.Repos()) != 0 || exists(c.Dir(r1.url())) {
		t.Fatal("clone kept beyond the byte bound after release")
	}
}

func TestRepoCacheFetchesNewRevisionsAndConcurrentOpen(t *testing.T) {
	r := newTestRepo(t)
	c1 := r.commit("one")
	r.setBranch("master", c1)
	c := newCache(t, RepoCacheOptions{})
	openClose(t, c, r.url(), c1.String())
	c2 := r.commit("two", c1)
	r.setBranch("master", c2)
	var wg sync.WaitGroup
	for range 6 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			h, err := c.Open(context.Background(), r.url(), c1.String(), c2.String())
			if err != nil {
				t.Error(err)
				return
			}
			defer h.Close()
			if len(h.Missing) != 0 {
				t.Errorf("missing %v", h.Missing)
			}
		}()
	}
	wg.Wait()
	if got := c.Repos(); len(got) != 1 {
		t.Fatalf("repos = %v", got)
	}
	// Unreachable: an error, and no slot kept.
	if _, err := c.Open(context.Background(), "file:///nonexistent/repo-"+t.Name()); err == nil {
		t.Fatal("no error for an unreachable repository")
	}
	if len(c.Repos()) != 1 {
		t.Fatalf("unreachable repository kept: %v", c.Repos())
	}
	// A cancelled context fails the fetch rather than hanging.
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	other := newTestRepo(t)
	other.setBranch("master", other.commit("z"))
	if _, err := c.Open(ctx, other.url()); err == nil {
		t.Fatal("fetch with a cancelled context succeeded")
	}
}

func TestCredentials(t *testing.T) {
	c, err := CredentialFromSecretData(map[string][]byte{"token": []byte("s3cret\n")})
	if err != nil {
		t.Fatal(err)
	}
	am, err := c.AuthMethod()
	if err != nil {
		t.Fatal(err)
	}
	if ba, ok := am.(*githttp.BasicAuth); !ok || ba.Password != "s3cret" || ba.Username == "" {
		t.Fatalf("token auth = %#v", am)
	}

	_, priv, err := ed25519.GenerateKey(rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	der, err := x509.MarshalPKCS8PrivateKey(priv)
	if err != nil {
		t.Fatal(err)
	}
	keyPEM := pem.EncodeToMemory(&pem.Block{Type: "PRIVATE KEY", Bytes: der})
	signer, err := ssh.NewSignerFromKey(priv)
	if err != nil {
		t.Fatal(err)
	}
	knownHosts := "github.com " + strings.TrimSpace(string(ssh.MarshalAuthorizedKey(signer.PublicKey()))) + "\n"
	sc, err := CredentialFromSecretData(map[string][]byte{"ssh-privatekey": keyPEM, "known_hosts": []byte(knownHosts)})
	if err != nil {
		t.Fatal(err)
	}
	am, err = sc.AuthMethod()
	if err != nil {
		t.Fatal(err)
	}
	pk, ok := am.(*gitssh.PublicKeys)
	if !ok || pk.User != "git" || pk.HostKeyCallback == nil {
		t.Fatalf("ssh auth = %#v", am)
	}
	addr := &net.TCPAddr{IP: net.IPv4(192, 0, 2, 1), Port: 22}
	if err := pk.HostKeyCallback("github.com:22", addr, signer.PublicKey()); err != nil {
		t.Fatalf("known host rejected: %v", err)
	}
	_, otherPriv, _ := ed25519.GenerateKey(rand.Reader)
	otherSigner, _ := ssh.NewSignerFromKey(otherPriv)
	if err := pk.HostKeyCallback("github.com:22", addr, otherSigner.PublicKey()); err == nil {
		t.Fatal("unknown host key accepted")
	}

	for _, bad := range []map[string][]byte{
		{},
		{"token": []byte("t"), "ssh-privatekey": keyPEM},
		{"ssh-privatekey": []byte("not a key")},
	} {
		if _, err := CredentialFromSecretData(bad); err == nil {
			t.Errorf("no error for %v", bad)
		}
	}

	cs := Credentials{
		"github.com":                         {Token: "host"},
		"https://github.com/private/":        {Token: "prefix"},
		"https://github.com/private/special": {Token: "longer"},
	}
	for url, want := range map[string]string{
		"https://github.com/public/x":            "host",
		"git@github.com:private/x.git":           "host",
		"https://github.com/private/x":           "prefix",
		"https://github.com/private/special.git": "longer",
		"https://gitlab.com/private/x":           "",
	} {
		got, ok := cs.For(url)
		if got.Token != want || ok != (want != "") {
			t.Errorf("For(%q) = %q, %v; want %q", url, got.Token, ok, want)
		}
	}
}
