package mcp

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"
	"k8s.io/utils/clock"
	"sigs.k8s.io/controller-runtime/pkg/log"

	"github.com/release-controller/release-controller/api/v1alpha1"
	"github.com/release-controller/release-controller/internal/changelog"
	"github.com/release-controller/release-controller/internal/server/catalog"
	"github.com/release-controller/release-controller/internal/updateservice"
)

// Tool names of streams and payloads.
const (
	ToolListStreams   = "list_streams"
	ToolLatestPayload = "latest_payload"
	ToolGetPayload    = "get_payload"
	ToolGetChangelog  = "get_changelog"
)

// phases in the order they are listed.
var phases = []v1alpha1.PayloadPhase{v1alpha1.PhaseAccepted, v1alpha1.PhaseRejected, v1alpha1.PhaseFailed, v1alpha1.PhaseReady, v1alpha1.PhasePending}

// StreamSummary is one release stream.
type StreamSummary struct {
	Namespace         string         `json:"namespace"`
	Name              string         `json:"name"`
	PayloadRepository string         `json:"payload_repository,omitempty" jsonschema:"where the stream's payload images are pushed, as REPOSITORY:TAG"`
	Payloads          int            `json:"payloads" jsonschema:"how many payloads the stream holds"`
	Phases            map[string]int `json:"phases" jsonschema:"how many payloads are in each phase (Pending, Ready, Accepted, Rejected, Failed); phases without payloads are left out"`
	Latest            string         `json:"latest,omitempty" jsonschema:"the tag of the newest payload, by semantic version"`
	LatestAccepted    string         `json:"latest_accepted,omitempty" jsonschema:"the tag of the newest Accepted payload"`
	Link              string         `json:"link" jsonschema:"the stream's page on this server"`
}

// ListStreamsOutput is the structured result of list_streams.
type ListStreamsOutput struct {
	Streams []StreamSummary `json:"streams" jsonschema:"the streams, by namespace, then by name (versions newest first)"`
}

// LatestPayloadInput is the input of latest_payload.
type LatestPayloadInput struct {
	Stream    string `json:"stream" jsonschema:"the release stream's name, e.g. 4.18.0-0.nightly"`
	Namespace string `json:"namespace,omitempty" jsonschema:"the stream's namespace; needed only when streams of that name exist in several namespaces"`
	Phase     string `json:"phase,omitempty" jsonschema:"the phase the payload must be in: Accepted (the default), Rejected, Failed, Ready, Pending, or Any"`
}

// GetPayloadInput is the input of get_payload.
type GetPayloadInput struct {
	Tag       string `json:"tag" jsonschema:"the payload's release tag, e.g. 4.18.0-0.nightly-2026-11-22-093000"`
	Stream    string `json:"stream,omitempty" jsonschema:"the release stream's name; optional, the tag is looked up in every stream without it"`
	Namespace string `json:"namespace,omitempty" jsonschema:"the namespace; optional, needed only when the tag or stream exists in several namespaces"`
}

// GetChangelogInput is the input of get_changelog.
type GetChangelogInput struct {
	To        string `json:"to" jsonschema:"the release tag of the newer payload"`
	From      string `json:"from,omitempty" jsonschema:"the release tag of the older payload; default: the newest older Accepted payload of to's stream"`
	Namespace string `json:"namespace,omitempty" jsonschema:"the namespace of both payloads; needed only when a tag exists in several namespaces"`
}

