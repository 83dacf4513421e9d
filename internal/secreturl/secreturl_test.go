package secreturl

import (
	"strings"
	"testing"

	"github.com/release-controller/release-controller/api/v1alpha1"
)

func TestCheck(t *testing.T) {
	allowed := func(prefixes string) map[string]string {
		return map[string]string{v1alpha1.AnnotationAllowedURLs: prefixes}
	}
	insecure := func(prefixes string) map[string]string {
		a := allowed(prefixes)
		a[v1alpha1.AnnotationAllowInsecureHTTP] = "true"
		return a
	}
	jira := allowed("https://jira.example.com")
	for _, tc := range []struct {
		name        string
		annotations map[string]string
		target      string
		// refused is a part of the refusal's message; empty: allowed.
		refused string
	}{
		{"the prefix itself", jira, "https://jira.example.com", ""},
		{"with a trailing slash", jira, "https://jira.example.com/", ""},
		{"below the prefix", jira, "https://jira.example.com/rest/api/2", ""},
		{"host in upper case", jira, "HTTPS://JIRA.Example.COM/x", ""},
		{"host with a trailing dot", jira, "https://jira.example.com./x", ""},
		{"prefix with a trailing dot", allowed("https://jira.example.com./"), "https://jira.example.com/x", ""},
		{"default port written", jira, "https://jira.example.com:443/x", ""},
		{"default port in the prefix", allowed("https://jira.example.com:443"), "https://jira.example.com/x", ""},
		{"a query does not change where it goes", jira, "https://jira.example.com/x?a=b", ""},
		{"one prefix per line", allowed("https://git.example.com/org\n  https://jira.example.com\n"), "https://jira.example.com/x", ""},
		{"comma-separated", allowed("https://git.example.com/org, https://jira.example.com"), "https://jira.example.com/x", ""},
		{"path segment prefix", allowed("https://git.example.com/a/b"), "https://git.example.com/a/b/c.git", ""},
		{"path segment prefix, exact", allowed("https://git.example.com/a/b/"), "https://git.example.com/a/b", ""},
		{"http with the opt-in", insecure("http://127.0.0.1:8080"), "http://127.0.0.1:8080/jira", ""},
		{"ssh", allowed("ssh://github.com/org"), "ssh://github.com/org/repo.git", ""},
		{"IPv6 literal", allowed("https://[2001:db8::1]"), "https://[2001:db8::1]:443/x", ""},

		{"no annotation", nil, "https://jira.example.com", "has no annotation release-controller.dev/allowed-urls, so it is sent nowhere: add it, listing the URL prefixes it may be sent to (e.g. https://jira.example.com)"},
		{"empty annotation", allowed(" ,\n "), "https://jira.example.com", "has no annotation"},
		{"no annotation, plain http", nil, "http://jira.example.com", "has no annotation release-controller.dev/allowed-urls, so it is sent nowhere: add it, listing the URL prefixes it may be sent to (e.g. http://jira.example.com)"},
		{"another host with the name as prefix", jira, "https://jira.example.com.evil.com/", "under none of the prefixes"},
		{"userinfo naming the host", jira, "https://jira.example.com@evil.com/", "user name or password"},
		{"userinfo on the right host", jira, "https://user:pw@jira.example.com/", "user name or password"},
		{"another port", jira, "https://jira.example.com:8443/", "under none of the prefixes"},
		{"http downgrade", jira, "http://jira.example.com/", "plain http: the Secret goes over https only, unless it has the annotation release-controller.dev/allow-insecure-http: \"true\""},
		{"http with the opt-in but an https prefix", insecure("https://jira.example.com"), "http://jira.example.com/", "under none of the prefixes"},
		{"opt-in must say true", map[string]string{v1alpha1.AnnotationAllowedURLs: "http://jira.example.com", v1alpha1.AnnotationAllowInsecureHTTP: "yes"}, "http://jira.example.com/", "plain http"},
		{"a longer last segment", allowed("https://git.example.com/a/b"), "https://git.example.com/a/bc", "under none of the prefixes"},
		{"a shorter path", allowed("https://git.example.com/a/b"), "https://git.example.com/a", "under none of the prefixes"},
		{"dot-dot out of the prefix", allowed("https://git.example.com/a/b"), "https://git.example.com/a/b/../../c", ". or .. segment"},
		{"encoded dots", allowed("https://git.example.com/a/b"), "https://git.example.com/a/b/%2e%2e/c", "percent-encoded slash, backslash or dot"},
		{"encoded dots in upper case", allowed("https://git.example.com/a/b"), "https://git.example.com/a/b/%2E%2E/c", "percent-encoded"},
		{"encoded slash", allowed("https://git.example.com/a/b"), "https://git.example.com/a%2Fb/c", "percent-encoded"},
		{"backslash", allowed("https://git.example.com/a/b"), "https://git.example.com/a/b\\..\\c", "percent-encoded"},
		{"empty segment", allowed("https://git.example.com/a/b"), "https://git.example.com/a//b", "empty segment"},
		{"escape in the host", jira, "https://jira.example.com%2eevil.com/", "is refused: it is not a URL"},
		{"relative URL", jira, "//jira.example.com/x", "not an absolute URL"},
		{"opaque URL", jira, "https:jira.example.com", "not an absolute URL"},
		{"file URL", allowed("file:///srv"), "file:///srv/x", "carries no credential"},
		{"a bad prefix is named", allowed("jira.example.com"), "https://jira.example.com", `holds "jira.example.com", which is not a URL prefix`},
		{"a prefix with userinfo", allowed("https://jira.example.com@evil.com"), "https://evil.com/", "not a URL prefix: it holds a user name"},
		{"another scheme", allowed("ssh://jira.example.com"), "https://jira.example.com/", "under none of the prefixes"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			err := Check(tc.annotations, tc.target)
			switch {
			case tc.refused == "" && err != nil:
				t.Fatalf("refused: %v", err)
			case tc.refused != "" && err == nil:
				t.Fatalf("allowed, want refused with %q", tc.refused)
			case tc.refused != "" && !strings.Contains(err.Error(), tc.refused):
				t.Fatalf("refused with %q, want it to say %q", err, tc.refused)
			}
		})
	}
}

func TestWithin(t *testing.T) {
	base := "https://jira.example.com/jira"
	for target, want := range map[string]bool{
		"https://jira.example.com/jira/rest/api/2/issue/A-1": true,
		"https://jira.example.com/jira":                      true,
		"https://jira.example.com/jiraz/rest":                false,
		"http://jira.example.com/jira/rest":                  false,
		"https://jira.example.com:8443/jira/rest":            false,
		"https://evil.example.com/jira/rest":                 false,
		"https://jira.example.com/jira/../admin":             false,
		"https://jira.example.com/other":                     false,
	} {
		if got := Within(base, target); got != want {
			t.Errorf("Within(%q, %q) = %v, want %v", base, target, got, want)
		}
	}
	if Within("not a url", "https://jira.example.com") {
		t.Error("an unparsable prefix contains something")
	}
}

func TestPrefixes(t *testing.T) {
	got := Prefixes("https://a.example.com, https://b.example.com\n\n https://c.example.com/x ,")
	want := []string{"https://a.example.com", "https://b.example.com", "https://c.example.com/x"}
	if strings.Join(got, "|") != strings.Join(want, "|") {
		t.Fatalf("Prefixes: %q, want %q", got, want)
	}
}
