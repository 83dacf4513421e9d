package osrc_test

import (
	"bytes"
	"compress/gzip"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"reflect"
	"strconv"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/release-controller/release-controller/api/v1alpha1"
	"github.com/release-controller/release-controller/internal/server/catalog"
	"github.com/release-controller/release-controller/internal/server/osrc"
)

// exchange is one request and the answer the contract asks for. A body starting with
// "prefix:" only has to start with the rest.
type exchange struct {
	name        string
	method      string // GET when empty
	path        string
	code        int
	contentType string // checked when set
	location    string // checked when set
	body        string
}

func check(t *testing.T, base string, cases []exchange) {
	t.Helper()
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			method := c.method
			if method == "" {
				method = http.MethodGet
			}
			got := do(t, method, base+c.path)
			if got.code != c.code {
				t.Errorf("%s %s: status %d, want %d; body:\n%s", method, c.path, got.code, c.code, got.body)
			}
			if c.contentType != "" && got.header.Get("Content-Type") != c.contentType {
				t.Errorf("Content-Type %q, want %q", got.header.Get("Content-Type"), c.contentType)
			}
			if c.location != "" && got.header.Get("Location") != c.location {
				t.Errorf("Location %q, want %q", got.header.Get("Location"), c.location)
			}
			if prefix, ok := strings.CutPrefix(c.body, "prefix:"); ok {
				if !strings.HasPrefix(got.body, prefix) {
					t.Errorf("body %q does not start with %q", got.body, prefix)
				}
			} else if c.method != http.MethodHead && got.body != c.body && !(c.body == "" && c.location != "") {
				t.Errorf("body differs (-want +got):\n%s", cmp.Diff(c.body, got.body))
			}
		})
	}
}

const (
	textJSON  = "application/json"
	textPlain = "text/plain"
	textError = "text/plain; charset=utf-8"
)

var (
	notFoundStream = text("no release configuration exists with the requested name")
	noTag          = text("no tags exist within the release that satisfy the request")
	ambiguousDup   = text(`release stream "dup" exists in namespaces a, b: use /namespaces/{namespace}/… to pick one`)
)

func q(s string) string { return url.QueryEscape(s) }

func TestLatest(t *testing.T) {
	base := serve(t, fixture(), osrc.Options{ArtifactsURL: artifacts})
	api := "/api/v1/releasestream/4-stable/latest"
	tag := func(name, phase, repo string) string {
		return lines(`{`,
			`  "name": "`+name+`",`,
			`  "phase": "`+phase+`",`,
			`  "pullSpec": "`+repo+`:`+name+`",`,
			`  "downloadURL": "https://artifacts.example/releases/`+name+`"`,
			`}`)
	}
	stable := func(name string) string { return tag(name, "Accepted", "registry.example/ocp/stable") }
	check(t, base, []exchange{
		{name: "newest accepted", path: api, code: 200, contentType: textJSON, body: stable("4.17.1")},
		{name: "format json", path: api + "?format=json", code: 200, body: stable("4.17.1")},
		{name: "rel 1", path: api + "?rel=1", code: 200, body: stable("4.17.0")},
		{name: "rel 2 is a pre-release", path: api + "?rel=2", code: 200, body: stable("4.17.0-rc.1")},
		{name: "rel 4 skips the rejected tag", path: api + "?rel=4", code: 200, body: stable("4.16.3")},
		{name: "in a minor", path: api + "?in=" + q(">4.16.0-0 <4.17.0-0"), code: 200, body: stable("4.16.5")},
		{name: "in a minor, rel 1", path: api + "?in=" + q(">4.16.0-0 <4.17.0-0") + "&rel=1", code: 200, body: stable("4.16.3")},
		{name: "in below a release takes its pre-release", path: api + "?in=" + q("<4.17.0"), code: 200, body: stable("4.17.0-rc.1")},
		{name: "in with or", path: api + "?in=" + q("<4.16.4 || >4.17.5") + "", code: 200, body: stable("4.16.3")},
		{name: "prefix", path: api + "?prefix=4.16", code: 200, body: stable("4.16.5")},
		{name: "prefix and rel", path: api + "?prefix=4.16&rel=1", code: 200, body: stable("4.16.3")},
		{name: "prefix, in and rel", path: api + "?prefix=4.1&in=" + q(">=4.17.0-0") + "&rel=1", code: 200, body: stable("4.17.0")},
		{name: "nightly: rejected, ready and pending tags are skipped", path: "/api/v1/releasestream/" + nightly + "/latest", code: 200,
			body: tag(n3, "Accepted", "registry.example/ocp/release")},
		{name: "format pullSpec", path: api + "?format=pullSpec", code: 200, contentType: textPlain, body: "registry.example/ocp/stable:4.17.1\n"},
		{name: "format name", path: api + "?format=name&rel=1", code: 200, contentType: textPlain, body: "4.17.0\n"},
		{name: "format downloadURL", path: api + "?format=downloadURL", code: 200, contentType: textPlain, body: "https://artifacts.example/releases/4.17.1\n"},
		{name: "namespaced", path: "/api/v1/namespaces/a/releasestream/dup/latest?format=name", code: 200, body: "1.0.0\n"},

		{name: "no tag past the end", path: api + "?rel=6", code: 404, contentType: textError, body: noTag},
		{name: "huge rel is no tag", path: api + "?rel=1000000000000", code: 404, body: noTag},
		{name: "no tag in the range", path: api + "?in=" + q(">5.0.0"), code: 404, body: noTag},
		{name: "no tag with the prefix", path: api + "?prefix=5.", code: 404, body: noTag},
		{name: "no accepted tag", path: "/api/v1/namespaces/b/releasestream/dup/latest", code: 404, body: noTag},
		{name: "empty stream", path: "/api/v1/releasestream/empty/latest", code: 404, body: noTag},
		{name: "unknown stream", path: "/api/v1/releasestream/nope/latest", code: 404, contentType: textError, body: notFoundStream},
		{name: "unknown namespace", path: "/api/v1/namespaces/nope/releasestream/4-stable/latest", code: 404, body: notFoundStream},
		{name: "ambiguous stream", path: "/api/v1/releasestream/dup/latest", code: 409, body: ambiguousDup},
		{name: "bad in", path: api + "?in=4.x.y", code: 400, contentType: textError, body: "prefix:error: ?in must be a valid semantic version range: "},
		{name: "bad in before unknown stream", path: "/api/v1/releasestream/nope/latest?in=bogus", code: 400, body: "prefix:error: ?in must be a valid semantic version range: "},
		{name: "negative rel", path: api + "?rel=-1", code: 400, body: text("error: ?rel must be non-negative integer")},
		{name: "rel not a number", path: api + "?rel=one", code: 400, body: text(`error: ?rel must be non-negative integer: strconv.Atoi: parsing "one": invalid syntax`)},
		{name: "rel beyond int", path: api + "?rel=99999999999999999999", code: 400,
			body: text(`error: ?rel must be non-negative integer: strconv.Atoi: parsing "99999999999999999999": value out of range`)},
		{name: "bad rel before unknown stream", path: "/api/v1/releasestream/nope/latest?rel=-1", code: 400, body: text("error: ?rel must be non-negative integer")},
		{name: "bad format", path: api + "?format=yaml", code: 400, body: text("error: Must specify one of '', 'json', 'pullSpec', 'name', or 'downloadURL")},
		{name: "bad format is checked after the lookup", path: "/api/v1/releasestream/nope/latest?format=yaml", code: 404, body: notFoundStream},
		{name: "POST", method: http.MethodPost, path: api, code: 405, body: text("Method Not Allowed")},
		{name: "HEAD", method: http.MethodHead, path: api, code: 200},
		{name: "trailing slash", path: api + "/", code: 404, body: text("404 page not found")},
	})
}

