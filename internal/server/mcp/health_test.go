package mcp_test

import (
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"reflect"
	"strings"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/release-controller/release-controller/api/v1alpha1"
	"github.com/release-controller/release-controller/internal/releaselog"
	"github.com/release-controller/release-controller/internal/server"
	"github.com/release-controller/release-controller/internal/server/catalog"
	"github.com/release-controller/release-controller/internal/server/mcp"
	"github.com/release-controller/release-controller/internal/server/web"
	"github.com/release-controller/release-controller/internal/verdict/verdicttest"
)

// healthCatalog holds ocp/4.18 with payloads created an hour apart until an hour ago (times
// relative to now, as the tool reports as of now): accepted, rejected by e2e, accepted;
// each verdict 30 minutes after creation. The newest is accepted, so the longest time
// without an accepted payload is not the one still going.
func healthCatalog() *catalog.Catalog {
	c := catalog.New()
	c.SetStream(newStream("ocp", "4.18"))
	start := time.Now().Add(-3 * time.Hour).Truncate(time.Second)
	for i, phase := range []v1alpha1.PayloadPhase{v1alpha1.PhaseAccepted, v1alpha1.PhaseRejected, v1alpha1.PhaseAccepted} {
		p := newPayload("ocp", "4.18", fmt.Sprintf("4.18.%d", i), phase)
		p.CreationTimestamp = metav1.NewTime(start.Add(time.Duration(i) * time.Hour))
		p.Spec.Components[0].Image += fmt.Sprint(i)
		p.Spec.PayloadVerificationConfig.Verifications = []v1alpha1.Verification{{Name: "e2e"}}
		verdicttest.Earn(p, phase)
		cond := meta.FindStatusCondition(p.Status.Conditions, map[v1alpha1.PayloadPhase]string{
			v1alpha1.PhaseAccepted: v1alpha1.ConditionPayloadAccepted, v1alpha1.PhaseRejected: v1alpha1.ConditionPayloadRejected}[phase])
		cond.LastTransitionTime = metav1.NewTime(p.CreationTimestamp.Add(30 * time.Minute))
		c.SetPayload(p)
	}
	return c
}

// The tool answers with the catalog's report, and with the same figures as the health
// page's JSON served beside it.
func TestStreamHealth(t *testing.T) {
	cat := healthCatalog()
	session, base := serveWith(t, func(s *server.Server) {
		mcp.Register(s, releaselog.NewStore(), releaselog.Options{}, cat, nil)
		web.RegisterPages(s, cat, web.PageOptions{})
	})

	var fromTool catalog.Health
	text, isError := call(t, session, mcp.ToolStreamHealth, map[string]any{"stream": "4.18", "days": 2, "payloads": 50}, &fromTool)
	if isError {
		t.Fatalf("error: %s", text)
	}
	stream, err := cat.StreamIn("ocp", "4.18")
	if err != nil {
		t.Fatal(err)
	}
	want := roundTrip(t, stream.Health(catalog.HealthWindow{Payloads: 50, Days: 2, Now: fromTool.AsOf}))
	if !reflect.DeepEqual(fromTool, want) {
		t.Errorf("tool:\n%+v\nwant\n%+v", fromTool, want)
	}
	if fromTool.Payloads != 3 || fromTool.Accepted != 2 || fromTool.VerdictP50 != 1800 || len(fromTool.Verifications) != 1 ||
		fromTool.Verifications[0].Rejected != 1 || len(fromTool.Verifications[0].Suspects) != 1 || fromTool.Verifications[0].Suspects[0].Component != "api" {
		t.Errorf("tool figures: %+v", fromTool)
	}
	for _, line := range []string{
		"Health of ocp/4.18 over its newest 50 payloads of the last 2 days:\n",
		"- 3 payloads: 2 accepted of 3 verdicts (67%), 1 rejected, 0 failed, 0 waiting\n",
		"- creation to verdict: p50 30m0s, p90 30m0s\n",
		"- verification e2e: harm 1 (rejected 1, delayed 0); passed 2 of 3",
		"; suspects api (1)\n",
	} {
		if !strings.Contains(text, line) {
			t.Errorf("text lacks %q:\n%s", line, text)
		}
	}

	resp, err := http.Get(base + "/namespaces/ocp/releasestream/4.18/health?format=json&days=2&payloads=50")
	if err != nil {
		t.Fatal(err)
	}
	body, err := io.ReadAll(resp.Body)
	resp.Body.Close()
	if err != nil || resp.StatusCode != http.StatusOK {
		t.Fatalf("health json: %d %v", resp.StatusCode, err)
	}
	var fromPage catalog.Health
	if err := json.Unmarshal(body, &fromPage); err != nil {
		t.Fatal(err)
	}
	// Made a moment apart: only the time they were made for differs.
	fromPage.AsOf = fromTool.AsOf
	if !reflect.DeepEqual(fromPage, fromTool) {
		t.Errorf("the page's JSON and the tool differ:\n%+v\n%+v", fromPage, fromTool)
	}

	for args, wantErr := range map[string]map[string]any{
		"missing properties: [\"stream\"]": {},
		"no release stream":                {"stream": "nope"},
		"days must be from 1 to 365":       {"stream": "4.18", "days": 366},
		"payloads must be from 1 to 10":    {"stream": "4.18", "payloads": -1},
	} {
		if text, isError := call(t, session, mcp.ToolStreamHealth, wantErr, nil); !isError || !strings.Contains(text, args) {
			t.Errorf("%v: %v %q, want an error saying %q", wantErr, isError, text, args)
		}
	}
}

// roundTrip is h as a client reads it back from JSON.
func roundTrip(t *testing.T, h catalog.Health) catalog.Health {
	t.Helper()
	raw, err := json.Marshal(h)
	if err != nil {
		t.Fatal(err)
	}
	var out catalog.Health
	if err := json.Unmarshal(raw, &out); err != nil {
		t.Fatal(err)
	}
	return out
}
