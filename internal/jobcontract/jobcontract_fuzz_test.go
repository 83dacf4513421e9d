package jobcontract_test

import (
	"strconv"
	"strings"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/release-controller/release-controller/api/v1alpha1"
	"github.com/release-controller/release-controller/internal/jobcontract"
)

// Job labels and annotations are read back from objects anyone allowed to edit jobs may
// change: what the controller writes parses back to the same job, from the job's own
// namespace or another one.
func FuzzParseRoundTrip(f *testing.F) {
	f.Add("nightly", "ocp", "4.15.0-0.nightly-2026-11-22-093000", "e2e", "4.15.0-0.nightly-2026-11-21-093000", int32(2), false, "ci")
	f.Add("nightly", "ocp", "4.15.0", "", "", int32(0), true, "ocp")
	f.Add("s", "ns", "t", "upgrade", "", int32(-5), false, "ns")
	f.Fuzz(func(t *testing.T, stream, payloadNS, payload, verification, upgradeFrom string, attempt int32, creation bool, objNS string) {
		if payloadNS == "" || payload == "" {
			return // every payload has a namespace and a name
		}
		j := jobcontract.Job{Stream: stream, PayloadNamespace: payloadNS, Payload: payload, Type: v1alpha1.JobTypeVerification,
			Verification: verification, Attempt: attempt, UpgradeFrom: upgradeFrom}
		if creation {
			j = jobcontract.Job{Stream: stream, PayloadNamespace: payloadNS, Payload: payload, Type: v1alpha1.JobTypeCreation}
		}
		obj := &metav1.ObjectMeta{Namespace: objNS, Labels: j.Labels(objNS), Annotations: j.Annotations()}
		got, ok := jobcontract.Parse(obj)
		want := j
		want.Attempt = max(j.Attempt, 1) // a run is numbered from 1; a creation job reads as the first
		if !ok || got != want {
			t.Errorf("%+v written on an object in %q parses back as %+v (ok %v)", want, objNS, got, ok)
		}
		if key := jobcontract.PayloadKeyOf(obj); key != j.PayloadKey() {
			t.Errorf("the payload key of %+v reads %q, want %q", j, key, j.PayloadKey())
		}
		if !strings.Contains(payloadNS, "/") {
			if ns, tag := jobcontract.SplitPayloadKey(j.PayloadKey()); ns != payloadNS || tag != payload {
				t.Errorf("SplitPayloadKey(%q) = %q, %q", j.PayloadKey(), ns, tag)
			}
		}
		if name := j.Name(); len(name) > jobcontract.MaxNameLength || name != j.Name() {
			t.Errorf("the name of %+v is %q", j, name)
		}
	})
}

// An attempt annotation may hold anything: it reads as a number from 1, and a number the
// controller wrote reads as itself.
func FuzzParseAttempt(f *testing.F) {
	for _, seed := range []string{"1", "2", "0", "-1", "+3", "2147483647", "2147483648", "99999999999", "x", " 2", ""} {
		f.Add(seed)
	}
	f.Fuzz(func(t *testing.T, s string) {
		n := jobcontract.ParseAttempt(s)
		if n < 1 {
			t.Errorf("ParseAttempt(%q) = %d", s, n)
		}
		if again := jobcontract.ParseAttempt(strconv.Itoa(int(n))); again != n {
			t.Errorf("ParseAttempt(%q) = %d, which reads back as %d", s, n, again)
		}
	})
}
