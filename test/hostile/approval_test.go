//go:build !unit

package hostile

import (
	"bytes"
	"context"
	"errors"
	"net/http"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/release-controller/release-controller/api/v1alpha1"
	"github.com/release-controller/release-controller/internal/pipeline/signature"
	"github.com/release-controller/release-controller/internal/server/approval"
)

// The approvals' end-to-end checks run against the built api with requests signed as
// `release-controller pipeline approve --key-file` signs them (package signature); the unit
// tests of package signature check the verifier alone on a fake clock.

const approvalRevision = "4.20.0-0.nightly-2026-03-04-000000"

// approvalKey is the key every pipeline of these tests shares, in a Secret of each namespace:
// what keeps one target's signature from another's is what it signs, not the key.
var approvalKey = []byte("approval key shared by every environment")

// newNamespaces creates namespaces named after the test.
func newNamespaces(t *testing.T, names ...string) {
	t.Helper()
	for _, n := range names {
		if err := env.Client.Create(context.Background(), &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: n}}); err != nil {
			t.Fatal(err)
		}
	}
}

// waitingPipeline creates a pipeline whose staging and prod wait for approvalRevision, both
// signed with approvalKey, and returns the approval of staging.
func waitingPipeline(t *testing.T, namespace, name string) approval.Request {
	t.Helper()
	if err := createWaitingPipeline(context.Background(), env.Client, namespace, name, "staging", "approvals", approvalKey, approvalRevision); err != nil {
		t.Fatal(err)
	}
	return approval.Request{Server: base, Namespace: namespace, Pipeline: name, Environment: "staging", Revision: approvalRevision, Key: approvalKey}
}

// signedFor is a request to sendTo's route carrying the signature headers of a request to
// signFor's route, made at signedAt with body.
func signedFor(t *testing.T, signFor, sendTo approval.Request, signedAt time.Time, body []byte) request {
	t.Helper()
	signURL, err := signFor.URL()
	if err != nil {
		t.Fatal(err)
	}
	sendURL, err := sendTo.URL()
	if err != nil {
		t.Fatal(err)
	}
	ts := signedAt.UTC().Format(time.RFC3339)
	return request{surface: surfaceApproval, method: http.MethodPost, path: sendURL.EscapedPath(), body: body, header: http.Header{
		signature.HeaderTimestamp: {ts},
		signature.HeaderSignature: {signature.Header(signFor.Key, http.MethodPost, signURL.EscapedPath(), ts, body)},
	}}
}

// refused sends r and fails t unless the api answers want and records no approval in any
// environment of pipelines.
func refused(t *testing.T, what string, r request, want int, pipelines ...approval.Request) {
	t.Helper()
	resp, err := send(r)
	if err != nil {
		t.Fatalf("%s: %v", what, err)
	}
	if resp.status != want {
		t.Errorf("%s: %d %s, want %d", what, resp.status, bytes.TrimSpace(resp.body), want)
	}
	for _, p := range pipelines {
		checkNoApproval(t, types.NamespacedName{Namespace: p.Namespace, Name: p.Pipeline})
	}
}

// accepted sends a with the CLI's client and fails t unless the api records it.
func accepted(t *testing.T, a approval.Request) {
	t.Helper()
	resp, err := a.Send(context.Background(), httpClient)
	if err != nil {
		t.Fatalf("approving %s/%s %s %s: %v", a.Namespace, a.Pipeline, a.Environment, a.Revision, err)
	}
	if resp.Approver != "hmac:approvals" {
		t.Errorf("approver %q, want hmac:approvals", resp.Approver)
	}
	status := approvalOf(t, a)
	if status == nil || status.Revision != a.Revision || status.Approver != "hmac:approvals" {
		t.Errorf("the status of %s/%s %s records %+v, want the approval of %s", a.Namespace, a.Pipeline, a.Environment, status, a.Revision)
	}
}

// approvalOf reads the approval the status of a's environment records.
func approvalOf(t *testing.T, a approval.Request) *v1alpha1.ApprovalRecord {
	t.Helper()
	var p v1alpha1.Pipeline
	if err := env.Client.Get(context.Background(), types.NamespacedName{Namespace: a.Namespace, Name: a.Pipeline}, &p); err != nil {
		t.Fatal(err)
	}
	for _, e := range p.Status.Environments {
		if e.Name == a.Environment {
			return e.Approval
		}
	}
	return nil
}

// A signature made for one approval is refused (401) for every other: another pipeline,
// another environment signed with the same key, another revision, another namespace, in
// both directions; then each target, signed for itself, is accepted, which shows that the
// refusals were the signature's doing and not the target's state.
func TestApprovalSignatureIsGoodForItsOwnApprovalOnly(t *testing.T) {
	nsA, nsB := "approvals-a", "approvals-b"
	newNamespaces(t, nsA, nsB)
	target := waitingPipeline(t, nsA, "web")
	otherPipeline := waitingPipeline(t, nsA, "api")
	otherNamespace := waitingPipeline(t, nsB, "web")
	otherEnvironment := target
	otherEnvironment.Environment = "prod"
	otherRevision := target
	otherRevision.Revision = "4.20.0-0.nightly-2026-03-05-000000"
	pipelines := []approval.Request{target, otherPipeline, otherNamespace}

	now := time.Now()
	for what, other := range map[string]approval.Request{
		"another pipeline": otherPipeline, "another environment with the same key": otherEnvironment,
		"another revision": otherRevision, "another namespace": otherNamespace,
	} {
		refused(t, "signed for "+what+", sent to the target", signedFor(t, other, target, now, nil), http.StatusUnauthorized, pipelines...)
		refused(t, "signed for the target, sent to "+what, signedFor(t, target, other, now, nil), http.StatusUnauthorized, pipelines...)
	}
	// The body is signed too.
	refused(t, "signed with one body, sent with another", func() request {
		r := signedFor(t, target, target, now, []byte(`{"comment":"ok"}`))
		r.body = []byte(`{"comment":"ok!"}`)
		return r
	}(), http.StatusUnauthorized, pipelines...)

	for _, a := range []approval.Request{target, otherPipeline, otherEnvironment, otherNamespace} {
		accepted(t, a)
	}
}