// Payload is one payload with its verdict and the evidence for it.
type Payload struct {
	Namespace     string         `json:"namespace"`
	Stream        string         `json:"stream"`
	Tag           string         `json:"tag"`
	Phase         string         `json:"phase" jsonschema:"Pending, Ready, Accepted, Rejected or Failed"`
	PullSpec      string         `json:"pull_spec" jsonschema:"REPOSITORY:TAG"`
	Image         string         `json:"image,omitempty" jsonschema:"the payload image by digest, once built"`
	Created       string         `json:"created" jsonschema:"when the payload was created, RFC 3339 in UTC"`
	Link          string         `json:"link" jsonschema:"the payload's page on this server"`
	Override      *Override      `json:"override,omitempty" jsonschema:"a person's verdict, which wins over the verifications"`
	CreationJob   CreationJob    `json:"creation_job" jsonschema:"the job that builds the payload image"`
	Conditions    []Condition    `json:"conditions" jsonschema:"PayloadCreated, PayloadAccepted, PayloadRejected and PayloadFailed"`
	Verifications []Verification `json:"verifications" jsonschema:"the verifications and every run of each"`
	Components    []Component    `json:"components" jsonschema:"the component images, pinned by digest"`
	Audit         *Audit         `json:"audit,omitempty" jsonschema:"the audit of an accepted payload against its image, once it ran"`
	Signature     *Signature     `json:"signature,omitempty" jsonschema:"the payload's signature, once signed"`
	// SigstoreSignature is beside Signature: the Sigstore signature and attestations in the
	// image's registry.
	SigstoreSignature *SigstoreSignature `json:"sigstore_signature,omitempty" jsonschema:"the payload's Sigstore signature and in-toto attestations in its registry, once attached"`
	// UpdateService is what the update service does with the payload (updates.go).
	UpdateService updateservice.PayloadView `json:"update_service" jsonschema:"what the update service (/graph) does with the payload: the risks on upgrades into it, the declared channels holding it, promotions to come, its tombstone"`
}

// Audit is what the audit of an accepted payload found.
type Audit struct {
	Result  string `json:"result" jsonschema:"AuditPassed, AuditFailed or AuditError (retried)"`
	Message string `json:"message"`
}

// Signature is where a payload's signature is and which key made it.
type Signature struct {
	KeyID string `json:"key_id" jsonschema:"the OpenPGP key that signed the payload"`
	URL   string `json:"url" jsonschema:"the signature on this server (OpenShift's layout); the public key is /signatures/pubkey.asc"`
}

// SigstoreSignature is what is attached to a payload's image in its registry, which key made
// it and how to check it.
type SigstoreSignature struct {
	KeyID     string `json:"key_id" jsonschema:"the Sigstore key that signed the payload, sha256:<hex> of its public key"`
	Attached  string `json:"attached" jsonschema:"the PayloadSigstoreSigned message: the signature and the attestations attached"`
	PublicKey string `json:"public_key" jsonschema:"the Sigstore public key on this server (PEM)"`
	Verify    string `json:"verify" jsonschema:"the cosign command that checks the signature, with the public key saved as cosign.pub"`
}

// Override is a payload's override.
type Override struct {
	Verdict string `json:"verdict" jsonschema:"Accepted or Rejected"`
	Reason  string `json:"reason"`
}

// CreationJob is the result of the payload's creation job.
type CreationJob struct {
	Name    string `json:"name,omitempty"`
	Status  string `json:"status" jsonschema:"Unknown while the job runs or is missing, then Success or Failed"`
	Message string `json:"message,omitempty"`
}

// Condition is one condition of a payload.
type Condition struct {
	Type    string `json:"type"`
	Status  string `json:"status" jsonschema:"True, False or Unknown"`
	Reason  string `json:"reason,omitempty"`
	Message string `json:"message,omitempty"`
	Since   string `json:"since,omitempty" jsonschema:"when the status last changed, RFC 3339 in UTC"`
}

// Verification is one verification of a payload.
type Verification struct {
	Name        string `json:"name"`
	Type        string `json:"type" jsonschema:"Blocking (decides acceptance) or Informing"`
	State       string `json:"state" jsonschema:"Pending, Success, Failure, Unknown or Skipped"`
	Message     string `json:"message,omitempty"`
	UpgradeFrom string `json:"upgrade_from,omitempty" jsonschema:"for upgrade verifications, which earlier payload they start from"`
	Runs        []Run  `json:"runs" jsonschema:"the runs, oldest first"`
}

// Run is one run of a verification.
type Run struct {
	Attempt     int    `json:"attempt"`
	Kind        string `json:"kind" jsonschema:"Job or ProwJob"`
	Name        string `json:"name" jsonschema:"the Job's or ProwJob's name"`
	State       string `json:"state" jsonschema:"Pending, Success, Failure or Unknown"`
	URL         string `json:"url,omitempty" jsonschema:"the run's results"`
	UpgradeFrom string `json:"upgrade_from,omitempty" jsonschema:"the release tag an upgrade run started from"`
	Message     string `json:"message,omitempty"`
	Started     string `json:"started,omitempty" jsonschema:"RFC 3339 in UTC"`
	Completed   string `json:"completed,omitempty" jsonschema:"RFC 3339 in UTC"`
}

