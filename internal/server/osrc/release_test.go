package osrc_test

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"errors"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/google/go-cmp/cmp"

	"github.com/release-controller/release-controller/api/v1alpha1"
	"github.com/release-controller/release-controller/internal/changelog"
	"github.com/release-controller/release-controller/internal/server/catalog"
	"github.com/release-controller/release-controller/internal/server/osrc"
)

// zeroChangeLog is changeLogJson when there is no changelog: always present, zero values.
var zeroChangeLog = []string{
	`  "changeLogJson": {`,
	`    "from": {`,
	`      "name": "",`,
	`      "created": "0001-01-01T00:00:00Z",`,
	`      "digest": ""`,
	`    },`,
	`    "to": {`,
	`      "name": "",`,
	`      "created": "0001-01-01T00:00:00Z",`,
	`      "digest": ""`,
	`    }`,
	`  }`,
	`}`,
}

func doc(ls ...[]string) string {
	var out []string
	for _, l := range ls {
		out = append(out, l...)
	}
	return lines(out...)
}

func TestReleaseInfo(t *testing.T) {
	base := serve(t, fixture(), osrc.Options{ArtifactsURL: artifacts})
	api := "/api/v1/releasestream/" + nightly + "/release/"
	n3Info := doc([]string{
		`{`,
		`  "name": "` + n3 + `",`,
		`  "phase": "Accepted",`,
		`  "results": {`,
		`    "blockingJobs": {`,
		`      "e2e": {`,
		`        "state": "Succeeded",`,
		`        "url": "https://prow.example/e2e-3",`,
		`        "transitionTime": "2026-01-03T02:00:00Z"`,
		`      },`,
		`      "upgrade": {`,
		`        "state": "Succeeded",`,
		`        "url": "https://prow.example/up-3-2",`,
		`        "retries": 1,`,
		`        "previousAttemptURLs": [`,
		`          "https://prow.example/up-3-1"`,
		`        ],`,
		`        "transitionTime": "2026-01-03T05:00:00Z"`,
		`      }`,
		`    },`,
		`    "informingJobs": {`,
		`      "perf": {`,
		`        "state": "Succeeded",`,
		`        "url": "https://prow.example/perf-3-1",`,
		`        "previousAttemptURLs": [`,
		`          "https://prow.example/perf-3-2",`,
		`          "https://prow.example/perf-3-3"`,
		`        ],`,
		`        "transitionTime": "2026-01-03T06:00:00Z"`,
		`      }`,
		`    }`,
		`  },`,
		`  "upgradesTo": [`,
		`    {`,
		`      "From": "` + n1 + `",`,
		`      "To": "` + n3 + `",`,
		`      "Success": 1,`,
		`      "Failure": 1,`,
		`      "Total": 2,`,
		`      "History": {`,
		`        "https://prow.example/up-3-1": {`,
		`          "state": "Failed",`,
		`          "url": "https://prow.example/up-3-1"`,
		`        },`,
		`        "https://prow.example/up-3-2": {`,
		`          "state": "Succeeded",`,
		`          "url": "https://prow.example/up-3-2"`,
		`        }`,
		`      }`,
		`    }`,
		`  ],`,
		`  "upgradesFrom": [`,
		`    {`,
		`      "From": "` + n3 + `",`,
		`      "To": "` + n4 + `",`,
		`      "Success": 0,`,
		`      "Failure": 3,`,
		`      "Total": 3,`,
		`      "History": {`,
		`        "https://prow.example/up-4-1": {`,
		`          "state": "Failed",`,
		`          "url": "https://prow.example/up-4-1"`,
		`        },`,
		`        "https://prow.example/up-4-2": {`,
		`          "state": "Failed",`,
		`          "url": "https://prow.example/up-4-2"`,
		`        },`,
		`        "https://prow.example/up-4-3": {`,
		`          "state": "Failed",`,
		`          "url": "https://prow.example/up-4-3"`,
		`        }`,
		`      }`,
		`    },`,
		`    {`,
		`      "From": "` + n3 + `",`,
		`      "To": "4.17.0",`,
		`      "Success": 1,`,
		`      "Failure": 0,`,
		`      "Total": 1,`,
		`      "History": {`,
		`        "https://prow.example/s6": {`,
		`          "state": "Succeeded",`,
		`          "url": "https://prow.example/s6"`,
		`        }`,
		`      }`,
		`    }`,
		`  ],`,
	}, zeroChangeLog)
	// n2: a pending run, a skipped upgrade, and an informing job without a status yet.
	n2Info := doc([]string{
		`{`,
		`  "name": "` + n2 + `",`,
		`  "phase": "Ready",`,
		`  "results": {`,
		`    "blockingJobs": {`,
		`      "e2e": {`,
		`        "state": "Pending",`,
		`        "url": "https://prow.example/e2e-2"`,
		`      },`,
		`      "upgrade": {`,
		`        "state": "Succeeded",`,
		`        "url": ""`,
		`      }`,
		`    },`,
		`    "informingJobs": {`,
		`      "perf": {`,
		`        "state": "Pending",`,
		`        "url": ""`,
		`      }`,
		`    },`,
		`    "pendingJobs": {`,
		`      "e2e": {`,
		`        "state": "Pending",`,
		`        "url": "https://prow.example/e2e-2"`,
		`      },`,
		`      "perf": {`,
		`        "state": "Pending",`,
		`        "url": ""`,
		`      }`,
		`    }`,
		`  },`,
		`  "upgradesTo": [`,
		`    {`,
		`      "From": "` + n1 + `",`,
		`      "To": "` + n2 + `",`,
		`      "Success": 1,`,
		`      "Failure": 0,`,
		`      "Total": 1,`,
		`      "History": {`,
		`        "up-2-1": {`,
		`          "state": "Succeeded",`,
		`          "url": ""`,
		`        }`,
		`      }`,
		`    }`,
		`  ],`,
	}, zeroChangeLog)
	// n4: results lost (Unknown) read Failed; retries used up.
	n4Results := []string{
		`{`,
		`  "name": "` + n4 + `",`,
		`  "phase": "Rejected",`,
		`  "results": {`,
		`    "blockingJobs": {`,
		`      "e2e": {`,
		`        "state": "Failed",`,
		`        "url": ""`,
		`      },`,
		`      "upgrade": {`,
		`        "state": "Failed",`,
		`        "url": "https://prow.example/up-4-3",`,
		`        "retries": 2,`,
		`        "previousAttemptURLs": [`,
		`          "https://prow.example/up-4-1",`,
		`          "https://prow.example/up-4-2"`,
		`        ],`,
		`        "transitionTime": "2026-01-04T03:00:00Z"`,
		`      }`,
		`    },`,
		`    "informingJobs": {`,
		`      "perf": {`,
		`        "state": "Pending",`,
		`        "url": ""`,
		`      }`,
		`    },`,
		`    "pendingJobs": {`,
		`      "perf": {`,
		`        "state": "Pending",`,
		`        "url": ""`,
		`      }`,
		`    }`,
		`  },`,
		`  "upgradesTo": [`,
	}
	// The oldest payload: no verifications, no upgrades into it, no previous tag.
	n1Info := doc([]string{
		`{`,
		`  "name": "` + n1 + `",`,
		`  "phase": "Accepted",`,
		`  "results": {},`,
		`  "upgradesFrom": [`,
		`    {`,
		`      "From": "` + n1 + `",`,
		`      "To": "` + n3 + `",`,
		`      "Success": 1,`,
		`      "Failure": 1,`,
		`      "Total": 2,`,
		`      "History": {`,
		`        "https://prow.example/up-3-1": {`,
		`          "state": "Failed",`,
		`          "url": "https://prow.example/up-3-1"`,
		`        },`,
		`        "https://prow.example/up-3-2": {`,
		`          "state": "Succeeded",`,
		`          "url": "https://prow.example/up-3-2"`,
		`        }`,
		`      }`,
		`    },`,
		`    {`,
		`      "From": "` + n1 + `",`,
		`      "To": "` + n2 + `",`,
		`      "Success": 1,`,
		`      "Failure": 0,`,
		`      "Total": 1,`,
		`      "History": {`,
		`        "up-2-1": {`,
		`          "state": "Succeeded",`,
		`          "url": ""`,
		`        }`,
		`      }`,
		`    }`,
		`  ],`,
	}, zeroChangeLog)
	dupInfo := doc([]string{`{`, `  "name": "1.0.0",`, `  "phase": "Accepted",`, `  "results": {},`}, zeroChangeLog)
	missing := func(tag string) string {
		return text("unable to find release tag " + tag + ", it may have been deleted")
	}
	check(t, base, []exchange{
		{name: "accepted, short", path: api + n3 + "?format=short", code: 200, contentType: textJSON, body: n3Info},
		{name: "without changelogs configured the full answer is the same", path: api + n3, code: 200, body: n3Info},
		{name: "format json", path: api + n3 + "?format=json", code: 200, body: n3Info},
		{name: "format SHORT", path: api + n3 + "?format=SHORT", code: 200, body: n3Info},
		{name: "from another stream", path: api + n3 + "?from=4.16.3", code: 200, body: n3Info},
		{name: "ready, with pending jobs", path: api + n2, code: 200, body: n2Info},
		{name: "rejected", path: api + n4, code: 200, body: "prefix:" + lines(n4Results...)},
		{name: "oldest", path: api + n1, code: 200, body: n1Info},
		{name: "namespaced", path: "/api/v1/namespaces/a/releasestream/dup/release/1.0.0", code: 200, body: dupInfo},

		{name: "unknown tag", path: api + "4.17.0-0.nightly-2030-01-01-000000", code: 404, contentType: textError, body: missing("4.17.0-0.nightly-2030-01-01-000000")},
		{name: "tag of another stream", path: "/api/v1/releasestream/4-stable/release/" + n3, code: 404,
			body: text("release tag " + n3 + " does not belong to release 4-stable")},
		{name: "unknown stream, known tag", path: "/api/v1/releasestream/nope/release/4.16.3", code: 404, body: text("release tag 4.16.3 does not belong to release nope")},
		{name: "unknown stream, unknown tag", path: "/api/v1/releasestream/nope/release/9.9.9", code: 404, body: missing("9.9.9")},
		{name: "tag in another namespace", path: "/api/v1/namespaces/b/releasestream/dup/release/1.0.0", code: 404, body: text("release tag 1.0.0 does not belong to release dup")},
		{name: "unknown from names the tag", path: api + n3 + "?from=4.0.0", code: 404, body: missing(n3)},
		{name: "ambiguous stream", path: "/api/v1/releasestream/dup/release/1.0.0", code: 409, body: ambiguousDup},
		{name: "bad format", path: api + n3 + "?format=html", code: 400, body: text("error: format must be '', 'json' or 'short'")},
		{name: "bad format is checked after the lookup", path: api + "9.9.9?format=html", code: 404, body: missing("9.9.9")},
		{name: "POST", method: http.MethodPost, path: api + n3, code: 405, body: text("Method Not Allowed")},
	})
}

