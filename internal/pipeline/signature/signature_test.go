package signature

import (
	"errors"
	"strings"
	"testing"
	"time"
)

var (
	key  = []byte("shared-key")
	now  = time.Date(2026, 3, 25, 12, 0, 0, 0, time.UTC)
	path = "/pipelines/ns/web/prod/1.2.3/approve"
)

func TestVerify(t *testing.T) {
	ts := now.Format(time.RFC3339)
	good := Header(key, "POST", path, ts, nil)
	tests := []struct {
		name      string
		ts, sig   string
		method    string
		body      string
		clockSkew time.Duration
		want      error
	}{
		{name: "good", ts: ts, sig: good, method: "POST"},
		{name: "no headers", method: "POST", want: ErrMissing},
		{name: "no sha256= prefix", ts: ts, sig: strings.TrimPrefix(good, "sha256="), method: "POST", want: ErrMalformed},
		{name: "short", ts: ts, sig: good[:20], method: "POST", want: ErrMalformed},
		{name: "not hex", ts: ts, sig: "sha256=" + strings.Repeat("zz", 32), method: "POST", want: ErrMalformed},
		{name: "bad timestamp", ts: "yesterday", sig: good, method: "POST", want: ErrTimestamp},
		{name: "other key", ts: ts, sig: Header([]byte("other"), "POST", path, ts, nil), method: "POST", want: ErrMismatch},
		{name: "other method", ts: ts, sig: good, method: "PUT", want: ErrMismatch},
		{name: "body changed", ts: ts, sig: good, method: "POST", body: "x", want: ErrMismatch},
		{name: "expired", ts: ts, sig: good, method: "POST", clockSkew: Window + time.Second, want: ErrExpired},
		{name: "from the future", ts: ts, sig: good, method: "POST", clockSkew: -Window - time.Second, want: ErrExpired},
		{name: "just inside the window", ts: ts, sig: good, method: "POST", clockSkew: Window},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			v := NewVerifier(func() time.Time { return now.Add(tt.clockSkew) })
			err := v.Verify(key, tt.method, path, tt.ts, tt.sig, []byte(tt.body))
			if !errors.Is(err, tt.want) {
				t.Errorf("Verify = %v, want %v", err, tt.want)
			}
			if err != nil && strings.Contains(err.Error(), good[7:]) {
				t.Errorf("the error quotes the signature: %v", err)
			}
		})
	}
}

func TestReplay(t *testing.T) {
	clock := now
	v := NewVerifier(func() time.Time { return clock })
	ts := now.Format(time.RFC3339)
	sig := Header(key, "POST", path, ts, nil)
	if err := v.Verify(key, "POST", path, ts, sig, nil); err != nil {
		t.Fatal(err)
	}
	if err := v.Verify(key, "POST", path, ts, sig, nil); !errors.Is(err, ErrReplayed) {
		t.Errorf("replay: %v", err)
	}
	// Once out of the window the signature is forgotten, and refused as expired.
	clock = now.Add(Window + time.Second)
	if err := v.Verify(key, "POST", path, ts, sig, nil); !errors.Is(err, ErrExpired) {
		t.Errorf("replay after the window: %v", err)
	}
	if len(v.used) != 0 {
		t.Errorf("%d signatures kept past their window", len(v.used))
	}
}

func FuzzParse(f *testing.F) {
	f.Add(Header(key, "POST", path, now.Format(time.RFC3339), nil))
	f.Add("sha256=")
	f.Add("sha256=" + strings.Repeat("0", 63) + "g")
	f.Add("SHA256=" + strings.Repeat("a", 64))
	f.Add(" sha256=" + strings.Repeat("A", 64) + " ")
	f.Add("sha1=abc")
	f.Add("")
	f.Fuzz(func(t *testing.T, header string) {
		sum, err := Parse(header)
		if err != nil {
			if sum != nil {
				t.Errorf("Parse(%q) returned a sum with an error", header)
			}
			// The errors are fixed sentences: they never echo what was sent.
			if !errors.Is(err, ErrMissing) && !errors.Is(err, ErrMalformed) {
				t.Errorf("Parse(%q): unexpected error %v", header, err)
			}
			return
		}
		if len(sum) != 32 {
			t.Errorf("Parse(%q) = %d bytes", header, len(sum))
		}
		// What parses is a sha256= prefix and 64 hex digits, and round-trips.
		if !strings.EqualFold(strings.TrimPrefix(strings.TrimSpace(header), "sha256="), hexOf(sum)) {
			t.Errorf("Parse(%q) = %x does not round-trip", header, sum)
		}
	})
}

