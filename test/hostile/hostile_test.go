//go:build !unit

package hostile

import (
	"context"
	"fmt"
	"maps"
	"net/http"
	"net/url"
	"os"
	"slices"
	"strconv"
	"strings"
	"testing"

	"google.golang.org/protobuf/encoding/protojson"
	"google.golang.org/protobuf/proto"
	"k8s.io/apimachinery/pkg/types"

	"github.com/release-controller/release-controller/api/v1alpha1"
	"github.com/release-controller/release-controller/internal/pipeline/signature"
)

// defaultSeed makes `go test` send the same requests every time; HOSTILE_SEED picks others.
const defaultSeed = 23

// The share of each surface in HOSTILE_REQUESTS (default 3,000), and the statuses that show
// its requests reached the handlers' real paths, not only the router: a REST answer and a
// stream not found; a Connect answer and an invalid argument; an approval refused for its
// signature (401), for its bearer token's user (403) and for its size (413); a signature
// served and a path refused.
var surfaceShare = []struct {
	name  string
	share int // per thousand
	next  func(*gen) request
	want  []int
}{
	{surfaceREST, 350, (*gen).rest, []int{200, 404}},
	{surfaceConnect, 250, (*gen).connect, []int{200, 400}},
	{surfaceApproval, 200, (*gen).approval, []int{401, 403, 413}},
	{surfaceSignatures, 200, (*gen).signaturesRequest, []int{200, 400}},
}

// TestHostileRequests sends a few thousand hostile requests from a seeded generator to every
// surface of the running api, one at a time, and checks every answer: no 5xx (nor a gRPC
// status of a server failure), no canary from outside the signature store, a /signatures/
// 200 only with one of the store's files. Then the api must still be alive and answering, its
// log free of panics, and the seeded pipeline's status without an approval. Each surface must
// have given the answers that show its requests reached the handlers (surfaceShare.want).
func TestHostileRequests(t *testing.T) {
	seed := uint64(defaultSeed)
	if v := os.Getenv("HOSTILE_SEED"); v != "" {
		var err error
		if seed, err = strconv.ParseUint(v, 10, 64); err != nil {
			t.Fatalf("HOSTILE_SEED=%q: %v", v, err)
		}
	}
	total := 3000
	if v := os.Getenv("HOSTILE_REQUESTS"); v != "" {
		n, err := strconv.Atoi(v)
		if err != nil || n <= 0 {
			t.Fatalf("HOSTILE_REQUESTS=%q: want a positive number", v)
		}
		total = n
	}
	t.Logf("seed %d (HOSTILE_SEED=%d reproduces this run), %d requests", seed, seed, total)
	for i, s := range surfaceShare {
		t.Run(s.name, func(t *testing.T) {
			// One source per surface, so that one surface's count leaves the others' requests alone.
			g := newGen(seed + uint64(i))
			n := total * s.share / 1000
			statuses := map[int]int{}
			for range n {
				statuses[sendAndCheck(t, s.next(g))]++
			}
			t.Logf("%s: %d requests (seed %d): %s", s.name, n, seed, describe(statuses))
			for _, code := range s.want {
				if n >= 100 && statuses[code] == 0 {
					t.Errorf("%s: no answer %d among %s", s.name, code, describe(statuses))
				}
			}
		})
	}
	requireHealthy(t)
	checkNoApproval(t, types.NamespacedName{Namespace: seeded.namespace, Name: seeded.pipeline})
}

// describe lists the statuses by count: "200×12 404×40".
func describe(statuses map[int]int) string {
	var parts []string
	for _, code := range slices.Sorted(maps.Keys(statuses)) {
		parts = append(parts, fmt.Sprintf("%d×%d", code, statuses[code]))
	}
	return strings.Join(parts, " ")
}

// checkNoApproval fails t when any environment of the pipeline recorded an approval.
func checkNoApproval(t testing.TB, key types.NamespacedName) {
	t.Helper()
	var p v1alpha1.Pipeline
	if err := env.Client.Get(context.Background(), key, &p); err != nil {
		t.Fatal(err)
	}
	for _, e := range p.Status.Environments {
		if e.Approval != nil {
			t.Errorf("pipeline %s recorded an approval of %s: %+v", key, e.Name, *e.Approval)
		}
	}
}

// FuzzSignaturesPath: whatever follows /signatures/, the answer is a client error or one of
// the store's files, never a canary from next to or above the store.
func FuzzSignaturesPath(f *testing.F) {
	hexDigest := strings.TrimPrefix(seeded.digest, "sha256:")
	for _, path := range []string{
		"sha256=" + hexDigest + "/signature-1", "ocp/release@sha256=" + hexDigest + "/signature-1", "pubkey.asc",
		"../canary", "..%2fcanary", "%2e%2e/canary", "%2e%2e%2fcanary", "%252e%252e%252fcanary", "..%5ccanary",
		"../sha256=" + hexDigest + "/signature-1", "%2e%2e%2fsha256=" + hexDigest + "%2fsignature-1",
		"../store-sibling/sha256=" + hexDigest + "/signature-1", "sha256=" + hexDigest + "/../../canary",
		"sha256=" + hexDigest + "/signature-1%00", "sha256=" + hexDigest + "/signature-1\x00/../../canary",
		seeded.canaries[0], url.PathEscape(seeded.canaries[0]), "%c0%ae%c0%ae/canary", strings.Repeat("../", 3000) + "canary",
		"a@sha256=" + hexDigest + "/signature-999999999",
	} {
		f.Add(path)
	}
	f.Fuzz(func(t *testing.T, path string) {
		sendAndCheck(t, request{surface: surfaceSignatures, method: http.MethodGet, path: "/signatures/" + escapeTarget(path)})
		sendAndCheck(t, request{surface: surfaceSignatures, method: http.MethodGet, path: "/signatures/" + url.PathEscape(path)})
	})
}