func TestLatestWithoutArtifacts(t *testing.T) {
	base := serve(t, fixture(), osrc.Options{})
	check(t, base, []exchange{
		{name: "downloadURL is empty", path: "/api/v1/releasestream/4-stable/latest", code: 200, body: lines(`{`,
			`  "name": "4.17.1",`,
			`  "phase": "Accepted",`,
			`  "pullSpec": "registry.example/ocp/stable:4.17.1",`,
			`  "downloadURL": ""`,
			`}`)},
		{name: "format downloadURL", path: "/api/v1/releasestream/4-stable/latest?format=downloadURL", code: 200, body: "\n"},
	})
}

func TestTags(t *testing.T) {
	base := serve(t, fixture(), osrc.Options{ArtifactsURL: artifacts})
	api := "/api/v1/releasestream/" + nightly + "/tags"
	tag := func(name, phase string) []string {
		return []string{
			`    {`,
			`      "name": "` + name + `",`,
			`      "phase": "` + phase + `",`,
			`      "pullSpec": "registry.example/ocp/release:` + name + `",`,
			`      "downloadURL": "https://artifacts.example/releases/` + name + `"`,
		}
	}
	doc := func(tags ...[]string) string {
		out := []string{`{`, `  "name": "` + nightly + `",`, `  "tags": [`}
		for i, t := range tags {
			out = append(out, t...)
			if i < len(tags)-1 {
				out = append(out, `    },`)
			} else {
				out = append(out, `    }`)
			}
		}
		return lines(append(out, `  ]`, `}`)...)
	}
	all := doc(tag(n5, "Pending"), tag(n4, "Rejected"), tag(n3, "Accepted"), tag(n2, "Ready"), tag(n1, "Accepted"))
	check(t, base, []exchange{
		{name: "all, newest first", path: api, code: 200, contentType: textJSON, body: all},
		{name: "format json", path: api + "?format=json", code: 200, body: all},
		{name: "one phase", path: api + "?phase=Accepted", code: 200, body: doc(tag(n3, "Accepted"), tag(n1, "Accepted"))},
		{name: "phases are ORed", path: api + "?phase=Ready&phase=Rejected", code: 200, body: doc(tag(n4, "Rejected"), tag(n2, "Ready"))},
		{name: "no match is null", path: api + "?phase=Failed", code: 200, body: lines(`{`, `  "name": "`+nightly+`",`, `  "tags": null`, `}`)},
		{name: "Unknown is a phase no payload has", path: api + "?phase=Unknown", code: 200, body: lines(`{`, `  "name": "`+nightly+`",`, `  "tags": null`, `}`)},
		{name: "empty stream is null", path: "/api/v1/releasestream/empty/tags", code: 200, body: lines(`{`, `  "name": "empty",`, `  "tags": null`, `}`)},
		{name: "namespaced", path: "/api/v1/namespaces/b/releasestream/dup/tags", code: 200, body: lines(`{`,
			`  "name": "dup",`,
			`  "tags": [`,
			`    {`,
			`      "name": "2.0.0",`,
			`      "phase": "Rejected",`,
			`      "pullSpec": "registry.example/b/dup:2.0.0",`,
			`      "downloadURL": "https://artifacts.example/releases/2.0.0"`,
			`    }`,
			`  ]`,
			`}`)},
		{name: "bad phase", path: api + "?phase=accepted", code: 400, contentType: textError,
			body: text(`error: unknown phase "accepted": must be one of Pending, Ready, Accepted, Rejected, Failed, Unknown`)},
		{name: "bad format", path: api + "?format=pullSpec", code: 400, body: text("error: format must be '' or 'json'")},
		{name: "unknown stream", path: "/api/v1/releasestream/nope/tags?phase=bogus", code: 404, body: text("Unable to find release nope")},
		{name: "ambiguous stream", path: "/api/v1/releasestream/dup/tags", code: 409, body: ambiguousDup},
		{name: "DELETE", method: http.MethodDelete, path: api, code: 405, body: text("Method Not Allowed")},
	})
}