// Component is one component of a payload.
type Component struct {
	Name  string `json:"name"`
	Image string `json:"image" jsonschema:"pinned by digest"`
}

type catalogTools struct {
	cat        *catalog.Catalog
	changeLogs changelog.PayloadChangeLogs
	// clock is the server's (the release log's), which the health report counts days from.
	clock clock.PassiveClock
}

func addCatalogTools(s *sdk.Server, t catalogTools, readOnly *sdk.ToolAnnotations) {
	sdk.AddTool(s, &sdk.Tool{
		Name:        ToolListStreams,
		Title:       "List release streams",
		Description: "Lists the release streams: namespace, name, how many payloads each holds by phase, and the newest and newest Accepted payload.",
		Annotations: readOnly,
	}, t.listStreams)
	sdk.AddTool(s, &sdk.Tool{
		Name:        ToolLatestPayload,
		Title:       "Latest payload of a stream",
		Description: "Finds the newest payload (by semantic version) of a release stream in a phase, Accepted unless another phase is given, and shows it as get_payload does.",
		Annotations: readOnly,
	}, t.latestPayload)
	sdk.AddTool(s, &sdk.Tool{
		Name:  ToolGetPayload,
		Title: "Get a payload",
		Description: "Shows one payload (release candidate) by tag: its phase, conditions with their messages, creation job, override, verifications with every run and its URL, its components, " +
			"and what the update service does with it: the risks on upgrades into it (matching rules, blocking or conditional), its update channels and its tombstone.",
		Annotations: readOnly,
	}, t.getPayload)
	// Not idempotent in cost: the first call may clone repositories; it only reads, though.
	sdk.AddTool(s, &sdk.Tool{
		Name:  ToolGetChangelog,
		Title: "Changelog between two payloads",
		Description: "Lists what changed from one payload to another: new, removed and rebuilt images, and for each updated component the commits " +
			"(subject, pull request, issues) between the two source revisions. The result is the OpenShift release-controller's ChangeLog JSON. " +
			"The first call for a pair may take minutes while repositories are cloned.",
		Annotations: &sdk.ToolAnnotations{ReadOnlyHint: true, IdempotentHint: true, OpenWorldHint: new(true)},
	}, t.getChangelog)
}

func (t catalogTools) listStreams(_ context.Context, _ *sdk.CallToolRequest, _ any) (*sdk.CallToolResult, ListStreamsOutput, error) {
	out := ListStreamsOutput{Streams: []StreamSummary{}}
	for _, s := range t.cat.Streams() {
		c := s.Summary()
		sum := StreamSummary{
			Namespace: s.Namespace, Name: s.Name, PayloadRepository: s.Object.Spec.PayloadRepository,
			Payloads: c.Payloads, Phases: phaseMap(c.Phases), Link: streamLink(s),
		}
		if c.Latest.Payload != nil {
			sum.Latest = c.Latest.Tag()
		}
		if c.LatestAccepted.Payload != nil {
			sum.LatestAccepted = c.LatestAccepted.Tag()
		}
		out.Streams = append(out.Streams, sum)
	}

	var b strings.Builder
	if len(out.Streams) == 0 {
		b.WriteString("There are no release streams.\n")
	} else {
		fmt.Fprintf(&b, "%s:\n", plural(len(out.Streams), "release stream"))
	}
	for _, s := range out.Streams {
		fmt.Fprintf(&b, "- %s/%s: %s", s.Namespace, s.Name, plural(s.Payloads, "payload"))
		if counts := phaseCounts(s.Phases); counts != "" {
			fmt.Fprintf(&b, " (%s)", counts)
		}
		fmt.Fprintf(&b, "; latest %s, latest accepted %s\n", orNone(s.Latest), orNone(s.LatestAccepted))
	}
	return text(b.String()), out, nil
}

