// Package secreturl decides whether a Secret's credential (a Jira token, git credentials) may
// be sent to a URL. The URL comes from an object a tenant wrote, so the Secret itself says
// where it may go: the annotation release-controller.dev/allowed-urls lists URL prefixes, and
// plain http needs release-controller.dev/allow-insecure-http: "true".
//
// URLs are compared parsed, never as text: the scheme, the host (case-insensitive, a trailing
// dot dropped), the port (a default port made explicit) and whole path segments ("/a/b" is
// under "/a/b" and "/a/b/c", never "/a/bc"). A URL with a user name or password, a "." or
// ".." segment, an empty segment or a percent-encoded slash, backslash or dot is refused: a
// server may read those differently from this package.
package secreturl

import (
	"errors"
	"fmt"
	"net/url"
	"strconv"
	"strings"

	"github.com/release-controller/release-controller/api/v1alpha1"
)

// defaultPorts are the ports of the schemes a credential may travel over.
var defaultPorts = map[string]string{"https": "443", "http": "80", "ssh": "22"}

// location is a URL as compared: scheme, host and port normalized, the path as segments.
type location struct {
	scheme, host, port string
	segments           []string
}

func (l location) origin() string {
	if defaultPorts[l.scheme] == l.port {
		return l.scheme + "://" + l.host
	}
	return l.scheme + "://" + l.host + ":" + l.port
}

// parse reads an absolute http, https or ssh URL; anything ambiguous is an error.
func parse(raw string) (location, error) {
	u, err := url.Parse(strings.TrimSpace(raw))
	if err != nil {
		return location{}, errors.New("it is not a URL")
	}
	if !u.IsAbs() || u.Opaque != "" {
		return location{}, errors.New("it is not an absolute URL (scheme://host/path)")
	}
	l := location{scheme: strings.ToLower(u.Scheme)}
	if _, ok := defaultPorts[l.scheme]; !ok {
		return location{}, fmt.Errorf("the scheme %q carries no credential (https, http or ssh)", u.Scheme)
	}
	if u.User != nil {
		return location{}, errors.New("it holds a user name or password before the host (userinfo)")
	}
	host := u.Hostname()
	if strings.ContainsAny(host, "%@\\") {
		return location{}, errors.New("its host holds an escape, a zone or a backslash")
	}
	l.host = strings.TrimSuffix(strings.ToLower(host), ".")
	if l.host == "" || strings.HasSuffix(l.host, ".") {
		return location{}, errors.New("it has no host")
	}
	l.port = u.Port()
	if l.port == "" {
		l.port = defaultPorts[l.scheme]
	}
	n, err := strconv.Atoi(l.port)
	if err != nil || n < 1 || n > 65535 {
		return location{}, fmt.Errorf("its port %q is not a port", u.Port())
	}
	l.port = strconv.Itoa(n) // "0443" is 443
	escaped := strings.ToLower(u.EscapedPath() + u.RawPath)
	if strings.Contains(escaped, "%2f") || strings.Contains(escaped, "%5c") || strings.Contains(escaped, "%2e") || strings.Contains(u.Path, "\\") {
		return location{}, errors.New("its path holds a percent-encoded slash, backslash or dot")
	}
	p := u.Path
	if p == "" {
		p = "/"
	}
	if !strings.HasPrefix(p, "/") {
		return location{}, errors.New("its path is not absolute")
	}
	p = strings.TrimSuffix(p[1:], "/")
	if p != "" {
		for _, s := range strings.Split(p, "/") {
			switch s {
			case ".", "..":
				return location{}, errors.New("its path holds a . or .. segment")
			case "":
				return location{}, errors.New("its path holds an empty segment (//)")
			}
			l.segments = append(l.segments, s)
		}
	}
	return l, nil
}

// under reports whether target is prefix or below it, segment by segment.
func under(prefix, target location) bool {
	if prefix.scheme != target.scheme || prefix.host != target.host || prefix.port != target.port {
		return false
	}
	if len(prefix.segments) > len(target.segments) {
		return false
	}
	for i, s := range prefix.segments {
		if target.segments[i] != s {
			return false
		}
	}
	return true
}

// Within reports whether target is the URL prefix or below it, compared as Check compares
// them; an unparsable or ambiguous URL is never within. Clients use it to keep a credential
// from following a redirect out of the URL it was allowed for.
func Within(prefix, target string) bool {
	p, err := parse(prefix)
	if err != nil {
		return false
	}
	t, err := parse(target)
	return err == nil && under(p, t)
}

// Prefixes splits an allowed-urls annotation: one prefix per line or comma-separated.
func Prefixes(annotation string) []string {
	var out []string
	for _, line := range strings.Split(annotation, "\n") {
		for _, e := range strings.Split(line, ",") {
			if e = strings.TrimSpace(e); e != "" {
				out = append(out, e)
			}
		}
	}
	return out
}

// Check returns nil when a credential of a Secret with these annotations may be sent to
// target, else an error saying which rule refuses it and how to allow it. It is pure.
func Check(annotations map[string]string, target string) error {
	t, err := parse(target)
	if err != nil {
		return fmt.Errorf("the URL %q is refused: %w", target, err)
	}
	prefixes := Prefixes(annotations[v1alpha1.AnnotationAllowedURLs])
	if len(prefixes) == 0 {
		return fmt.Errorf("the Secret has no annotation %s, so it is sent nowhere: add it, listing the URL prefixes it may be sent to (e.g. %s)",
			v1alpha1.AnnotationAllowedURLs, t.origin())
	}
	if t.scheme == "http" && annotations[v1alpha1.AnnotationAllowInsecureHTTP] != "true" {
		return fmt.Errorf("the URL %q is plain http: the Secret goes over https only, unless it has the annotation %s: \"true\"",
			target, v1alpha1.AnnotationAllowInsecureHTTP)
	}
	for _, raw := range prefixes {
		p, err := parse(raw)
		if err != nil {
			return fmt.Errorf("the annotation %s holds %q, which is not a URL prefix: %w", v1alpha1.AnnotationAllowedURLs, raw, err)
		}
		if under(p, t) {
			return nil
		}
	}
	return fmt.Errorf("the URL %q is under none of the prefixes of the Secret's annotation %s (%s)",
		target, v1alpha1.AnnotationAllowedURLs, strings.Join(prefixes, ", "))
}