func TestReleaseStreams(t *testing.T) {
	base := serve(t, fixture(), osrc.Options{})
	check(t, base, []exchange{
		{name: "accepted", path: "/api/v1/releasestreams/accepted", code: 200, contentType: textJSON, body: lines(`{`,
			` "4-stable": [`,
			`  "4.17.1",`,
			`  "4.17.0",`,
			`  "4.17.0-rc.1",`,
			`  "4.16.5",`,
			`  "4.16.3"`,
			` ],`,
			` "4.17.0-0.nightly": [`,
			`  "`+n3+`",`,
			`  "`+n1+`"`,
			` ],`,
			` "a/dup": [`,
			`  "1.0.0"`,
			` ],`,
			` "b/dup": null,`,
			` "empty": null`,
			`}`)},
		{name: "rejected", path: "/api/v1/releasestreams/rejected", code: 200, body: lines(`{`,
			` "4-stable": [`,
			`  "4.16.4"`,
			` ],`,
			` "4.17.0-0.nightly": [`,
			`  "`+n4+`"`,
			` ],`,
			` "a/dup": null,`,
			` "b/dup": [`,
			`  "2.0.0"`,
			` ],`,
			` "empty": null`,
			`}`)},
		{name: "ready", path: "/api/v1/releasestreams/ready", code: 200, body: lines(`{`,
			` "4-stable": null,`,
			` "4.17.0-0.nightly": [`,
			`  "`+n2+`"`,
			` ],`,
			` "a/dup": null,`,
			` "b/dup": null,`,
			` "empty": null`,
			`}`)},
		{name: "all", path: "/api/v1/releasestreams/all", code: 200, body: lines(`{`,
			` "4-stable": [`,
			`  "4.17.1",`,
			`  "4.17.0",`,
			`  "4.17.0-rc.1",`,
			`  "4.16.5",`,
			`  "4.16.4",`,
			`  "4.16.3"`,
			` ],`,
			` "4.17.0-0.nightly": [`,
			`  "`+n5+`",`,
			`  "`+n4+`",`,
			`  "`+n3+`",`,
			`  "`+n2+`",`,
			`  "`+n1+`"`,
			` ],`,
			` "a/dup": [`,
			`  "1.0.0"`,
			` ],`,
			` "b/dup": [`,
			`  "2.0.0"`,
			` ],`,
			` "empty": null`,
			`}`)},
		{name: "one namespace keys by name", path: "/api/v1/namespaces/a/releasestreams/all", code: 200, body: lines(`{`,
			` "dup": [`,
			`  "1.0.0"`,
			` ]`,
			`}`)},
		{name: "unknown namespace", path: "/api/v1/namespaces/nope/releasestreams/all", code: 200, body: "{}\n"},
		{name: "unknown list", path: "/api/v1/releasestreams/failed", code: 404, body: text("404 page not found")},
		{name: "PUT", method: http.MethodPut, path: "/api/v1/releasestreams/all", code: 405, body: text("Method Not Allowed")},
	})
}

func TestCandidate(t *testing.T) {
	base := serve(t, fixture(), osrc.Options{})
	check(t, base, []exchange{
		{name: "with upgrades", path: "/api/v1/releasestream/4-stable/candidate", code: 200, contentType: textJSON, body: lines(`{`,
			`  "candidate": {`,
			`    "fromTag": "4.17.1",`,
			`    "name": "4.17.1",`,
			`    "upgradeFrom": [`,
			`      "4.17.0"`,
			`    ]`,
			`  }`,
			`}`)},
		{name: "nightly: 1 of 2 upgrades passed, not enough", path: "/api/v1/releasestream/" + nightly + "/candidate", code: 200, body: lines(`{`,
			`  "candidate": {`,
			`    "fromTag": "`+n3+`",`,
			`    "name": "4.17.0"`,
			`  }`,
			`}`)},
		{name: "none", path: "/api/v1/releasestream/empty/candidate", code: 200, body: lines(`{`, `  "candidate": null`, `}`)},
		{name: "unknown stream", path: "/api/v1/releasestream/nope/candidate", code: 404, body: notFoundStream},
		{name: "ambiguous stream", path: "/api/v1/releasestream/dup/candidate", code: 409, body: ambiguousDup},
		{name: "namespaced", path: "/api/v1/namespaces/b/releasestream/dup/candidate", code: 200, body: lines(`{`, `  "candidate": null`, `}`)},
		{name: "POST", method: http.MethodPost, path: "/api/v1/releasestream/empty/candidate", code: 405, body: text("Method Not Allowed")},
	})
}