// fakeChangeLogs stands in for the changelog generator, which another package provides:
// compute decides what a computation returns, and finished changelogs are cached.
type fakeChangeLogs struct {
	compute func(ctx context.Context, from, to *v1alpha1.ReleasePayload) (*changelog.ChangeLog, error)

	mu       sync.Mutex
	cache    map[[2]string]*changelog.ChangeLog
	calls    [][2]string
	finished chan struct{}
}

func newFake(compute func(ctx context.Context, from, to *v1alpha1.ReleasePayload) (*changelog.ChangeLog, error)) *fakeChangeLogs {
	return &fakeChangeLogs{compute: compute, cache: map[[2]string]*changelog.ChangeLog{}, finished: make(chan struct{}, 16)}
}

func (f *fakeChangeLogs) Cached(from, to *v1alpha1.ReleasePayload) (*changelog.ChangeLog, bool) {
	f.mu.Lock()
	defer f.mu.Unlock()
	cl, ok := f.cache[[2]string{from.Name, to.Name}]
	return cl, ok
}

func (f *fakeChangeLogs) ChangeLog(ctx context.Context, from, to *v1alpha1.ReleasePayload) (*changelog.ChangeLog, error) {
	f.mu.Lock()
	f.calls = append(f.calls, [2]string{from.Name, to.Name})
	f.mu.Unlock()
	defer func() { f.finished <- struct{}{} }()
	cl, err := f.compute(ctx, from, to)
	if err == nil {
		f.mu.Lock()
		f.cache[[2]string{from.Name, to.Name}] = cl
		f.mu.Unlock()
	}
	return cl, err
}

