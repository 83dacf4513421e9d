//go:build !unit

package releaseapi_test

import (
	"context"
	"strings"
	"testing"
	"time"

	"connectrpc.com/connect"
	. "github.com/onsi/gomega"
	"google.golang.org/protobuf/types/known/timestamppb"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/release-controller/release-controller/api/v1alpha1"
	releasecontrollerv1 "github.com/release-controller/release-controller/internal/gen/releasecontroller/v1"
)

// authorship is who an entry says wrote it.
type authorship struct{ author, reported string }

// Nobody writes in someone else's name: two allowed users, each naming the other (or a
// person) as the author, get entries whose author is themselves, the authenticated caller;
// the name they gave is only the reported author.
func TestAddReleaseAuthorIsTheAuthenticatedCaller(t *testing.T) {
	w := newWriteEnv(t)
	ctx := context.Background()
	// Dated a day back, so that every entry falls on one day whenever the test runs.
	date := timestamppb.New(time.Now().Add(-24 * time.Hour))
	var day string
	for _, tc := range []struct {
		name, token, version, author, reported string
		want                                   authorship
	}{
		{"writer names the other user as the author", w.writerToken, "1.0.0", w.otherUser, "", authorship{w.writerUser, w.otherUser}},
		{"the other user names the writer", w.otherToken, "1.0.1", w.writerUser, "", authorship{w.otherUser, w.writerUser}},
		{"a user naming themselves", w.otherToken, "1.0.2", w.otherUser, "", authorship{w.otherUser, ""}},
		{"naming nobody", w.writerToken, "1.0.3", "", "", authorship{w.writerUser, ""}},
		{"a CI system writing for a person", w.writerToken, "1.0.4", "", "alice", authorship{w.writerUser, "alice"}},
		{"reported_author wins over author", w.otherToken, "1.0.5", "bob", "carol", authorship{w.otherUser, "carol"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			// Every protocol carries the field alike; connect-json is the one curl speaks.
			c := newClient(t, w.url, protocols[1])
			resp, err := c.AddRelease(ctx, withBearer(addRequest(&releasecontrollerv1.Release{
				Type: "release", Version: tc.version, Origin: "ci", Date: date, Author: tc.author, ReportedAuthor: tc.reported,
			}), tc.token))
			if err != nil {
				t.Fatal(err)
			}
			day = resp.Msg.Day
		})
	}
	want := map[string]authorship{
		"1.0.0": {w.writerUser, w.otherUser},
		"1.0.1": {w.otherUser, w.writerUser},
		"1.0.2": {w.otherUser, ""},
		"1.0.3": {w.writerUser, ""},
		"1.0.4": {w.writerUser, "alice"},
		"1.0.5": {w.otherUser, "carol"},
	}

	// As the API server holds them,
	var logs v1alpha1.ReleaseLogList
	if err := env.Client.List(ctx, &logs, client.InNamespace(w.parts.Namespace)); err != nil {
		t.Fatal(err)
	}
	stored := map[string]authorship{}
	for _, l := range logs.Items {
		for _, e := range l.Spec.Entries {
			stored[e.Version] = authorship{e.Author, e.ReportedAuthor}
		}
	}
	NewWithT(t).Expect(stored).To(Equal(want), "the ReleaseLog objects")

	// and as the API lists them.
	c := newClient(t, w.url, protocols[0])
	eventually(t, func(g Gomega) {
		listed, err := list(c, &releasecontrollerv1.ListReleasesRequest{Day: day})
		g.Expect(err).NotTo(HaveOccurred())
		got := map[string]authorship{}
		for _, r := range listed.Releases {
			got[r.Version] = authorship{r.Author, r.ReportedAuthor}
		}
		g.Expect(got).To(Equal(want), "ListReleases")
	})
}

func TestAddReleaseRefusesAnOverlongReportedAuthor(t *testing.T) {
	w := newWriteEnv(t)
	c := newClient(t, w.url, protocols[0])
	long := strings.Repeat("é", 129)
	for _, r := range []*releasecontrollerv1.Release{
		{Type: "release", Version: "1.0.0", Origin: "ci", Author: long},
		{Type: "release", Version: "1.0.0", Origin: "ci", ReportedAuthor: long},
	} {
		_, err := c.AddRelease(context.Background(), withBearer(addRequest(r), w.writerToken))
		if msg := expectCode(t, err, connect.CodeInvalidArgument); !strings.Contains(msg, "129 characters") || !strings.Contains(msg, "128") {
			t.Errorf("the error %q does not say the length and the limit", msg)
		}
	}
	// 128 characters are fine.
	if _, err := c.AddRelease(context.Background(), withBearer(addRequest(&releasecontrollerv1.Release{
		Type: "release", Version: "1.0.1", Origin: "ci", ReportedAuthor: long[len("é"):],
	}), w.writerToken)); err != nil {
		t.Errorf("a reported author of 128 characters: %v", err)
	}
	if versions := storedVersions(t, w.parts.Namespace); len(versions) != 1 {
		t.Errorf("the API server holds %v, want only the last add", versions)
	}
}