func TestConfig(t *testing.T) {
	base := serve(t, fixture(), osrc.Options{})
	api := "/api/v1/releasestream/" + nightly + "/config"
	check(t, base, []exchange{
		{name: "the spec", path: "/api/v1/releasestream/empty/config", code: 200, contentType: textJSON, body: lines(`{`,
			`  "components": [`,
			`    {`,
			`      "name": "cli",`,
			`      "image": "registry.example/ocp/cli:latest"`,
			`    }`,
			`  ],`,
			`  "tagPrefix": "1.0.0",`,
			`  "payloadRepository": "registry.example/ocp/empty",`,
			`  "retention": {}`,
			`}`)},
		{name: "informing", path: api + "?jobType=informing", code: 200, body: lines(`{`,
			`  "perf": {`,
			`    "disabled": false,`,
			`    "optional": true,`,
			`    "upgrade": false,`,
			`    "upgradeFrom": "",`,
			`    "upgradeFromRelease": null,`,
			`    "prowJob": {`,
			`      "name": "periodic-ci-perf"`,
			`    },`,
			`    "aggregatedProwJob": {`,
			`      "prowJob": {`,
			`        "name": "periodic-ci-perf"`,
			`      },`,
			`      "analysisJobCount": 3`,
			`    },`,
			`    "multiJobAnalysis": false,`,
			`    "verification": {`,
			`      "name": "perf",`,
			`      "type": "Informing",`,
			`      "aggregation": {`,
			`        "runs": 3,`,
			`        "passRatio": 0.6`,
			`      },`,
			`      "prowJob": {`,
			`        "spec": {`,
			`          "job": "periodic-ci-perf"`,
			`        }`,
			`      }`,
			`    }`,
			`  }`,
			`}`)},
		{name: "blocking", path: api + "?jobType=blocking", code: 200, body: lines(`{`,
			`  "e2e": {`,
			`    "disabled": false,`,
			`    "optional": false,`,
			`    "upgrade": false,`,
			`    "upgradeFrom": "",`,
			`    "upgradeFromRelease": null,`,
			`    "prowJob": {`,
			`      "name": "periodic-ci-e2e"`,
			`    },`,
			`    "multiJobAnalysis": false,`,
			`    "verification": {`,
			`      "name": "e2e",`,
			`      "type": "Blocking",`,
			`      "prowJob": {`,
			`        "spec": {`,
			`          "job": "periodic-ci-e2e"`,
			`        }`,
			`      }`,
			`    }`,
			`  },`,
			`  "upgrade": {`,
			`    "disabled": false,`,
			`    "optional": false,`,
			`    "upgrade": true,`,
			`    "upgradeFrom": "Previous",`,
			`    "upgradeFromRelease": null,`,
			`    "prowJob": {`,
			`      "name": "periodic-ci-upgrade"`,
			`    },`,
			`    "maxRetries": 2,`,
			`    "multiJobAnalysis": false,`,
			`    "verification": {`,
			`      "name": "upgrade",`,
			`      "type": "Blocking",`,
			`      "upgradeFrom": "Previous",`,
			`      "maxRetries": 2,`,
			`      "prowJob": {`,
			`        "spec": {`,
			`          "job": "periodic-ci-upgrade"`,
			`        }`,
			`      }`,
			`    }`,
			`  }`,
			`}`)},
		{name: "disabled: never", path: api + "?jobType=disabled", code: 200, body: "{}\n"},
		{name: "periodic: none", path: api + "?jobType=periodic", code: 200, body: "{}\n"},
		{name: "no verifications", path: "/api/v1/releasestream/empty/config?jobType=blocking", code: 200, body: "{}\n"},
		{name: "bad jobType", path: api + "?jobType=async", code: 400, body: text("error: jobType must be one of '', 'informing', 'blocking', 'disabled' or 'periodic'")},
		{name: "bad jobType without verifications", path: "/api/v1/releasestream/empty/config?jobType=async", code: 400,
			body: text("error: jobType must be one of '', 'informing', 'blocking', 'disabled' or 'periodic'")},
		{name: "unknown stream is a 400", path: "/api/v1/releasestream/nope/config?jobType=async", code: 400, body: text("error: unknown release stream specified: nope")},
		{name: "ambiguous stream", path: "/api/v1/releasestream/dup/config", code: 409, body: ambiguousDup},
		{name: "namespaced", path: "/api/v1/namespaces/a/releasestream/dup/config?jobType=informing", code: 200, body: "{}\n"},
		{name: "POST", method: http.MethodPost, path: api, code: 405, body: text("Method Not Allowed")},
	})
}

func TestRedirects(t *testing.T) {
	base := serve(t, fixture(), osrc.Options{ArtifactsURL: artifacts})
	bare := serve(t, fixture(), osrc.Options{})
	check(t, base, []exchange{
		{name: "latest", path: "/releasestream/4-stable/latest", code: 302, location: "/releasestream/4-stable/release/4.17.1"},
		{name: "latest in a range", path: "/releasestream/4-stable/latest?in=" + q("<4.17.0-0") + "&rel=1", code: 302, location: "/releasestream/4-stable/release/4.16.3"},
		{name: "latest with a prefix", path: "/releasestream/4-stable/latest?prefix=4.16", code: 302, location: "/releasestream/4-stable/release/4.16.5"},
		{name: "namespaced latest", path: "/namespaces/a/releasestream/dup/latest", code: 302, location: "/namespaces/a/releasestream/dup/release/1.0.0"},
		{name: "latest download", path: "/releasestream/4-stable/latest/download?rel=1", code: 302, location: "https://artifacts.example/releases/4.17.0"},
		{name: "release download", path: "/releasestream/4-stable/release/4.16.4/download", code: 302, location: "https://artifacts.example/releases/4.16.4"},
		{name: "namespaced release download", path: "/namespaces/b/releasestream/dup/release/2.0.0/download", code: 302, location: "https://artifacts.example/releases/2.0.0"},

		{name: "latest: unknown stream", path: "/releasestream/nope/latest", code: 404, body: notFoundStream},
		{name: "latest: no tag", path: "/releasestream/4-stable/latest?rel=100", code: 404, body: noTag},
		{name: "latest: bad in", path: "/releasestream/4-stable/latest?in=x", code: 400, body: "prefix:error: ?in must be a valid semantic version range: "},
		{name: "latest: bad rel", path: "/releasestream/4-stable/latest?rel=x", code: 400, body: "prefix:error: ?rel must be non-negative integer"},
		{name: "latest: ambiguous stream", path: "/releasestream/dup/latest", code: 409, body: ambiguousDup},
		{name: "latest download: unknown stream", path: "/releasestream/nope/latest/download", code: 404, body: notFoundStream},
		{name: "release download: unknown tag", path: "/releasestream/4-stable/release/9.9.9/download", code: 404,
			body: text("Unable to find release tag 9.9.9, it may have been deleted")},
		{name: "release download: tag of another stream", path: "/releasestream/4-stable/release/" + n3 + "/download", code: 404,
			body: text("Release tag " + n3 + " does not belong to release 4-stable")},
		{name: "release download: unknown stream", path: "/releasestream/nope/release/4.16.4/download", code: 404,
			body: text("Release tag 4.16.4 does not belong to release nope")},
		{name: "release download: ambiguous stream", path: "/releasestream/dup/release/1.0.0/download", code: 409, body: ambiguousDup},
		{name: "POST latest", method: http.MethodPost, path: "/releasestream/4-stable/latest", code: 405, body: text("Method Not Allowed")},
		{name: "POST download", method: http.MethodPost, path: "/releasestream/4-stable/release/4.16.4/download", code: 405, body: text("Method Not Allowed")},
	})
	noArtifacts := text("No artifacts download URL is configured, cannot show download link")
	check(t, bare, []exchange{
		{name: "no artifacts: latest download", path: "/releasestream/4-stable/latest/download", code: 404, body: noArtifacts},
		{name: "no artifacts: release download", path: "/releasestream/4-stable/release/4.16.4/download", code: 404, body: noArtifacts},
		{name: "no artifacts: the tag is checked first", path: "/releasestream/4-stable/release/9.9.9/download", code: 404,
			body: text("Unable to find release tag 9.9.9, it may have been deleted")},
		{name: "no artifacts: latest still redirects", path: "/releasestream/4-stable/latest", code: 302, location: "/releasestream/4-stable/release/4.17.1"},
	})
}

