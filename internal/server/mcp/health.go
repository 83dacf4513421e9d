package mcp

import (
	"context"
	"fmt"
	"strings"
	"time"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/release-controller/release-controller/internal/server/catalog"
)

// ToolStreamHealth is the tool of a stream's health: the figures of the stream's health page.
const ToolStreamHealth = "stream_health"

// StreamHealthInput is the input of stream_health.
type StreamHealthInput struct {
	Stream    string `json:"stream" jsonschema:"the release stream's name, e.g. 4.18.0-0.nightly"`
	Namespace string `json:"namespace,omitempty" jsonschema:"the stream's namespace; needed only when streams of that name exist in several namespaces"`
	Payloads  int    `json:"payloads,omitempty" jsonschema:"how many of the newest payloads to look at, 1 to 10000; default 200"`
	Days      int    `json:"days,omitempty" jsonschema:"how many days back to look, 1 to 365; default 14"`
}

func addHealthTool(s *sdk.Server, t catalogTools, readOnly *sdk.ToolAnnotations) {
	sdk.AddTool(s, &sdk.Tool{
		Name:  ToolStreamHealth,
		Title: "Health of a release stream",
		Description: "Shows how a release stream fared over its newest payloads of the last days: acceptance rate, time from creation to verdict " +
			"(p50/p90) overall and per day, the last accepted payload and the longest time without one, and per verification its pass, " +
			"retry and flake rates, run time p50/p90, last failure, and the components that changed where it started failing, most harmful " +
			"first. The same figures as the stream's health page and its format=json; rates are shares from 0 to 1, times are seconds.",
		Annotations: readOnly,
	}, t.streamHealth)
}

func (t catalogTools) streamHealth(_ context.Context, _ *sdk.CallToolRequest, in StreamHealthInput) (*sdk.CallToolResult, catalog.Health, error) {
	var none catalog.Health
	if in.Stream == "" {
		return nil, none, fmt.Errorf("stream is required; call %s for the streams", ToolListStreams)
	}
	if in.Payloads < 0 || in.Payloads > catalog.MaxHealthPayloads {
		return nil, none, fmt.Errorf("payloads must be from 1 to %d", catalog.MaxHealthPayloads)
	}
	if in.Days < 0 || in.Days > catalog.MaxHealthDays {
		return nil, none, fmt.Errorf("days must be from 1 to %d", catalog.MaxHealthDays)
	}
	s, err := t.stream(in.Namespace, in.Stream)
	if err != nil {
		return nil, none, err
	}
	// As of the minute, as the health page reports it: both give the same figures.
	h := s.Health(catalog.HealthWindow{Payloads: in.Payloads, Days: in.Days, Now: t.clock.Now().Truncate(time.Minute)})
	return text(healthText(h)), h, nil
}

// healthText is the report in a few lines for people and models that read text.
func healthText(h catalog.Health) string {
	var b strings.Builder
	fmt.Fprintf(&b, "Health of %s/%s over its newest %d payloads of the last %s:\n", h.Namespace, h.Stream, h.Window.Payloads, plural(h.Window.Days, "day"))
	if h.LastAccepted != nil {
		fmt.Fprintf(&b, "- last accepted payload: %s, created %s\n", h.LastAccepted.Tag, h.LastAccepted.Created.Format(time.RFC3339))
	} else {
		b.WriteString("- the stream has no accepted payload\n")
	}
	if h.Payloads == 0 {
		b.WriteString("- no payload was created in the window\n")
		return b.String()
	}
	fmt.Fprintf(&b, "- %s: %d accepted of %d verdicts (%.0f%%), %d rejected, %d failed, %d waiting\n",
		plural(h.Payloads, "payload"), h.Accepted, h.Verdicts, h.AcceptanceRate*100, h.Rejected, h.Failed, h.Waiting)
	fmt.Fprintf(&b, "- creation to verdict: p50 %s, p90 %s\n", secs(h.VerdictP50), secs(h.VerdictP90))
	if d := h.LongestDrought; d != nil {
		state := "ended by " + d.Until
		if d.Ongoing {
			state = "still going"
		}
		fmt.Fprintf(&b, "- longest time without a new accepted payload: %s (%s not accepted), %s\n", secs(d.Seconds), plural(d.Payloads, "payload"), state)
	}
	for _, v := range h.Verifications {
		fmt.Fprintf(&b, "- verification %s: harm %d (rejected %d, delayed %d); passed %d of %d, retried %d, flaky %d; runs p50 %s, p90 %s",
			v.Name, v.Harm, v.Rejected, v.Delayed, v.Passed, v.Ended, v.Retried, v.Flaky, secs(v.DurationP50), secs(v.DurationP90))
		if f := v.LastFailure; f != nil {
			fmt.Fprintf(&b, "; last failure %s on %s %s", f.Run, f.Tag, f.URL)
		}
		if len(v.Suspects) > 0 {
			var names []string
			for _, s := range v.Suspects {
				names = append(names, fmt.Sprintf("%s (%d)", s.Component, s.Breaks))
			}
			fmt.Fprintf(&b, "; suspects %s", strings.Join(names, ", "))
		}
		b.WriteString("\n")
	}
	return b.String()
}

func secs(s float64) string {
	return (time.Duration(s) * time.Second).String()
}
