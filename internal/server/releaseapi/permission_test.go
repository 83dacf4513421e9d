//go:build !unit

package releaseapi_test

import (
	"bytes"
	"context"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"

	"connectrpc.com/connect"
	. "github.com/onsi/gomega"
	"google.golang.org/protobuf/types/known/timestamppb"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/release-controller/release-controller/api/v1alpha1"
	releasecontrollerv1 "github.com/release-controller/release-controller/internal/gen/releasecontroller/v1"
	"github.com/release-controller/release-controller/internal/manager"
	"github.com/release-controller/release-controller/internal/releaselog"
	"github.com/release-controller/release-controller/internal/server/releaseapi"
)

// AddRelease asks for create on releaselogs/entries, which write access to the ReleaseLog
// objects does not grant: a caller who may create and update ReleaseLogs is refused with 403
// naming the permission. What such a caller writes into the objects directly is listed as
// written directly, never as the author it names; AddRelease's entries are verified.
func TestAddReleaseNeedsItsOwnPermission(t *testing.T) {
	w := newWriteEnv(t)
	ctx := context.Background()

	// Over the Connect protocol's plain HTTP (what curl does): 403, naming the permission.
	body := `{"release":{"type":"release","version":"1.0.0","origin":"ci"}}`
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, w.url+"/releasecontroller.v1.ReleaseService/AddRelease", strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Authorization", "Bearer "+w.directToken)
	resp, err := httpClient(t, false).Do(req)
	if err != nil {
		t.Fatal(err)
	}
	answer, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != http.StatusForbidden {
		t.Errorf("status %d, want 403: %s", resp.StatusCode, answer)
	}
	for _, want := range []string{w.directUser, "may not create releaselogs/entries (group release-controller.dev) in namespace " + `\"` + w.parts.Namespace + `\"`, "create releaselogs does not grant it"} {
		if !bytes.Contains(answer, []byte(want)) {
			t.Errorf("the refusal %s does not say %s", answer, want)
		}
	}
	// And in every protocol.
	for _, p := range protocols {
		_, err := newClient(t, w.url, p).AddRelease(ctx, withBearer(addRequest(&releasecontrollerv1.Release{Type: "release", Version: "1.0.0", Origin: "ci"}), w.directToken))
		if msg := expectCode(t, err, connect.CodePermissionDenied); !strings.Contains(msg, releaseapi.WritePermission) {
			t.Errorf("%s: the refusal %q does not name %s", p.name, msg, releaseapi.WritePermission)
		}
	}

	// The same caller writes an entry directly, in the controller's name, yesterday.
	direct := clientAs(t, w.directToken)
	yesterday := time.Now().UTC().Add(-24 * time.Hour).Truncate(time.Second)
	forged := &v1alpha1.ReleaseLog{
		ObjectMeta: metav1.ObjectMeta{Namespace: w.parts.Namespace, Name: releaselog.ObjectName(releaselog.DayOf(yesterday))},
		Spec: v1alpha1.ReleaseLogSpec{Entries: []v1alpha1.ReleaseLogEntry{{
			Type: "release", Version: "6.6.6", Origin: releaselog.ControllerOrigin, Author: releaselog.ControllerOrigin,
			Date: metav1.NewTime(yesterday), Message: "Accepted", Seal: strings.Repeat("A", 22),
		}}},
	}
	if err := direct.Create(ctx, forged); err != nil {
		t.Fatalf("writing the ReleaseLog directly: %v", err)
	}
	// And the writer adds one through the API, on the same day.
	if _, err := newClient(t, w.url, protocols[0]).AddRelease(ctx, withBearer(addRequest(&releasecontrollerv1.Release{
		Type: "release", Version: "1.0.1", Origin: "ci", Date: timestamppb.New(yesterday),
	}), w.writerToken)); err != nil {
		t.Fatal(err)
	}

	for _, p := range protocols {
		c := newClient(t, w.url, p)
		eventually(t, func(g Gomega) {
			listed, err := list(c, &releasecontrollerv1.ListReleasesRequest{Day: releaselog.DayOf(yesterday)})
			g.Expect(err).NotTo(HaveOccurred())
			authors := map[string]string{}
			verified := map[string]bool{}
			for _, r := range listed.Releases {
				authors[r.Version], verified[r.Version] = r.Author, r.Verified
			}
			g.Expect(authors).To(Equal(map[string]string{"6.6.6": "unverified: release-controller", "1.0.1": w.writerUser}), p.name)
			g.Expect(verified).To(Equal(map[string]bool{"6.6.6": false, "1.0.1": true}), p.name)
		})
	}
}

// clientAs is a client of the test API server with a bearer token.
func clientAs(t *testing.T, token string) client.Client {
	t.Helper()
	cfg := rest.AnonymousClientConfig(env.Config)
	cfg.BearerToken = token
	c, err := client.New(cfg, client.Options{Scheme: manager.NewScheme()})
	if err != nil {
		t.Fatal(err)
	}
	return c
}
