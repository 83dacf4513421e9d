// Package gittest serves bare git repositories over git's smart HTTP protocol for tests: git's
// own http-backend (the server GitHub-like hosts speak to clients) behind net/http/cgi, with
// HTTP basic auth.
package gittest

import (
	"crypto/subtle"
	"net/http"
	"net/http/cgi"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
)

// Server is a git HTTP server holding the bare repositories of a temporary folder.
type Server struct {
	// URL of the server; a repository's URL is URL + "/" + name + ".git".
	URL string
	// Root holds the bare repositories, <name>.git.
	Root string
	// Refused counts the requests refused for missing or wrong credentials.
	Refused atomic.Int32
	// Authorized counts the requests let in with the right credentials.
	Authorized atomic.Int32

	username, password string
	backend            string
}

// NewServer starts a server that wants username and password on every request (none when
// username is empty), until the test ends. It skips the test when git is not installed.
func NewServer(t testing.TB, username, password string) *Server {
	t.Helper()
	out, err := exec.Command("git", "--exec-path").Output()
	if err != nil {
		t.Fatalf("git is not installed (its http-backend serves the test repositories; apt-get install git): %v", err)
	}
	backend := filepath.Join(strings.TrimSpace(string(out)), "git-http-backend")
	if _, err := os.Stat(backend); err != nil {
		t.Fatalf("git's http-backend is not installed (apt-get install git): %v", err)
	}
	s := &Server{Root: t.TempDir(), username: username, password: password, backend: backend}
	srv := httptest.NewServer(http.HandlerFunc(s.serve))
	t.Cleanup(srv.Close)
	s.URL = srv.URL
	return s
}

func (s *Server) serve(w http.ResponseWriter, r *http.Request) {
	user := "anonymous"
	if s.username != "" {
		u, p, ok := r.BasicAuth()
		if !ok || subtle.ConstantTimeCompare([]byte(u), []byte(s.username)) != 1 || subtle.ConstantTimeCompare([]byte(p), []byte(s.password)) != 1 {
			s.Refused.Add(1)
			w.Header().Set("WWW-Authenticate", `Basic realm="git"`)
			http.Error(w, "authentication required", http.StatusUnauthorized)
			return
		}
		s.Authorized.Add(1)
		user = u
	}
	h := &cgi.Handler{
		Path: s.backend,
		Dir:  s.Root,
		Env: []string{
			"GIT_PROJECT_ROOT=" + s.Root,
			"GIT_HTTP_EXPORT_ALL=1",
			// http-backend takes pushes from an authenticated user only.
			"REMOTE_USER=" + user,
			"GIT_CONFIG_NOSYSTEM=1",
			"HOME=" + s.Root,
		},
	}
	h.ServeHTTP(w, r)
}

// RepoURL is the URL of repository name.
func (s *Server) RepoURL(name string) string {
	return s.URL + "/" + name + ".git"
}

// CreateRepo creates the bare repository name with one commit on main holding files (path to
// content), and returns its URL.
func (s *Server) CreateRepo(t testing.TB, name string, files map[string]string) string {
	t.Helper()
	Git(t, "", "init", "-q", "--bare", "-b", "main", s.Bare(name))
	work := t.TempDir()
	Git(t, "", "init", "-q", "-b", "main", work)
	Git(t, work, "remote", "add", "origin", s.Bare(name))
	commitAndPush(t, work, "main", files, "Initial commit")
	return s.RepoURL(name)
}

// Commit commits files (path to content) on branch of repository name, as someone other than
// the controller would: through a clone of its own, pushed without force. A branch that does
// not exist starts from main.
func (s *Server) Commit(t testing.TB, name, branch string, files map[string]string, message string) {
	t.Helper()
	work := t.TempDir()
	Git(t, "", "clone", "-q", s.Bare(name), work)
	from := "origin/main"
	if Git(t, s.Bare(name), "branch", "--list", branch) != "" {
		from = "origin/" + branch
	}
	Git(t, work, "checkout", "-q", "-B", branch, from)
	commitAndPush(t, work, branch, files, message)
}

func commitAndPush(t testing.TB, work, branch string, files map[string]string, message string) {
	t.Helper()
	for p, content := range files {
		full := filepath.Join(work, filepath.FromSlash(p))
		if err := os.MkdirAll(filepath.Dir(full), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(full, []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	Git(t, work, "add", "-A")
	Git(t, work, "-c", "user.name=Someone Else", "-c", "user.email=someone@example.com", "commit", "-q", "-m", message)
	Git(t, work, "push", "-q", "origin", branch)
}

// Bare is the folder of repository name, for Git.
func (s *Server) Bare(name string) string {
	return filepath.Join(s.Root, name+".git")
}

// Git runs git in dir (none: the current folder) and returns its output without the trailing
// newline; it fails the test when git fails.
func Git(t testing.TB, dir string, args ...string) string {
	t.Helper()
	if dir != "" {
		args = append([]string{"-C", dir}, args...)
	}
	cmd := exec.Command("git", args...)
	cmd.Env = append(os.Environ(), "GIT_CONFIG_NOSYSTEM=1", "GIT_CONFIG_GLOBAL=/dev/null", "GIT_TERMINAL_PROMPT=0")
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("git %s: %v\n%s", strings.Join(args, " "), err, out)
	}
	return strings.TrimRight(string(out), "\n")
}