func FuzzVerify(f *testing.F) {
	ts := now.Format(time.RFC3339)
	f.Add(ts, Header(key, "POST", path, ts, nil), "")
	f.Add("2026-03-25T12:00:00+01:00", "sha256=00", "body")
	f.Add("", "", "")
	f.Fuzz(func(t *testing.T, ts, sig, body string) {
		v := NewVerifier(func() time.Time { return now })
		err := v.Verify(key, "POST", path, ts, sig, []byte(body))
		if err == nil && sig != Header(key, "POST", path, ts, []byte(body)) && !strings.EqualFold(strings.TrimSpace(sig), Header(key, "POST", path, ts, []byte(body))) {
			t.Errorf("accepted a signature that is not the request's: ts %q sig %q", ts, sig)
		}
	})
}

func hexOf(b []byte) string {
	const digits = "0123456789abcdef"
	out := make([]byte, 0, 2*len(b))
	for _, c := range b {
		out = append(out, digits[c>>4], digits[c&15])
	}
	return string(out)
}

// A notification is signed over a message no approval has: signed with the very key of an
// approval, for the path of an approval, it still never verifies as one. Before the
// notification domain, the notification strategy signed exactly what an approval signs, so a
// Pipeline whose notification URL was the approval route got its approval signed by the
// controller.
func TestNotificationIsNeverAnApproval(t *testing.T) {
	ts := now.Format(time.RFC3339)
	for _, p := range []string{path, "/", "", "/hooks/promote", "/pipelines/ns/web/prod/1.2.3/approve?x=1", "/a%2Fb"} {
		for _, body := range []string{"", `{"id":"uid/prod/1.2.3"}`} {
			sig := NotificationHeader(key, "POST", p, ts, []byte(body))
			if err := NewVerifier(func() time.Time { return now }).Verify(key, "POST", p, ts, sig, []byte(body)); !errors.Is(err, ErrMismatch) {
				t.Errorf("a notification to %q verified as an approval: %v", p, err)
			}
			if err := NewVerifier(func() time.Time { return now }).VerifyNotification(key, "POST", p, ts, sig, []byte(body)); err != nil {
				t.Errorf("a notification to %q does not verify as a notification: %v", p, err)
			}
			// Nor the reverse.
			if err := NewVerifier(func() time.Time { return now }).VerifyNotification(key, "POST", p, ts, Header(key, "POST", p, ts, []byte(body)), []byte(body)); !errors.Is(err, ErrMismatch) {
				t.Errorf("an approval of %q verified as a notification: %v", p, err)
			}
		}
	}
}

// Whatever a notification's path, timestamp and body, and whatever an approval's (the route
// answers POST only), the two signed messages differ: the approval's starts with "POST\n",
// the notification's with its domain line.
func FuzzNotificationMessageIsNoApprovalMessage(f *testing.F) {
	ts := now.Format(time.RFC3339)
	f.Add(path, ts, "", path, "")
	f.Add("POST", "/x", "\n", "release-controller.dev/notification/v1", "")
	f.Fuzz(func(t *testing.T, notePath, noteTS, noteBody, approvalPath, approvalBody string) {
		note := Notification.Message("POST", notePath, noteTS) + noteBody
		for _, approvalTS := range []string{noteTS, ts} {
			if approval := Approval.Message("POST", approvalPath, approvalTS) + approvalBody; approval == note {
				t.Fatalf("a notification's message is an approval's: %q", note)
			}
		}
	})
}

// The steps a receiver takes before it reads a key (ParseHeaders, Check) refuse what needs no
// key: malformed headers, a timestamp out of the window, a signature this verifier accepted.
func TestCheckBeforeTheKey(t *testing.T) {
	ts := now.Format(time.RFC3339)
	v := NewVerifier(func() time.Time { return now })
	s, err := ParseHeaders(ts, Header(key, "POST", path, ts, nil))
	if err != nil {
		t.Fatal(err)
	}
	if err := v.Check(s); err != nil {
		t.Fatalf("Check of a fresh signature: %v", err)
	}
	if err := v.Accept(Approval, key, "POST", path, s, nil); err != nil {
		t.Fatalf("Accept: %v", err)
	}
	if err := v.Check(s); !errors.Is(err, ErrReplayed) {
		t.Errorf("Check of an accepted signature: %v, want ErrReplayed", err)
	}
	if err := v.Accept(Approval, key, "POST", path, s, nil); !errors.Is(err, ErrReplayed) {
		t.Errorf("Accept again: %v, want ErrReplayed", err)
	}
	old, _ := ParseHeaders(now.Add(-Window-time.Second).Format(time.RFC3339), Header(key, "POST", path, ts, nil))
	if err := v.Check(old); !errors.Is(err, ErrExpired) {
		t.Errorf("Check of an old timestamp: %v, want ErrExpired", err)
	}
	if _, err := ParseHeaders(ts, "sha256=zz"); !errors.Is(err, ErrMalformed) {
		t.Errorf("ParseHeaders of a malformed signature: %v", err)
	}
	if s.Digest() == hexOf(s.Sum) || len(s.Digest()) != 64 {
		t.Errorf("Digest %q is not the SHA-256 of the signature", s.Digest())
	}
}