// A signature the api accepted is refused when sent again (409), even once the environment
// waits for that revision's approval again: nothing but the replay check stands in its way.
func TestApprovalReplayIsRefused(t *testing.T) {
	ns := "approvals-replay"
	newNamespaces(t, ns)
	a := waitingPipeline(t, ns, "web")
	first := signedFor(t, a, a, time.Now(), nil)
	resp, err := send(first)
	if err != nil || resp.status != http.StatusOK {
		t.Fatalf("the first request: %v %+v", err, resp)
	}
	if got := approvalOf(t, a); got == nil || got.Revision != a.Revision {
		t.Fatalf("the first request recorded %+v", got)
	}
	// The approval cleared, the environment waiting as before the first request.
	var p v1alpha1.Pipeline
	if err := env.Client.Get(context.Background(), types.NamespacedName{Namespace: ns, Name: "web"}, &p); err != nil {
		t.Fatal(err)
	}
	for i := range p.Status.Environments {
		p.Status.Environments[i].Approval = nil
	}
	if err := env.Client.Status().Update(context.Background(), &p); err != nil {
		t.Fatal(err)
	}
	resp, err = send(first)
	if err != nil {
		t.Fatal(err)
	}
	if resp.status != http.StatusConflict || !strings.Contains(string(resp.body), "used already") {
		t.Errorf("the replay: %d %s, want 409 saying the signature was used already", resp.status, resp.body)
	}
	checkNoApproval(t, types.NamespacedName{Namespace: ns, Name: "web"})
}

// A correctly signed approval whose timestamp is outside signature.Window of the api's clock
// (the real one) is refused (401), whether older or newer; just inside, it is accepted.
func TestApprovalOutsideTheWindowIsRefused(t *testing.T) {
	ns := "approvals-window"
	newNamespaces(t, ns)
	a := waitingPipeline(t, ns, "web")
	for _, skew := range []time.Duration{-signature.Window - time.Minute, signature.Window + time.Minute, -24 * time.Hour, -100 * 365 * 24 * time.Hour} {
		old := a
		old.Now = func() time.Time { return time.Now().Add(skew) }
		_, err := old.Send(context.Background(), httpClient)
		var refusal *approval.StatusError
		if !errors.As(err, &refusal) || refusal.Code != http.StatusUnauthorized || !strings.Contains(refusal.Message, "away from the server's clock") {
			t.Errorf("signed %s from now: %v, want 401 for a timestamp outside the window", skew, err)
		}
		checkNoApproval(t, types.NamespacedName{Namespace: ns, Name: "web"})
	}
	// A minute inside the window: a client whose clock is a little off still gets through.
	inside := a
	inside.Now = func() time.Time { return time.Now().Add(-signature.Window + time.Minute) }
	accepted(t, inside)
}

// A body over the route's limit (64 KiB) is refused with 413 before its signature is
// checked: a correctly signed one and one with a garbage signature get the same 413, not
// 200 or 401, with and without a Content-Length. A correctly signed body of exactly the
// limit is accepted, so the 413s are the size's doing.
func TestApprovalOversizeBodyIsRefusedBeforeTheSignature(t *testing.T) {
	ns := "approvals-size"
	newNamespaces(t, ns)
	a := waitingPipeline(t, ns, "web")
	const limit = 64 << 10
	over := bytes.Repeat([]byte("a"), limit+1)
	for _, chunked := range []bool{false, true} {
		signed := signedFor(t, a, a, time.Now(), over)
		signed.chunked = chunked
		refused(t, "a correctly signed oversize body", signed, http.StatusRequestEntityTooLarge, a)

		garbage := signedFor(t, a, a, time.Now(), over)
		garbage.chunked = chunked
		garbage.header.Set(signature.HeaderSignature, "sha256="+strings.Repeat("0", 64))
		refused(t, "an oversize body with a garbage signature", garbage, http.StatusRequestEntityTooLarge, a)

		malformed := signedFor(t, a, a, time.Now(), over)
		malformed.chunked = chunked
		malformed.header.Set(signature.HeaderSignature, "not a signature")
		refused(t, "an oversize body with a malformed signature", malformed, http.StatusRequestEntityTooLarge, a)
	}
	// The limit itself is allowed: the 413s were the size's doing.
	atLimit := signedFor(t, a, a, time.Now(), bytes.Repeat([]byte("a"), limit))
	resp, err := send(atLimit)
	if err != nil || resp.status != http.StatusOK {
		t.Fatalf("a correctly signed body of exactly %d bytes: %v %+v", limit, err, resp)
	}
	if got := approvalOf(t, a); got == nil || got.Revision != a.Revision {
		t.Errorf("the body at the limit recorded %+v", got)
	}
}