func TestGraph(t *testing.T) {
	base := serve(t, fixture(), osrc.Options{})
	const cincinnati = "application/vnd.redhat.cincinnati.graph+json; version=1.0"
	// Nodes: streams by namespace, then name (semver first); payloads newest first.
	nodes := []string{
		`{`,
		`  "nodes": [`,
		`    {`, `      "version": "1.0.0",`, `      "payload": "registry.example/a/dup:1.0.0"`, `    },`, // 0
		`    {`, `      "version": "2.0.0",`, `      "payload": "registry.example/b/dup:2.0.0"`, `    },`, // 1
		`    {`, `      "version": "` + n5 + `",`, `      "payload": "registry.example/ocp/release:` + n5 + `"`, `    },`, // 2
		`    {`, `      "version": "` + n4 + `",`, `      "payload": "registry.example/ocp/release:` + n4 + `"`, `    },`, // 3
		`    {`, `      "version": "` + n3 + `",`, `      "payload": "registry.example/ocp/release@` + digest3 + `",`, // 4
		`      "metadata": {`, `        "io.openshift.upgrades.graph.release.manifestref": "` + digest3 + `"`, `      }`, `    },`,
		`    {`, `      "version": "` + n2 + `",`, `      "payload": "registry.example/ocp/release:` + n2 + `"`, `    },`, // 5
		`    {`, `      "version": "` + n1 + `",`, `      "payload": "registry.example/ocp/release:` + n1 + `"`, `    },`, // 6
		`    {`, `      "version": "4.17.1",`, `      "payload": "registry.example/ocp/stable:4.17.1"`, `    },`, // 7
		`    {`, `      "version": "4.17.0",`, `      "payload": "registry.example/ocp/stable:4.17.0"`, `    },`, // 8
		`    {`, `      "version": "4.17.0-rc.1",`, `      "payload": "registry.example/ocp/stable:4.17.0-rc.1"`, `    },`, // 9
		`    {`, `      "version": "4.16.5",`, `      "payload": "registry.example/ocp/stable:4.16.5"`, `    },`, // 10
		`    {`, `      "version": "4.16.4",`, `      "payload": "registry.example/ocp/stable:4.16.4"`, `    },`, // 11
		`    {`, `      "version": "4.16.3",`, `      "payload": "registry.example/ocp/stable:4.16.3"`, `    }`, // 12
		`  ],`,
	}
	graph := func(edges ...[2]int) string {
		out := append([]string(nil), nodes...)
		if len(edges) == 0 {
			return lines(append(out, `  "edges": []`, `}`)...)
		}
		out = append(out, `  "edges": [`)
		for i, e := range edges {
			end := `    ],`
			if i == len(edges)-1 {
				end = `    ]`
			}
			out = append(out, `    [`, `      `+strconv.Itoa(e[0])+`,`, `      `+strconv.Itoa(e[1]), end)
		}
		return lines(append(out, `  ]`, `}`)...)
	}
	// Upgrades: n1→n3 (1 of 2 passed), n1→n2 (passed), n3→n4 (failed), in 4-stable
	// 4.17.0→4.17.1, 4.16.5→4.17.0, n3→4.17.0, 4.16.3→4.16.5 passed; 4.17.0-rc.1→4.17.0
	// failed; 4.16.4→4.16.5 pending; 4.15.9→4.16.3 starts at no node; 4.16.3→4.16.4 passed
	// into a Rejected payload. The channels that promise success keep only passed upgrades
	// into Accepted payloads: not n1→n2 (n2 is Ready) nor 4.16.3→4.16.4.
	succeeded := graph([2]int{4, 8}, [2]int{6, 4}, [2]int{8, 7}, [2]int{10, 8}, [2]int{12, 10})
	every := graph([2]int{4, 3}, [2]int{4, 8}, [2]int{6, 4}, [2]int{6, 5}, [2]int{8, 7}, [2]int{9, 8}, [2]int{10, 8}, [2]int{11, 10}, [2]int{12, 10}, [2]int{12, 11})
	badChannel := text("Unsupported ?channel, must be '', 'prerelease', 'prerelease-*', 'nightly', 'nightly-*', 'stable', or 'stable-*")
	check(t, base, []exchange{
		{name: "default: succeeded upgrades", path: "/graph", code: 200, contentType: cincinnati, body: succeeded},
		{name: "format cincinnati", path: "/graph?format=cincinnati", code: 200, body: succeeded},
		{name: "stable", path: "/graph?channel=stable", code: 200, body: succeeded},
		{name: "stable-scos", path: "/graph?channel=stable-scos", code: 200, body: succeeded},
		{name: "next", path: "/graph?channel=next", code: 200, body: succeeded},
		{name: "next-scos", path: "/graph?channel=next-scos", code: 200, body: succeeded},
		{name: "prerelease: every upgrade", path: "/graph?channel=prerelease", code: 200, body: every},
		{name: "nightly: every upgrade", path: "/graph?channel=nightly", code: 200, body: every},
		{name: "stable-4.17: succeeded into accepted 4.17.", path: "/graph?channel=stable-4.17", code: 200,
			body: graph([2]int{4, 8}, [2]int{6, 4}, [2]int{8, 7}, [2]int{10, 8})},
		{name: "stable-scos-4.16", path: "/graph?channel=stable-scos-4.16", code: 200, body: graph([2]int{12, 10})},
		{name: "next-4.16", path: "/graph?channel=next-4.16", code: 200, body: graph([2]int{12, 10})},
		{name: "next-scos-4.18: nothing", path: "/graph?channel=next-scos-4.18", code: 200, body: graph()},
		{name: "prerelease-4.16: any upgrade into 4.16.", path: "/graph?channel=prerelease-4.16", code: 200, body: graph([2]int{11, 10}, [2]int{12, 10}, [2]int{12, 11})},
		{name: "nightly-4.17: into 4.17 nightlies", path: "/graph?channel=nightly-4.17", code: 200, body: graph([2]int{4, 3}, [2]int{6, 4}, [2]int{6, 5})},
		{name: "stream names are not channels", path: "/graph?channel=4-scos-stable", code: 400, body: badChannel},
		{name: "unknown channel", path: "/graph?channel=candidate", code: 400, body: badChannel},
		{name: "removed format", path: "/graph?format=dot", code: 400, body: text("Unsupported ?format, must be 'cincinnati' (default)")},
		{name: "format is checked first", path: "/graph?format=svg&channel=bogus", code: 400, body: text("Unsupported ?format, must be 'cincinnati' (default)")},
		{name: "POST", method: http.MethodPost, path: "/graph", code: 405, body: text("Method Not Allowed")},
	})
	t.Run("byte-for-byte stable", func(t *testing.T) {
		for _, path := range []string{"/graph", "/graph?channel=prerelease"} {
			first := do(t, http.MethodGet, base+path).body
			for range 5 {
				if again := do(t, http.MethodGet, base+path).body; again != first {
					t.Fatalf("%s differs between requests", path)
				}
			}
		}
	})
}