func (f *fakeChangeLogs) callCount() int {
	f.mu.Lock()
	defer f.mu.Unlock()
	return len(f.calls)
}

// sampleChangeLog is a changelog between two payloads, with text that HTML must escape.
func sampleChangeLog(from, to *v1alpha1.ReleasePayload) *changelog.ChangeLog {
	return &changelog.ChangeLog{
		From: changelog.ReleaseInfo{Name: from.Name, Created: time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC), Digest: "sha256:1111"},
		To:   changelog.ReleaseInfo{Name: to.Name, Created: time.Date(2026, 1, 3, 0, 0, 0, 0, time.UTC), Digest: digest3},
		UpdatedImages: []changelog.ImageChange{{
			Name: "cli", Source: "https://github.com/example/cli",
			Revision: "bbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbb", FromRevision: "aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa",
			Commits: []changelog.Commit{{
				SHA: "bbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbb", Title: "Quote <script> & friends", PullRequest: 12,
				PullURL: "https://github.com/example/cli/pull/12", Time: time.Date(2026, 1, 2, 0, 0, 0, 0, time.UTC),
			}},
		}},
	}
}

// infoWithChangeLog is the part of release info the changelog tests read.
type infoWithChangeLog struct {
	ChangeLog     []byte          `json:"changeLog"`
	ChangeLogJSON json.RawMessage `json:"changeLogJson"`
}