func (t catalogTools) latestPayload(_ context.Context, _ *sdk.CallToolRequest, in LatestPayloadInput) (*sdk.CallToolResult, Payload, error) {
	var none Payload
	if in.Stream == "" {
		return nil, none, fmt.Errorf("stream is required; call %s for the streams", ToolListStreams)
	}
	phase, anyPhase, err := parsePhase(in.Phase)
	if err != nil {
		return nil, none, err
	}
	s, err := t.stream(in.Namespace, in.Stream)
	if err != nil {
		return nil, none, err
	}
	for _, e := range s.Entries {
		if anyPhase || e.Phase() == phase {
			out := payloadOf(s, e)
			out.UpdateService = t.updatesOf(s, e)
			return text(payloadText(out)), out, nil
		}
	}
	held := "no payloads"
	if c := phaseCounts(phaseMap(s.Summary().Phases)); c != "" {
		held = c
	}
	which := string(phase) + " payload"
	if anyPhase {
		which = "payload"
	}
	return nil, none, fmt.Errorf("release stream %s/%s has no %s (it holds %s)", s.Namespace, s.Name, which, held)
}

func (t catalogTools) getPayload(_ context.Context, _ *sdk.CallToolRequest, in GetPayloadInput) (*sdk.CallToolResult, Payload, error) {
	var none Payload
	s, e, err := t.find(in.Namespace, in.Stream, in.Tag)
	if err != nil {
		return nil, none, err
	}
	out := payloadOf(s, e)
	out.UpdateService = t.updatesOf(s, e)
	return text(payloadText(out)), out, nil
}

func (t catalogTools) getChangelog(ctx context.Context, _ *sdk.CallToolRequest, in GetChangelogInput) (*sdk.CallToolResult, changelog.JSONChangeLog, error) {
	var none changelog.JSONChangeLog
	if t.changeLogs == nil {
		return nil, none, errors.New("changelogs are not available on this server (it was started without them)")
	}
	s, to, err := t.find(in.Namespace, "", in.To)
	if err != nil {
		return nil, none, fmt.Errorf("to: %w", err)
	}
	var from catalog.Entry
	if in.From == "" {
		prev, ok := s.Previous(to.Tag())
		if !ok {
			return nil, none, fmt.Errorf("payload %s is the oldest of stream %s/%s: give from", to.Tag(), s.Namespace, s.Name)
		}
		from = prev
	} else if _, from, err = t.find(in.Namespace, "", in.From); err != nil {
		return nil, none, fmt.Errorf("from: %w", err)
	}
	cl, err := t.changeLogs.ChangeLog(ctx, from.Payload, to.Payload)
	if err != nil {
		// What a registry or git server answered stays in the log: MCP clients may be anyone.
		log.FromContext(ctx).Info("computing a changelog failed", "error", err.Error())
		return nil, none, fmt.Errorf("changelog from %s to %s: %s", from.Tag(), to.Tag(), changelog.PublicMessage(err))
	}
	// No text of its own: the SDK sends the JSON as the text too.
	return nil, cl.JSON(), nil
}

// stream finds a stream by name, in a namespace when one is given.
func (t catalogTools) stream(namespace, name string) (*catalog.Stream, error) {
	var s *catalog.Stream
	var err error
	if namespace != "" {
		s, err = t.cat.StreamIn(namespace, name)
	} else {
		s, err = t.cat.Stream(name)
	}
	var amb *catalog.AmbiguousError
	switch {
	case errors.Is(err, catalog.ErrNotFound):
		where := ""
		if namespace != "" {
			where = " in namespace " + namespace
		}
		return nil, fmt.Errorf("no release stream %q%s; call %s for the streams", name, where, ToolListStreams)
	case errors.As(err, &amb):
		return nil, fmt.Errorf("release stream %q exists in namespaces %s: give namespace", name, strings.Join(amb.Namespaces, ", "))
	}
	return s, err
}