func TestArchiveGraph(t *testing.T) {
	base := serve(t, fixture(), osrc.Options{})
	got := do(t, http.MethodGet, base+"/archive/graph")
	if got.code != 200 || got.header.Get("Content-Encoding") != "gzip" || got.header.Get("Content-Type") != "application/json" {
		t.Fatalf("status %d, headers %v", got.code, got.header)
	}
	zr, err := gzip.NewReader(bytes.NewReader([]byte(got.body)))
	if err != nil {
		t.Fatal(err)
	}
	data, err := io.ReadAll(zr)
	if err != nil {
		t.Fatal(err)
	}
	// Sorted by to, then from; results by URL. Runs without a URL are kept with url "".
	want := `[` +
		`{"from":"4.15.9","to":"4.16.3","results":[{"state":"Succeeded","url":"https://prow.example/s7"}]},` +
		`{"from":"4.16.3","to":"4.16.4","results":[{"state":"Succeeded","url":"https://prow.example/s8"}]},` +
		`{"from":"4.16.3","to":"4.16.5","results":[{"state":"Succeeded","url":"https://prow.example/s4"}]},` +
		`{"from":"4.16.4","to":"4.16.5","results":[{"state":"Pending","url":"https://prow.example/s5"}]},` +
		`{"from":"4.16.5","to":"4.17.0","results":[{"state":"Succeeded","url":"https://prow.example/s2"}]},` +
		`{"from":"4.17.0-0.nightly-2026-01-03-000000","to":"4.17.0","results":[{"state":"Succeeded","url":"https://prow.example/s6"}]},` +
		`{"from":"4.17.0-rc.1","to":"4.17.0","results":[{"state":"Failed","url":"https://prow.example/s3"}]},` +
		`{"from":"4.17.0-0.nightly-2026-01-01-000000","to":"4.17.0-0.nightly-2026-01-02-000000","results":[{"state":"Succeeded","url":""}]},` +
		`{"from":"4.17.0-0.nightly-2026-01-01-000000","to":"4.17.0-0.nightly-2026-01-03-000000","results":[` +
		`{"state":"Failed","url":"https://prow.example/up-3-1"},{"state":"Succeeded","url":"https://prow.example/up-3-2"}]},` +
		`{"from":"4.17.0-0.nightly-2026-01-03-000000","to":"4.17.0-0.nightly-2026-01-04-000000","results":[` +
		`{"state":"Failed","url":"https://prow.example/up-4-1"},{"state":"Failed","url":"https://prow.example/up-4-2"},{"state":"Failed","url":"https://prow.example/up-4-3"}]},` +
		`{"from":"4.17.0","to":"4.17.1","results":[{"state":"Succeeded","url":"https://prow.example/s1"}]}` +
		`]`
	if string(data) != want {
		t.Errorf("archive differs (-want +got):\n%s", cmp.Diff(want, string(data)))
	}
	if r := do(t, http.MethodPost, base+"/archive/graph"); r.code != 405 {
		t.Errorf("POST: %d", r.code)
	}
}

