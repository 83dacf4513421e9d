package catalog

import (
	"regexp"
	"testing"
	"time"

	"github.com/blang/semver/v4"

	"github.com/release-controller/release-controller/internal/jobcontract"
	"github.com/release-controller/release-controller/internal/stream"
)

// sign is -1, 0 or 1.
func sign(n int) int {
	switch {
	case n < 0:
		return -1
	case n > 0:
		return 1
	}
	return 0
}

// checkOrder checks that compare orders a, b and c as a total order does: every value equals
// itself (and only itself: the order sorts the same tags the same way every time),
// swapping the operands swaps the answer, and a ≤ b ≤ c means a ≤ c.
func checkOrder(t *testing.T, compare func(a, b string) int, a, b, c string) {
	t.Helper()
	for _, x := range []string{a, b, c} {
		if compare(x, x) != 0 {
			t.Errorf("compare(%q, %q) = %d, want 0", x, x, compare(x, x))
		}
	}
	for _, p := range [][2]string{{a, b}, {b, c}, {a, c}} {
		ab, ba := compare(p[0], p[1]), compare(p[1], p[0])
		if sign(ab) != -sign(ba) {
			t.Errorf("compare(%q, %q) = %d but compare(%q, %q) = %d", p[0], p[1], ab, p[1], p[0], ba)
		}
		if ab == 0 && p[0] != p[1] {
			t.Errorf("compare(%q, %q) = 0 for different tags", p[0], p[1])
		}
	}
	if compare(a, b) <= 0 && compare(b, c) <= 0 && compare(a, c) > 0 {
		t.Errorf("%q ≤ %q ≤ %q, but compare(%q, %q) = %d", a, b, c, a, c, compare(a, c))
	}
}

// Tags come from payload names (anyone allowed to create a payload names it), URLs and
// query strings: CompareTags orders any three as a total order.
func FuzzCompareTags(f *testing.F) {
	f.Add("4.15.0-0.nightly-2026-11-22-093000", "4.15.0-0.nightly-2026-11-21-093000", "4.15.0")
	f.Add("1.0.0+build.1", "1.0.0+build.2", "1.0.0")
	f.Add("1.0.0-rc.1", "1.0.0-rc.01", "not-semver")
	f.Add("v1.0.0", "1.0", "")
	f.Add("1.0.0-alpha", "1.0.0-alpha.1", "1.0.0-alpha.beta")
	f.Fuzz(func(t *testing.T, a, b, c string) {
		checkOrder(t, CompareTags, a, b, c)
	})
}

// Stream names order the same way, tolerantly (v1, 1.2): a total order too.
func FuzzCompareNames(f *testing.F) {
	f.Add("4.17.0-0.nightly", "4-stable", "4.17")
	f.Add("v1", "1.0.0", "1")
	f.Add("1.0.0+a", "1.0.0+b", "01.0.0")
	f.Fuzz(func(t *testing.T, a, b, c string) {
		checkOrder(t, compareNames, a, b, c)
	})
}

// tagRule is the admission rule of a payload's tag (api/v1alpha1, PayloadCoordinates.Tag):
// keep it in step with the marker there. (It once admitted 1.0.0-rc.01 and
// 99999999999999999999.0.0, which the catalog sorted among tags that are no versions.)
var tagRule = regexp.MustCompile(`^(0|[1-9][0-9]{0,18})[.](0|[1-9][0-9]{0,18})[.](0|[1-9][0-9]{0,18})(-(0|[1-9][0-9]{0,18}|[0-9]*[a-z-][0-9a-z-]*)([.](0|[1-9][0-9]{0,18}|[0-9]*[a-z-][0-9a-z-]*))*)?$`)

// Every tag the API server admits is a semantic version the catalog orders as one, and it
// writes back to itself; so no admitted payload falls among the non-semver tags.
func FuzzAdmittedTagsAreSemver(f *testing.F) {
	f.Add("4.15.0-0.nightly-2026-11-22-093000")
	f.Add("1.0.0-rc.01")
	f.Add("1.0.0-0a.00")
	f.Add("99999999999999999999.0.0")
	f.Fuzz(func(t *testing.T, tag string) {
		if len(tag) > 63 || !tagRule.MatchString(tag) {
			return
		}
		v, err := semver.Parse(tag)
		if err != nil {
			t.Fatalf("the admitted tag %q is not a semantic version to the catalog: %v", tag, err)
		}
		if v.String() != tag {
			t.Errorf("the admitted tag %q parses to %q", tag, v.String())
		}
	})
}

// tagPrefixRule and maxTagPrefix are the admission rules of a stream's tagPrefix
// (api/v1alpha1, ReleaseStreamSpec.TagPrefix): keep them in step with the markers there.
var tagPrefixRule = tagRule

const maxTagPrefix = 45

// The stream names a payload <tagPrefix>-<UTC time>: from every prefix the API server admits
// and any two times (whole seconds, years 1000 to 9999), the tags are admitted payload tags,
// and the later one sorts first.
func FuzzReleaseTags(f *testing.F) {
	f.Add("4.15.0-0.nightly", int64(1795339800), int64(1795339801))
	f.Add("4.15.0", int64(0), int64(-1))
	f.Add("1.0.0-rc.1", int64(253402300799), int64(-30610224000))
	f.Fuzz(func(t *testing.T, prefix string, s1, s2 int64) {
		if len(prefix) > maxTagPrefix || !tagPrefixRule.MatchString(prefix) {
			return
		}
		t1, t2 := time.Unix(s1, 0).UTC(), time.Unix(s2, 0).UTC()
		for _, tm := range []time.Time{t1, t2} {
			if tm.Year() < 1000 || tm.Year() > 9999 {
				return
			}
		}
		tag1, tag2 := stream.ReleaseTag(prefix, t1), stream.ReleaseTag(prefix, t2)
		for _, tag := range []string{tag1, tag2} {
			if len(tag) > 63 || !tagRule.MatchString(tag) {
				t.Fatalf("prefix %q makes the tag %q, which the API server refuses", prefix, tag)
			}
		}
		want := sign(t2.Compare(t1))
		if got := sign(CompareTags(tag1, tag2)); got != want {
			t.Errorf("CompareTags(%q, %q) = %d, want %d (newest first)", tag1, tag2, got, want)
		}
	})
}

// The controllers (jobcontract: the newest accepted payload, upgrade sources) and the API
// (the catalog: pages, /latest, /graph) order admitted tags alike, though they read them with
// two semver libraries.
func FuzzTagOrdersAgree(f *testing.F) {
	f.Add("4.15.0-0.nightly-2026-11-22-093000", "4.15.0-0.nightly-2026-11-21-093000")
	f.Add("1.0.0-rc.1", "1.0.0-rc.10")
	f.Add("1.0.0-alpha", "1.0.0-alpha.1")
	f.Add("1.0.0-1", "1.0.0-a")
	f.Add("1.0.0", "1.0.0-0")
	f.Fuzz(func(t *testing.T, a, b string) {
		if a == b || len(a) > 63 || len(b) > 63 || !tagRule.MatchString(a) || !tagRule.MatchString(b) {
			return
		}
		releases := jobcontract.Releases([]string{a, b})
		if len(releases) != 2 {
			t.Fatalf("jobcontract reads %v of the admitted tags %q and %q", releases, a, b)
		}
		newest, other := releases[0].Tag, releases[1].Tag
		if CompareTags(newest, other) >= 0 {
			t.Errorf("jobcontract puts %q before %q, the catalog does not (CompareTags = %d)", newest, other, CompareTags(newest, other))
		}
	})
}