func getInfo(t *testing.T, url string) (infoWithChangeLog, string) {
	t.Helper()
	got := do(t, http.MethodGet, url)
	if got.code != 200 {
		t.Fatalf("GET %s: %d %s", url, got.code, got.body)
	}
	var info infoWithChangeLog
	if err := json.Unmarshal([]byte(got.body), &info); err != nil {
		t.Fatal(err)
	}
	return info, got.body
}

// wantChangeLog checks that info carries cl: its Markdown rendered as HTML, base64 encoded,
// and its OSRC JSON.
func wantChangeLog(t *testing.T, info infoWithChangeLog, body string, cl *changelog.ChangeLog) {
	t.Helper()
	if want, _ := cl.HTML(); string(info.ChangeLog) != string(want) {
		t.Errorf("changeLog (-want +got):\n%s", cmp.Diff(want, string(info.ChangeLog)))
	}
	if !strings.Contains(body, `"changeLog": "`+base64.StdEncoding.EncodeToString(info.ChangeLog)+`",`) {
		t.Errorf("changeLog is not base64 before changeLogJson:\n%s", body)
	}
	want, err := json.Marshal(cl.JSON())
	if err != nil {
		t.Fatal(err)
	}
	var got map[string]any
	var wantMap map[string]any
	_ = json.Unmarshal(info.ChangeLogJSON, &got)
	_ = json.Unmarshal(want, &wantMap)
	if diff := cmp.Diff(wantMap, got); diff != "" {
		t.Errorf("changeLogJson (-want +got):\n%s", diff)
	}
}

func wantNoChangeLog(t *testing.T, info infoWithChangeLog, body string) {
	t.Helper()
	if info.ChangeLog != nil || strings.Contains(body, `"changeLog":`) {
		t.Errorf("unexpected changeLog:\n%s", body)
	}
	if !strings.Contains(body, strings.Join(zeroChangeLog, "\n")) {
		t.Errorf("changeLogJson is not the zero changelog:\n%s", body)
	}
}

