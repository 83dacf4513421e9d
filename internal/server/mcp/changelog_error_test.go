package mcp_test

import (
	"context"
	"errors"
	"strings"
	"testing"

	"github.com/release-controller/release-controller/api/v1alpha1"
	"github.com/release-controller/release-controller/internal/changelog"
	"github.com/release-controller/release-controller/internal/releaselog"
	"github.com/release-controller/release-controller/internal/server/mcp"
)

// failingChangeLogs fails every changelog with an error holding what a remote answered.
type failingChangeLogs struct{ err error }

func (f failingChangeLogs) Cached(*v1alpha1.ReleasePayload, *v1alpha1.ReleasePayload) (*changelog.ChangeLog, bool) {
	return nil, false
}

func (f failingChangeLogs) ChangeLog(context.Context, *v1alpha1.ReleasePayload, *v1alpha1.ReleasePayload) (*changelog.ChangeLog, error) {
	return nil, f.err
}

// get_changelog says what kind of failure it was, never what a registry or git server
// answered (the server's log has it).
func TestGetChangelogErrorHoldsNoRemoteText(t *testing.T) {
	const marker = "MARKER-91ab-registry-said"
	for err, want := range map[error]string{
		errors.New("reading the image of payload x: " + marker):                        "changelog from 4.17.9 to 4.18.1: it failed; the server’s log has the details",
		&changelog.FetchError{Status: "timed out after 5m0s", Err: errors.New(marker)}: "changelog from 4.17.9 to 4.18.1: the repository could not be fetched (timed out after 5m0s)",
	} {
		session := serveAll(t, releaselog.NewStore(), releaselog.Options{}, filledCatalog(), failingChangeLogs{err: err})
		text, isError := call(t, session, mcp.ToolGetChangelog, map[string]any{"from": "4.17.9", "to": "4.18.1"}, nil)
		if !isError || !strings.Contains(text, want) || strings.Contains(text, marker) {
			t.Errorf("get_changelog failing with %v: %v %q, want %q", err, isError, text, want)
		}
	}
}