// find finds a payload by tag, in a stream and namespace when they are given.
func (t catalogTools) find(namespace, stream, tag string) (*catalog.Stream, catalog.Entry, error) {
	if tag == "" {
		return nil, catalog.Entry{}, errors.New("a payload's tag is required")
	}
	if stream != "" {
		s, err := t.stream(namespace, stream)
		if err != nil {
			return nil, catalog.Entry{}, err
		}
		e, ok := s.Entry(tag)
		if !ok {
			return nil, catalog.Entry{}, fmt.Errorf("release stream %s/%s has no payload %q", s.Namespace, s.Name, tag)
		}
		return s, e, nil
	}
	var found []catalog.Located
	for _, l := range t.cat.FindTag(tag) {
		if namespace == "" || l.Stream.Namespace == namespace {
			found = append(found, l)
		}
	}
	switch len(found) {
	case 0:
		where := ""
		if namespace != "" {
			where = " in namespace " + namespace
		}
		return nil, catalog.Entry{}, fmt.Errorf("no payload %q%s; call %s for the streams and their latest payloads", tag, where, ToolListStreams)
	case 1:
		return found[0].Stream, found[0].Entry, nil
	}
	namespaces := make([]string, len(found))
	for i, l := range found {
		namespaces[i] = l.Stream.Namespace
	}
	return nil, catalog.Entry{}, fmt.Errorf("payload %q exists in namespaces %s: give namespace", tag, strings.Join(namespaces, ", "))
}

// parsePhase reads a phase, any case; empty is Accepted and "any" any phase.
func parsePhase(s string) (phase v1alpha1.PayloadPhase, anyPhase bool, err error) {
	if s == "" {
		return v1alpha1.PhaseAccepted, false, nil
	}
	if strings.EqualFold(s, "any") {
		return "", true, nil
	}
	for _, p := range phases {
		if strings.EqualFold(s, string(p)) {
			return p, false, nil
		}
	}
	return "", false, fmt.Errorf("phase must be Accepted, Rejected, Failed, Ready, Pending or Any, got %q", s)
}

func payloadOf(s *catalog.Stream, e catalog.Entry) Payload {
	p := e.Payload
	out := Payload{
		Namespace: s.Namespace, Stream: s.Name, Tag: e.Tag(), Phase: string(e.Phase()),
		PullSpec: s.PullSpec(e), Image: p.Status.PayloadImage, Created: timeString(p.CreationTimestamp.Time),
		Link: streamLink(s) + "/release/" + e.Tag(),
		CreationJob: CreationJob{Name: p.Status.ReleaseCreationJobResult.Name, Status: string(p.Status.ReleaseCreationJobResult.Status),
			Message: p.Status.ReleaseCreationJobResult.Message},
		Conditions: []Condition{}, Verifications: []Verification{}, Components: []Component{},
	}
	if out.CreationJob.Status == "" {
		out.CreationJob.Status = string(v1alpha1.CreationJobUnknown)
	}
	if o := p.Spec.PayloadOverride; o != nil {
		out.Override = &Override{Verdict: string(o.Override), Reason: o.Reason}
	}
	for _, c := range p.Status.Conditions {
		out.Conditions = append(out.Conditions, Condition{Type: c.Type, Status: string(c.Status), Reason: c.Reason,
			Message: c.Message, Since: timeString(c.LastTransitionTime.Time)})
	}
	for _, v := range p.Status.Verifications {
		ver := Verification{Name: v.Name, Type: string(v.Type), State: string(v.State), Message: v.Message,
			UpgradeFrom: string(v.UpgradeFrom), Runs: []Run{}}
		for _, r := range v.Runs {
			run := Run{Attempt: int(r.Attempt), Kind: string(r.Kind), Name: r.Name, State: string(r.State), URL: r.URL,
				UpgradeFrom: r.UpgradeFrom, Message: r.Message}
			if r.StartTime != nil {
				run.Started = timeString(r.StartTime.Time)
			}
			if r.CompletionTime != nil {
				run.Completed = timeString(r.CompletionTime.Time)
			}
			ver.Runs = append(ver.Runs, run)
		}
		out.Verifications = append(out.Verifications, ver)
	}
	for _, c := range p.Spec.Components {
		out.Components = append(out.Components, Component{Name: c.Name, Image: c.Image})
	}
	trust := e.Trust()
	if trust.Audit != "" {
		out.Audit = &Audit{Result: trust.Audit, Message: trust.AuditMessage}
		if trust.Signed {
			out.Signature = &Signature{KeyID: trust.KeyID, URL: trust.SignaturePath}
		}
	}
	if trust.SigstoreSigned && p.Status.PayloadImage != "" {
		out.SigstoreSignature = &SigstoreSignature{KeyID: trust.SigstoreKeyID, Attached: trust.SigstoreMessage,
			PublicKey: catalog.SigstorePublicKeyPath, Verify: catalog.CosignVerifyCommand(p.Status.PayloadImage)}
	}
	return out
}