// TestEncodingMatchesEncodingJSON checks the hand-written answers against encoding/json:
// decoded and encoded again with json.MarshalIndent, they give the same bytes, escapes
// included (the artifacts URL carries characters JSON and HTML escape).
func TestEncodingMatchesEncodingJSON(t *testing.T) {
	base := serve(t, fixture(), osrc.Options{ArtifactsURL: "https://artifacts.example/a&b<c>\"d\"/ü\u2028/"})
	type tag struct {
		Name        string `json:"name"`
		Phase       string `json:"phase"`
		PullSpec    string `json:"pullSpec"`
		DownloadURL string `json:"downloadURL"`
	}
	type release struct {
		Name string `json:"name"`
		Tags []tag  `json:"tags"`
	}
	for _, c := range []struct {
		path   string
		v      func() any
		indent string
	}{
		{"/api/v1/releasestream/" + nightly + "/tags", func() any { return new(release) }, "  "},
		{"/api/v1/releasestream/empty/tags", func() any { return new(release) }, "  "},
		{"/api/v1/releasestream/4-stable/tags?phase=Rejected", func() any { return new(release) }, "  "},
		{"/api/v1/releasestreams/all", func() any { return new(map[string][]string) }, " "},
		{"/api/v1/releasestreams/ready", func() any { return new(map[string][]string) }, " "},
		{"/api/v1/namespaces/nope/releasestreams/ready", func() any { return new(map[string][]string) }, " "},
		{"/graph?channel=prerelease", func() any { return new(cincinnatiGraph) }, "  "},
		{"/graph?channel=next-9", func() any { return new(cincinnatiGraph) }, "  "},
	} {
		got := do(t, http.MethodGet, base+c.path)
		v := c.v()
		if err := json.Unmarshal([]byte(got.body), v); err != nil {
			t.Fatalf("%s: %v", c.path, err)
		}
		want, err := json.MarshalIndent(v, "", c.indent)
		if err != nil {
			t.Fatal(err)
		}
		if string(want)+"\n" != got.body {
			t.Errorf("%s differs from encoding/json (-want +got):\n%s", c.path, cmp.Diff(string(want)+"\n", got.body))
		}
	}
	if got := do(t, http.MethodGet, base+"/api/v1/releasestream/empty/tags?phase=Accepted"); !strings.Contains(got.body, `"tags": null`) {
		t.Errorf("no tags is not null: %s", got.body)
	}
	if got := do(t, http.MethodGet, base+"/api/v1/releasestream/4-stable/latest"); !strings.Contains(got.body, `"https://artifacts.example/a\u0026b\u003cc\u003e\"d\"/ü\u2028/4.17.1"`) {
		t.Errorf("download URL: %s", got.body)
	}

	// The update service's fields: metadata (a public URL with characters to escape),
	// conditional edges with their risks and rules, and the v1 version.
	upd := serve(t, updateFixture(), osrc.Options{PublicURL: "https://release.example.com/a&b<c>\u2028"})
	for _, c := range []struct{ path, accept string }{
		{"/graph", ""},
		{"/graph", osrc.CincinnatiV1ContentType},
		{"/graph?channel=candidate", ""},
		{"/graph?channel=fast", osrc.CincinnatiV1ContentType},
		{"/graph?arch=arm64&channel=stable-4.18", ""},
		{"/graph?arch=multi&channel=prerelease", osrc.CincinnatiV1ContentType},
	} {
		var v cincinnatiGraph
		_, got := getGraph(t, upd, c.path, "Accept", c.accept)
		if err := json.Unmarshal([]byte(got.body), &v); err != nil {
			t.Fatalf("%s: %v", c.path, err)
		}
		want, err := json.MarshalIndent(v, "", "  ")
		if err != nil {
			t.Fatal(err)
		}
		if string(want)+"\n" != got.body {
			t.Errorf("%s (Accept %q) differs from encoding/json (-want +got):\n%s", c.path, c.accept, cmp.Diff(string(want)+"\n", got.body))
		}
		if !strings.Contains(got.body, `"url": "https://release.example.com/a\u0026b\u003cc\u003e\u2028/namespaces/ocp/releasestream/`) {
			t.Errorf("%s: no escaped url metadata", c.path)
		}
	}
}

// TestAnswersFollowTheCatalog reads, changes the catalog as its informers would, and reads
// again: no answer is served from an older version.
func TestAnswersFollowTheCatalog(t *testing.T) {
	cat := fixture()
	base := serve(t, cat, osrc.Options{})
	paths := []string{
		"/api/v1/releasestreams/accepted", "/api/v1/releasestreams/all", "/api/v1/namespaces/ocp/releasestreams/accepted",
		"/graph", "/graph?channel=prerelease", "/api/v1/releasestream/4-stable/tags", "/api/v1/releasestream/4-stable/tags?phase=Accepted",
		"/api/v1/releasestream/4-stable/latest?format=name",
	}
	for _, p := range paths {
		if got := do(t, http.MethodGet, base+p); got.code != 200 || strings.Contains(got.body, "4.17.2") {
			t.Fatalf("%s before: %d %s", p, got.code, got.body)
		}
	}
	stable, err := cat.Stream("4-stable")
	if err != nil {
		t.Fatal(err)
	}
	setPayload(cat, newPayload(stable.Object, "4.17.2", "Accepted"))
	for _, p := range paths {
		if got := do(t, http.MethodGet, base+p); got.code != 200 || !strings.Contains(got.body, "4.17.2") {
			t.Errorf("%s after a new payload: %d %s", p, got.code, got.body)
		}
	}
	cat.DeleteStream(stable.Object)
	for _, p := range paths[:4] {
		if got := do(t, http.MethodGet, base+p); got.code != 200 || strings.Contains(got.body, `"4.16.5"`) {
			t.Errorf("%s after the stream was deleted: %d %s", p, got.code, got.body)
		}
	}
}