func TestReleaseInfoChangeLog(t *testing.T) {
	api := "/api/v1/releasestream/" + nightly + "/release/"
	immediate := func(_ context.Context, from, to *v1alpha1.ReleasePayload) (*changelog.ChangeLog, error) {
		return sampleChangeLog(from, to), nil
	}

	t.Run("computed in time, then cached", func(t *testing.T) {
		fake := newFake(immediate)
		base := serve(t, fixture(), osrc.Options{ChangeLogs: fake, ChangeLogWait: time.Hour})
		cat := fixture()
		s, _ := cat.Stream(nightly)
		e1, _ := s.Entry(n1)
		e3, _ := s.Entry(n3)
		want := sampleChangeLog(e1.Payload, e3.Payload)

		// n3's previous tag is n1, the newest older Accepted payload (n2 is Ready).
		info, body := getInfo(t, base+api+n3)
		wantChangeLog(t, info, body, want)
		info, body = getInfo(t, base+api+n3)
		wantChangeLog(t, info, body, want)
		if n := fake.callCount(); n != 1 {
			t.Errorf("computed %d times, want once (then from the cache)", n)
		}
	})

	t.Run("from overrides the previous tag", func(t *testing.T) {
		fake := newFake(immediate)
		base := serve(t, fixture(), osrc.Options{ChangeLogs: fake, ChangeLogWait: time.Hour})
		info, body := getInfo(t, base+api+n3+"?from=4.16.3")
		if len(info.ChangeLog) == 0 {
			t.Fatalf("no changelog:\n%s", body)
		}
		fake.mu.Lock()
		calls := fake.calls
		fake.mu.Unlock()
		if want := [][2]string{{"4.16.3", n3}}; !cmp.Equal(calls, want) {
			t.Errorf("computed %v, want %v", calls, want)
		}
	})

	t.Run("short and tags without a previous one compute nothing", func(t *testing.T) {
		fake := newFake(immediate)
		base := serve(t, fixture(), osrc.Options{ChangeLogs: fake, ChangeLogWait: time.Hour})
		for _, path := range []string{api + n3 + "?format=short", api + n1, "/api/v1/namespaces/a/releasestream/dup/release/1.0.0"} {
			info, body := getInfo(t, base+path)
			wantNoChangeLog(t, info, body)
		}
		if n := fake.callCount(); n != 0 {
			t.Errorf("computed %d times", n)
		}
	})

	t.Run("a failed computation answers without it", func(t *testing.T) {
		fake := newFake(func(context.Context, *v1alpha1.ReleasePayload, *v1alpha1.ReleasePayload) (*changelog.ChangeLog, error) {
			return nil, errors.New("repository unreachable")
		})
		base := serve(t, fixture(), osrc.Options{ChangeLogs: fake, ChangeLogWait: time.Hour})
		info, body := getInfo(t, base+api+n3)
		wantNoChangeLog(t, info, body)
	})

	t.Run("a slow computation answers without it and goes on", func(t *testing.T) {
		release := make(chan struct{})
		var ctxErr error
		fake := newFake(func(ctx context.Context, from, to *v1alpha1.ReleasePayload) (*changelog.ChangeLog, error) {
			<-release
			ctxErr = ctx.Err() // the request has been answered by now
			return sampleChangeLog(from, to), nil
		})
		// The computation cannot end before release is closed, so the wait always expires.
		base := serve(t, fixture(), osrc.Options{ChangeLogs: fake, ChangeLogWait: time.Millisecond})
		info, body := getInfo(t, base+api+n3)
		wantNoChangeLog(t, info, body)

		close(release)
		<-fake.finished
		if err := ctxErr; err != nil {
			t.Errorf("the computation's context ended with the request: %v", err)
		}
		info, body = getInfo(t, base+api+n3)
		if len(info.ChangeLog) == 0 {
			t.Errorf("the finished changelog was not served from the cache:\n%s", body)
		}
		if n := fake.callCount(); n != 1 {
			t.Errorf("computed %d times, want once", n)
		}
	})
}