// FuzzRESTQuery: any stream, tag, namespace and query string on any REST route or page.
func FuzzRESTQuery(f *testing.F) {
	s := seeded
	f.Add(uint8(0), s.stream, s.tags[0], "in=>=4.15.0 <4.16.0&rel=2&prefix=4.20")
	f.Add(uint8(4), s.stream, s.tags[2], "from="+s.tags[0]+"&format=json")
	f.Add(uint8(9), s.dupStream, "..", "format=pullSpec")
	f.Add(uint8(26), s.stream, s.tags[3], "from="+s.tags[0]+"&to="+s.tags[3])
	f.Add(uint8(28), "", "%2e%2e", "from=..&to=%00&format=markdown")
	f.Add(uint8(29), s.stream, "", "channel=stable-4.20&arch=amd64&format=cincinnati")
	f.Add(uint8(31), s.stream, "", "day=2026-02-30&page=-1")
	f.Add(uint8(37), "..", "../../canary", "")
	f.Fuzz(func(t *testing.T, route uint8, stream, tag, query string) {
		path := restRoutes[int(route)%len(restRoutes)]
		path = strings.NewReplacer("{s}", url.PathEscape(stream), "{t}", url.PathEscape(tag), "{n}", url.PathEscape(stream), "{x}", tag).Replace(path)
		sendAndCheck(t, request{surface: surfaceREST, method: http.MethodGet, path: escapeTarget(path), query: escapeTarget(query)})
	})
}

// FuzzConnect: any body in any of the Connect handler's content types, with and without a
// token allowed to write the release log.
func FuzzConnect(f *testing.F) {
	g := newGen(defaultSeed)
	for i, procedure := range connectProcedures[:3] {
		msg := g.message(procedure)
		bin, _ := proto.Marshal(msg)
		js, _ := protojson.Marshal(msg)
		f.Add(uint8(i), uint8(0), bin, i == 0)
		f.Add(uint8(i), uint8(1), js, i == 0)
		f.Add(uint8(i), uint8(5), append([]byte{0, 0, 0, 0, byte(len(bin))}, bin...), false)
		f.Add(uint8(i), uint8(8), []byte{0x80, 0xff, 0xff, 0xff, 0xff}, true)
	}
	f.Add(uint8(0), uint8(1), []byte(`{"release":{"type":"release","version":"`+strings.Repeat("9", 5000)+`","date":"0001-01-01T00:00:00Z"}}`), true)
	f.Fuzz(func(t *testing.T, procedure, contentType uint8, body []byte, authorized bool) {
		ct := connectContentTypes[int(contentType)%len(connectContentTypes)]
		r := request{surface: surfaceConnect, method: http.MethodPost, path: connectProcedures[int(procedure)%len(connectProcedures)],
			header: http.Header{"Content-Type": {ct}}, body: body,
			h2c: strings.HasPrefix(ct, "application/grpc") && !strings.HasPrefix(ct, "application/grpc-web")}
		if authorized {
			r.header.Set("Authorization", "Bearer "+seeded.writerToken)
		}
		sendAndCheck(t, r)
	})
}

// FuzzApproval: any approval route, headers and body. Nothing here knows the key, so no
// approval may be recorded.
func FuzzApproval(f *testing.F) {
	s := seeded
	f.Add(s.namespace, s.pipeline, s.approvalEnv, s.waiting, "2026-03-01T00:00:00Z", "sha256="+strings.Repeat("0", 64), "", []byte(nil))
	f.Add(s.namespace, s.pipeline, "dev", s.waiting, "", "", "Bearer x", []byte("{}"))
	f.Add("..", "%2e%2e", s.approvalEnv, "x", "not a time", "sha256=zz", "Basic YTpi", []byte{0})
	f.Add(s.namespace, "nothing", "prod", s.tags[0], "9999-12-31T23:59:59Z", "", "Bearer "+s.writerToken, []byte(strings.Repeat("a", 70<<10)))
	f.Fuzz(func(t *testing.T, namespace, name, envName, revision, timestamp, sig, authorization string, body []byte) {
		path := "/pipelines/" + url.PathEscape(namespace) + "/" + url.PathEscape(name) + "/" + url.PathEscape(envName) + "/" + url.PathEscape(revision) + "/approve"
		h := http.Header{}
		for k, v := range map[string]string{signature.HeaderTimestamp: timestamp, signature.HeaderSignature: sig, "Authorization": authorization} {
			if v != "" {
				h.Set(k, headerValue(v))
			}
		}
		sendAndCheck(t, request{surface: surfaceApproval, method: http.MethodPost, path: escapeTarget(path), header: h, body: body})
		checkNoApproval(t, types.NamespacedName{Namespace: s.namespace, Name: s.pipeline})
	})
}