// TestGraphArch: ?arch= gives the graph one architecture follows. Of a stream built for
// platforms, a payload is a node of an architecture it has an image of, offering that image,
// and of multi, offering its index; a stream of single images offers them to every
// architecture and none to multi. Edges join the kept nodes, renumbered.
func TestGraphArch(t *testing.T) {
	cat := catalog.New()
	multi := newStream("rel", "1.0.0-0.multi", "1.0.0-0.multi", "registry.example/rel/multi")
	multi.Spec.Platforms = []string{"linux/amd64", "linux/arm64"}
	cat.SetStream(multi)
	digest := func(c string) string { return "sha256:" + strings.Repeat(c, 64) }
	withPlatforms := func(tag string, images map[string]string) *v1alpha1.ReleasePayload {
		p := newPayload(multi, tag, v1alpha1.PhaseAccepted)
		p.Spec.PayloadCreationConfig.Platforms = multi.Spec.Platforms
		p.Status.PayloadImage = "registry.example/rel/multi@" + digest("0"+tag[len(tag)-1:])
		for _, platform := range multi.Spec.Platforms {
			if d, ok := images[platform]; ok {
				p.Status.PlatformImages = append(p.Status.PlatformImages, v1alpha1.PlatformImage{Platform: platform, Image: "registry.example/rel/multi@" + d})
			}
		}
		return p
	}
	// m2 has both platforms; m1 was recorded with amd64 only (as a payload of a stream that
	// gained arm64 later would be).
	m2, m1 := "1.0.0-0.multi-2026-11-26-000002", "1.0.0-0.multi-2026-11-26-000001"
	p2 := withPlatforms(m2, map[string]string{"linux/amd64": digest("a"), "linux/arm64": digest("b")})
	p2.Status.PayloadImage = "registry.example/rel/multi@" + digest("2")
	p1 := withPlatforms(m1, map[string]string{"linux/amd64": digest("c")})
	p1.Status.PayloadImage = "registry.example/rel/multi@" + digest("1")
	setPayload(cat, p2)
	setPayload(cat, p1)
	cat.SetGraph(graphMap("rel", "1.0.0-0.multi", edge(m1, m2, "u1", v1alpha1.JobSuccess, "https://prow.example/u1")))
	single := newStream("rel", "2.0.0", "2.0.0", "registry.example/rel/single")
	cat.SetStream(single)
	ps := newPayload(single, "2.0.0", v1alpha1.PhaseAccepted)
	ps.Status.PayloadImage = "registry.example/rel/single@" + digest("d")
	setPayload(cat, ps)
	base := serve(t, cat, osrc.Options{})

	// Every payload here is known by digest: its metadata names it.
	node := func(version, payload string) []string {
		_, digest, _ := strings.Cut(payload, "@")
		return []string{`    {`, `      "version": "` + version + `",`, `      "payload": "` + payload + `",`,
			`      "metadata": {`, `        "io.openshift.upgrades.graph.release.manifestref": "` + digest + `"`, `      }`}
	}
	graph := func(edges string, nodes ...[]string) string {
		out := []string{`{`, `  "nodes": [`}
		for i, n := range nodes {
			end := `    },`
			if i == len(nodes)-1 {
				end = `    }`
			}
			out = append(append(out, n...), end)
		}
		out = append(out, `  ],`)
		return lines(append(out, strings.Split(edges, "\n")...)...)
	}
	edge := func(from, to int) string {
		return fmt.Sprintf("  \"edges\": [\n    [\n      %d,\n      %d\n    ]\n  ]\n}", from, to)
	}
	noEdge := "  \"edges\": []\n}"
	check(t, base, []exchange{
		// Streams in semver order of their names: 2.0.0 first.
		{name: "every architecture: images as recorded", path: "/graph", code: 200, body: graph(edge(2, 1),
			node("2.0.0", "registry.example/rel/single@"+digest("d")), node(m2, "registry.example/rel/multi@"+digest("2")), node(m1, "registry.example/rel/multi@"+digest("1")))},
		{name: "amd64: each payload's amd64 image", path: "/graph?arch=amd64&channel=stable", code: 200, body: graph(edge(2, 1),
			node("2.0.0", "registry.example/rel/single@"+digest("d")), node(m2, "registry.example/rel/multi@"+digest("a")), node(m1, "registry.example/rel/multi@"+digest("c")))},
		{name: "arm64: only the payload with an arm64 image, so no edge", path: "/graph?arch=arm64", code: 200, body: graph(noEdge,
			node("2.0.0", "registry.example/rel/single@"+digest("d")), node(m2, "registry.example/rel/multi@"+digest("b")))},
		{name: "multi: the indexes", path: "/graph?arch=multi", code: 200, body: graph(edge(1, 0),
			node(m2, "registry.example/rel/multi@"+digest("2")), node(m1, "registry.example/rel/multi@"+digest("1")))},
		{name: "the cluster-version operator's parameters", path: "/graph?arch=arm64&channel=stable-1.0&id=0b1c&version=1.0.0", code: 200, body: graph(noEdge,
			node("2.0.0", "registry.example/rel/single@"+digest("d")), node(m2, "registry.example/rel/multi@"+digest("b")))},
		{name: "not an architecture", path: "/graph?arch=ARM/64", code: 400, body: text("Unsupported ?arch, must be an architecture (amd64, arm64, ppc64le, s390x, ...) or 'multi'")},
	})
	// The release's JSON lists its platforms' images.
	got := do(t, http.MethodGet, base+"/api/v1/releasestream/1.0.0-0.multi/release/"+m2)
	var info struct {
		Platforms []struct{ Platform, Image string } `json:"platforms"`
	}
	if err := json.Unmarshal([]byte(got.body), &info); err != nil || got.code != 200 {
		t.Fatalf("release info: %d %v", got.code, err)
	}
	want := []struct{ Platform, Image string }{{"linux/amd64", "registry.example/rel/multi@" + digest("a")}, {"linux/arm64", "registry.example/rel/multi@" + digest("b")}}
	if !reflect.DeepEqual(info.Platforms, want) {
		t.Errorf("platforms %+v, want %+v", info.Platforms, want)
	}
}