// TestReleaseInfoAuditAndSignature: an audited and signed payload's release info says so, with
// the signature's key and path; a payload not audited yet has neither field.
func TestReleaseInfoAuditAndSignature(t *testing.T) {
	cat := catalog.New()
	s := newStream("ns", "trusted", "1.0.0", "registry.example/ns/release")
	cat.SetStream(s)
	p := newPayload(s, "1.0.0-1", v1alpha1.PhaseAccepted)
	p.Status.PayloadImage = "registry.example/ns/release@" + digest3
	p.Status.Conditions = []metav1.Condition{
		{Type: v1alpha1.ConditionPayloadAudited, Status: metav1.ConditionTrue, Reason: v1alpha1.ReasonAuditPassed, Message: "4 checks passed"},
		{Type: v1alpha1.ConditionPayloadSigned, Status: metav1.ConditionTrue, Reason: v1alpha1.ReasonSigned, Message: v1alpha1.SignedMessage("0123456789ABCDEF", 1)},
		{Type: v1alpha1.ConditionPayloadSigstoreSigned, Status: metav1.ConditionTrue, Reason: v1alpha1.ReasonSigned, Message: "signed by " + sigstoreKey + ": signature and 3 attestations (slsaprovenance1, test-result ×1, verification-summary)"},
	}
	setPayload(cat, p)
	setPayload(cat, newPayload(s, "1.0.0-2", v1alpha1.PhaseAccepted))
	base := serve(t, cat, osrc.Options{})

	var info struct {
		Audit     *struct{ Result, Message string }
		Signature *struct {
			KeyID string `json:"keyID"`
			URL   string `json:"url"`
		}
		SigstoreSignature *struct {
			KeyID     string `json:"keyID"`
			Attached  string `json:"attached"`
			PublicKey string `json:"publicKey"`
			Verify    string `json:"verify"`
		} `json:"sigstoreSignature"`
	}
	getJSON(t, base+"/api/v1/releasestream/trusted/release/1.0.0-1", &info)
	if info.Audit == nil || info.Audit.Result != v1alpha1.ReasonAuditPassed || info.Audit.Message != "4 checks passed" {
		t.Errorf("audit = %+v", info.Audit)
	}
	wantURL := "/signatures/sha256=" + strings.TrimPrefix(digest3, "sha256:") + "/signature-1"
	if info.Signature == nil || info.Signature.KeyID != "0123456789ABCDEF" || info.Signature.URL != wantURL {
		t.Errorf("signature = %+v, want key 0123456789ABCDEF at %s", info.Signature, wantURL)
	}
	if ss := info.SigstoreSignature; ss == nil || ss.KeyID != sigstoreKey || !strings.HasPrefix(ss.Attached, "signed by "+sigstoreKey+": signature and 3 attestations") ||
		ss.PublicKey != "/signatures/cosign.pub" || ss.Verify != "cosign verify --key cosign.pub --insecure-ignore-tlog=true "+p.Status.PayloadImage {
		t.Errorf("sigstoreSignature = %+v, want key %s and the cosign command of %s", ss, sigstoreKey, p.Status.PayloadImage)
	}
	info.Audit, info.Signature, info.SigstoreSignature = nil, nil, nil
	getJSON(t, base+"/api/v1/releasestream/trusted/release/1.0.0-2", &info)
	if info.Audit != nil || info.Signature != nil || info.SigstoreSignature != nil {
		t.Errorf("a payload not audited yet: audit %+v, signature %+v, Sigstore %+v", info.Audit, info.Signature, info.SigstoreSignature)
	}
}

// sigstoreKey is the id of a Sigstore key.
const sigstoreKey = "sha256:5e5e5e5e5e5e5e5e5e5e5e5e5e5e5e5e5e5e5e5e5e5e5e5e5e5e5e5e5e5e5e5e"

func getJSON(t *testing.T, url string, into any) {
	t.Helper()
	resp, err := http.Get(url)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("GET %s: %s", url, resp.Status)
	}
	if err := json.NewDecoder(resp.Body).Decode(into); err != nil {
		t.Fatal(err)
	}
}