// payloadText is a payload as an assistant reads it.
func payloadText(p Payload) string {
	var b strings.Builder
	fmt.Fprintf(&b, "%s (stream %s/%s): %s\n", p.Tag, p.Namespace, p.Stream, p.Phase)
	fmt.Fprintf(&b, "Pull spec: %s\n", p.PullSpec)
	if p.Image != "" {
		fmt.Fprintf(&b, "Image: %s\n", p.Image)
	}
	fmt.Fprintf(&b, "Created: %s\nPage: %s\n", p.Created, p.Link)
	if p.Override != nil {
		fmt.Fprintf(&b, "Override: %s (%s)\n", p.Override.Verdict, p.Override.Reason)
	}
	fmt.Fprintf(&b, "Creation job: %s", p.CreationJob.Status)
	if p.CreationJob.Message != "" {
		fmt.Fprintf(&b, ": %s", p.CreationJob.Message)
	}
	b.WriteString("\n")
	if p.Audit != nil {
		fmt.Fprintf(&b, "Audit: %s: %s\n", p.Audit.Result, p.Audit.Message)
	}
	if p.Signature != nil {
		fmt.Fprintf(&b, "Signature: by key %s, at %s\n", p.Signature.KeyID, p.Signature.URL)
	}
	if p.SigstoreSignature != nil {
		fmt.Fprintf(&b, "Sigstore signature: %s; public key at %s; check with: %s\n", p.SigstoreSignature.Attached, p.SigstoreSignature.PublicKey, p.SigstoreSignature.Verify)
	}
	if len(p.Conditions) > 0 {
		b.WriteString("Conditions:\n")
		for _, c := range p.Conditions {
			fmt.Fprintf(&b, "- %s=%s", c.Type, c.Status)
			if c.Reason != "" {
				fmt.Fprintf(&b, " (%s)", c.Reason)
			}
			if c.Message != "" {
				fmt.Fprintf(&b, ": %s", c.Message)
			}
			b.WriteString("\n")
		}
	}
	if len(p.Verifications) > 0 {
		b.WriteString("Verifications:\n")
		for _, v := range p.Verifications {
			fmt.Fprintf(&b, "- %s (%s): %s", v.Name, v.Type, v.State)
			if v.Message != "" {
				fmt.Fprintf(&b, ": %s", v.Message)
			}
			b.WriteString("\n")
			for _, r := range v.Runs {
				fmt.Fprintf(&b, "  - run %d %s", r.Attempt, r.State)
				if r.UpgradeFrom != "" {
					fmt.Fprintf(&b, " from %s", r.UpgradeFrom)
				}
				if r.URL != "" {
					fmt.Fprintf(&b, " <%s>", r.URL)
				}
				if r.Message != "" {
					fmt.Fprintf(&b, ": %s", r.Message)
				}
				b.WriteString("\n")
			}
		}
	}
	b.WriteString(updatesText(p.UpdateService))
	fmt.Fprintf(&b, "Components (%d):\n", len(p.Components))
	for _, c := range p.Components {
		fmt.Fprintf(&b, "- %s %s\n", c.Name, c.Image)
	}
	return b.String()
}

// streamLink is the stream's page, by namespace so that it is never ambiguous.
func streamLink(s *catalog.Stream) string {
	return "/namespaces/" + s.Namespace + "/releasestream/" + s.Name
}

// phaseMap is counts by phase keyed by the phase's name, as the tools' JSON has it.
func phaseMap(counts map[v1alpha1.PayloadPhase]int) map[string]int {
	out := make(map[string]int, len(counts))
	for p, n := range counts {
		out[string(p)] = n
	}
	return out
}

func phaseCounts(counts map[string]int) string {
	var parts []string
	for _, p := range phases {
		if n := counts[string(p)]; n > 0 {
			parts = append(parts, fmt.Sprintf("%d %s", n, p))
		}
	}
	return strings.Join(parts, ", ")
}

func timeString(t time.Time) string {
	if t.IsZero() {
		return ""
	}
	return t.UTC().Format(time.RFC3339)
}
