package changelog

import (
	"errors"
	"fmt"
	"path"
	"strings"

	"github.com/go-git/go-git/v5/plumbing/transport"
)

// DefaultSourceAllow is the sources changelogs are fetched from unless told otherwise: any
// https repository, nothing on the server's own disk and no cleartext protocol.
var DefaultSourceAllow = []string{"https://"}

// SourceAllowList says which repositories changelogs may clone. A component's source comes
// from its image's label, which whoever built the image chose: without a list, a payload
// could make the server read git repositories on its own disk (file:///…) or reach hosts of
// its internal network.
//
// An entry is one of
//   - a scheme, "https://" or "file://": every URL of that scheme;
//   - a host, "github.com" or "git.example.com:8443": every URL on that host whatever the
//     scheme (never file://, which has no host);
//   - a URL prefix, "https://git.example.com/org/" or "file:///srv/git/": URLs of that scheme,
//     host and port whose path is the prefix's or below it ("/org" does not allow
//     "/organization").
//
// URLs are compared parsed, not as text: "https://github.com@10.0.0.1/x" is on 10.0.0.1,
// "git@github.com:org/repo" is ssh on github.com, a bare path is file://, and ".." is
// resolved before the path is compared.
type SourceAllowList struct {
	entries []allowEntry
	text    string
}

type allowEntry struct {
	scheme string // empty: any scheme (a host entry)
	host   string // empty: any host (a scheme entry)
	port   int
	path   string // cleaned; empty: any path
}

// ParseSourceAllowList parses entries (see SourceAllowList); an empty list allows nothing.
func ParseSourceAllowList(entries []string) (*SourceAllowList, error) {
	l := &SourceAllowList{text: strings.Join(entries, ",")}
	if l.text == "" {
		l.text = "nothing"
	}
	for _, raw := range entries {
		s := strings.TrimSpace(raw)
		e, err := parseAllowEntry(s)
		if err != nil {
			return nil, fmt.Errorf("git source %q: %w", raw, err)
		}
		l.entries = append(l.entries, e)
	}
	return l, nil
}

func parseAllowEntry(s string) (allowEntry, error) {
	if s == "" {
		return allowEntry{}, errors.New("empty entry")
	}
	scheme, rest, hasScheme := strings.Cut(s, "://")
	if !hasScheme {
		// A host, with an optional port; nothing else.
		if strings.ContainsAny(s, "/@?#") {
			return allowEntry{}, errors.New("want a scheme (https://), a host (github.com) or a URL prefix (https://git.example.com/org/)")
		}
		ep, err := transport.NewEndpoint("ssh://" + s)
		if err != nil || ep.Host == "" {
			return allowEntry{}, errors.New("not a host name")
		}
		return allowEntry{host: strings.ToLower(ep.Host), port: ep.Port}, nil // a port given is never a default
	}
	scheme = strings.ToLower(scheme)
	if scheme == "" || strings.ContainsAny(scheme, "/@:") {
		return allowEntry{}, errors.New("not a scheme")
	}
	if rest == "" {
		return allowEntry{scheme: scheme}, nil
	}
	ep, err := transport.NewEndpoint(s)
	if err != nil {
		return allowEntry{}, err
	}
	if ep.User != "" || ep.Password != "" {
		return allowEntry{}, errors.New("a prefix holds no user or password")
	}
	if scheme != "file" && ep.Host == "" {
		return allowEntry{}, errors.New("no host")
	}
	return allowEntry{scheme: scheme, host: strings.ToLower(ep.Host), port: explicitPort(scheme, ep.Port), path: cleanPath(ep.Path)}, nil
}

// defaultPorts are the ports a URL of each scheme uses when it names none.
var defaultPorts = map[string]int{"https": 443, "http": 80, "ssh": 22, "git": 9418}

// explicitPort is port, or 0 when it is the scheme's default (git@host:path says 22).
func explicitPort(scheme string, port int) int {
	if defaultPorts[scheme] == port {
		return 0
	}
	return port
}

// cleanPath resolves "." and ".." and drops a trailing slash; "/" stays "/".
func cleanPath(p string) string {
	if p == "" {
		return ""
	}
	return path.Clean("/" + p)
}

// Allows reports whether a source URL may be cloned.
func (l *SourceAllowList) Allows(source string) bool {
	ep, err := transport.NewEndpoint(strings.TrimSpace(source))
	if err != nil {
		return false
	}
	scheme, host, p := strings.ToLower(ep.Protocol), strings.ToLower(ep.Host), cleanPath(ep.Path)
	port := explicitPort(scheme, ep.Port)
	for _, e := range l.entries {
		if e.allows(scheme, host, port, p) {
			return true
		}
	}
	return false
}

func (e allowEntry) allows(scheme, host string, port int, p string) bool {
	if e.scheme != "" && e.scheme != scheme {
		return false
	}
	if e.scheme == "" && (scheme == "file" || host == "") {
		return false // a host entry never allows the local disk
	}
	if e.host != "" && (e.host != host || e.port != port) {
		return false
	}
	if e.path == "" || e.path == "/" {
		return true
	}
	return p == e.path || strings.HasPrefix(p, e.path+"/")
}

// Check returns nil when source may be cloned, else an error naming the list.
func (l *SourceAllowList) Check(source string) error {
	if l.Allows(source) {
		return nil
	}
	return fmt.Errorf("%w: %s is not an allowed git source (--git-source-allow: %s)", ErrSourceNotAllowed, source, l.text)
}

// String is the list as given.
func (l *SourceAllowList) String() string { return l.text }

// ErrSourceNotAllowed is the error of a source outside the allow-list; nothing was fetched.
var ErrSourceNotAllowed = errors.New("not fetched")
