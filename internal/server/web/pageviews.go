package web

import (
	"errors"
	"fmt"
	"strings"
	"time"

	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/release-controller/release-controller/api/v1alpha1"
	"github.com/release-controller/release-controller/internal/server/catalog"
	"github.com/release-controller/release-controller/internal/updateservice"
)

// The view models of the stream pages: everything the templates show is computed here, so
// the templates only lay it out.

// stamp is a time as the pages show it: an age for people, the exact time as a tooltip and
// for machines.
type stamp struct {
	DateTime, Title, Age string
}

func stampOf(now, t time.Time) stamp {
	if t.IsZero() {
		return stamp{}
	}
	return stamp{DateTime: t.UTC().Format(time.RFC3339), Title: t.UTC().Format("2006-01-02 15:04:05 UTC"), Age: age(now.Sub(t))}
}

// age says how long ago something happened: "3 minutes ago".
func age(d time.Duration) string {
	switch {
	case d < time.Minute:
		return "just now"
	case d < time.Hour:
		return plural(int(d/time.Minute), "minute") + " ago"
	case d < 48*time.Hour:
		return plural(int(d/time.Hour), "hour") + " ago"
	default:
		return plural(int(d/(24*time.Hour)), "day") + " ago"
	}
}

// duration is a run's length for people: "1h 5m", "12m 3s", "40s".
func duration(d time.Duration) string {
	d = max(d, 0).Round(time.Second)
	switch {
	case d < time.Minute:
		return fmt.Sprintf("%ds", int(d/time.Second))
	case d < time.Hour:
		return fmt.Sprintf("%dm %ds", int(d/time.Minute), int(d%time.Minute/time.Second))
	default:
		return fmt.Sprintf("%dh %dm", int(d/time.Hour), int(d%time.Hour/time.Minute))
	}
}

func phaseClass(p v1alpha1.PayloadPhase) string { return "phase-" + strings.ToLower(string(p)) }

func stateClass(s v1alpha1.JobState) string {
	if s == "" {
		return "state-pending"
	}
	return "state-" + strings.ToLower(string(s))
}

// streamHeader names a stream and links its pages.
type streamHeader struct {
	Namespace, Name                          string
	Link, Compare, Graph, Candidates, Health string
	TagPrefix, PayloadRepository             string
}

func streamLinks(s *catalog.Stream) streamHeader {
	base := streamPath(s.Namespace, s.Name)
	return streamHeader{
		Namespace: s.Namespace, Name: s.Name, Link: base,
		Compare: base + "/compare", Graph: base + "/graph", Candidates: base + "/candidates", Health: base + "/health",
		TagPrefix: s.Object.Spec.TagPrefix, PayloadRepository: s.Object.Spec.PayloadRepository,
	}
}

// streamInfo is a stream's state: counts, newest accepted payload, what holds it back.
type streamInfo struct {
	streamHeader
	Counts   string
	Accepted *acceptedView
	// Throttle says the next payload waits for the unready ones.
	Throttle string
	Unready  []link
	// UnreadyMore counts the unready payloads not named.
	UnreadyMore int
	// Warnings are the stream's conditions that are not True.
	Warnings []string
}

type acceptedView struct {
	Tag, Link, PullSpec string
	Created             stamp
}

func (p *site) streamInfo(s *catalog.Stream, now time.Time) streamInfo {
	info := streamInfo{streamHeader: streamLinks(s)}
	sum := s.Summary()
	unready := sum.Unready
	if e := sum.LatestAccepted; e.Payload != nil {
		info.Accepted = &acceptedView{Tag: e.Tag(), Link: entryPath(s, e.Tag()), PullSpec: pullSpec(s, e), Created: stampOf(now, e.Payload.CreationTimestamp.Time)}
	}
	var parts []string
	for _, ph := range phases {
		if n := sum.Phases[ph]; n > 0 {
			parts = append(parts, fmt.Sprintf("%d %s", n, strings.ToLower(string(ph))))
		}
	}
	info.Counts = plural(len(s.Entries), "payload")
	if len(parts) > 0 {
		info.Counts += ": " + strings.Join(parts, ", ")
	}
	limit := int(s.Object.Spec.MaxUnreadyReleases)
	if limit < 1 {
		limit = 1
	}
	if len(unready) >= limit {
		info.Throttle = fmt.Sprintf("Next payload may not start: %d unready (maxUnreadyReleases is %d), waiting for", len(unready), limit)
		for _, e := range unready[:min(len(unready), 5)] {
			info.Unready = append(info.Unready, link{e.Tag(), entryPath(s, e.Tag())})
		}
		if len(unready) > 5 {
			info.UnreadyMore = len(unready) - 5
		}
	}
	if s.Object.Spec.Suspend {
		info.Warnings = append(info.Warnings, SuspendedStream)
	}
	for _, c := range s.Object.Status.Conditions {
		if conditionWarns(c) && (c.Reason != v1alpha1.ReasonTooManyUnready || info.Throttle == "") { // the throttle line says it
			msg := c.Type + ": " + c.Reason
			if c.Message != "" {
				msg += " — " + c.Message
			}
			info.Warnings = append(info.Warnings, msg)
		}
	}
	return info
}

// SuspendedStream is what a suspended stream's page says first.
const SuspendedStream = "Suspended (spec.suspend): nothing is imported, created, built, verified, published or collected until it is set to false."

// conditionWarns reports whether a condition says something is wrong: Stalled when True
// (kstatus's abnormal-true condition), the others when not True. Reconciling is progress,
// not a problem.
func conditionWarns(c metav1.Condition) bool {
	switch c.Type {
	case v1alpha1.ConditionStalled:
		return c.Status == metav1.ConditionTrue
	case v1alpha1.ConditionReconciling:
		return false
	}
	return c.Status != metav1.ConditionTrue
}

// pullSpec is where a payload is pulled from: by digest once built, by tag before.
func pullSpec(s *catalog.Stream, e catalog.Entry) string {
	if img := e.Payload.Status.PayloadImage; img != "" {
		return img
	}
	return s.PullSpec(e)
}

// payloadRow is a payload in the tables of the index and the stream page.
type payloadRow struct {
	Tag, Link         string
	Phase, PhaseClass string
	Override          string
	Keep              bool
	Created           stamp
	Failed, Pending   []link
	FailedN, PendingN int
	Verifications     string
	Upgrades          []upgradeChip
	UpgradesMore      int
	UpgradesMoreLink  string
}

// upgradeChip is one upgrade into a payload, in the stream page's Upgrades column.
type upgradeChip struct {
	From, Label, Link   string
	Class, Symbol, Word string
	Counts, Title       string
}

func (p *site) row(s *catalog.Stream, e catalog.Entry, now time.Time, upgrades bool) payloadRow {
	pl := e.Payload
	self := entryPath(s, e.Tag())
	r := payloadRow{Tag: e.Tag(), Link: self, Phase: string(e.Phase()), PhaseClass: phaseClass(e.Phase()), Created: stampOf(now, pl.CreationTimestamp.Time)}
	if o := pl.Spec.PayloadOverride; o != nil {
		r.Override = fmt.Sprintf("Manually %s: %s", strings.ToLower(string(o.Override)), o.Reason)
	}
	_, r.Keep = pl.Annotations[v1alpha1.AnnotationKeep]
	for _, v := range pl.Status.Verifications {
		l := verificationLink(v)
		switch v.State {
		case v1alpha1.JobFailure, v1alpha1.JobUnknown:
			r.FailedN++
			if r.FailedN <= maxListed {
				r.Failed = append(r.Failed, l)
			}
		case v1alpha1.JobPending, "":
			r.PendingN++
			if r.PendingN <= maxListed {
				r.Pending = append(r.Pending, l)
			}
		}
	}
	if r.FailedN > maxListed {
		r.Failed = nil
	}
	if r.PendingN > maxListed {
		r.Pending = nil
	}
	if r.FailedN == 0 && r.PendingN == 0 {
		switch n := len(pl.Status.Verifications); {
		case n > 0:
			r.Verifications = "all " + plural(n, "verification") + " done"
		case len(pl.Spec.PayloadVerificationConfig.Verifications) == 0:
			r.Verifications = "no verifications"
		case e.Phase() == v1alpha1.PhasePending:
			r.Verifications = "not started"
		}
	}
	if upgrades {
		into := s.UpgradesInto(e.Tag())
		for i, u := range into {
			if i == maxListed {
				r.UpgradesMore, r.UpgradesMoreLink = len(into)-maxListed, self+"#upgrades"
				break
			}
			r.Upgrades = append(r.Upgrades, chip(s, u, self))
		}
	}
	return r
}

// verificationLink is a verification's name linked to its newest run.
func verificationLink(v v1alpha1.VerificationStatus) link {
	l := link{Text: v.Name}
	for i := len(v.Runs) - 1; i >= 0; i-- {
		if v.Runs[i].URL != "" {
			l.URL = v.Runs[i].URL
			break
		}
	}
	return l
}

// result is an upgrade's colour: green when a run succeeded, red when every ended run
// failed, blue while runs are pending.
func result(u catalog.Upgrade) (class, symbol, word string) {
	switch {
	case u.Success > 0:
		return "upgrade-success", "✓", "succeeded"
	case u.Pending > 0:
		return "upgrade-pending", "…", "pending"
	default:
		return "upgrade-failure", "✗", "failed"
	}
}

func chip(s *catalog.Stream, u catalog.Upgrade, toLink string) upgradeChip {
	class, symbol, word := result(u)
	counts := fmt.Sprintf("%d/%d", u.Success, u.Total)
	return upgradeChip{
		From: u.From, Label: shortTag(s, u.From), Link: withQuery(toLink, "from", u.From),
		Class: class, Symbol: symbol, Word: word, Counts: counts,
		Title: fmt.Sprintf("Upgrade from %s: %s succeeded", u.From, counts),
	}
}

// shortTag drops the stream's tag prefix, leaving the date of a tag of the stream.
func shortTag(s *catalog.Stream, tag string) string {
	if p := s.Object.Spec.TagPrefix; p != "" {
		if rest, ok := strings.CutPrefix(tag, p+"-"); ok && rest != "" {
			return rest
		}
	}
	return tag
}

// indexPage is the list of streams.
type indexPage struct {
	pageBase
	GraphHint string
	Streams   fragment
}

type indexStream struct {
	streamInfo
	Table payloadsPart
	Empty string
	More  string
}

// indexPart renders the index's streams.
func (p *site) indexPart(all []*catalog.Stream) (fragment, error) {
	now := p.now()
	key := partKey{view: "index", snapshot: snapshotsID(all), minute: minuteOf(now)}
	return cached(p.parts, key, func() (fragment, error) { return p.renderIndex(all, now) })
}

func (p *site) renderIndex(all []*catalog.Stream, now time.Time) (fragment, error) {
	streams := make([]indexStream, 0, len(all))
	for _, s := range all {
		is := indexStream{streamInfo: p.streamInfo(s, now)}
		is.Table.Caption = fmt.Sprintf("Newest payloads of %s/%s", s.Namespace, s.Name)
		for _, e := range s.Entries[:min(IndexRows, len(s.Entries))] {
			is.Table.Rows = append(is.Table.Rows, p.row(s, e, now, false))
		}
		if len(s.Entries) == 0 {
			is.Empty = EmptyStream
		}
		if len(s.Entries) > IndexRows {
			is.More = fmt.Sprintf("All %d payloads", len(s.Entries))
		}
		streams = append(streams, is)
	}
	return part("index-streams", struct {
		Streams []indexStream
		Empty   string
	}{streams, EmptyStreams})
}

// streamPage is a stream's payloads.
type streamPage struct {
	pageBase
	Stream  streamHeader
	Filter  []option
	Phase   string
	Info    fragment
	Entries fragment
}

type option struct {
	Value, Label string
	Selected     bool
}

func phaseOptions(chosen v1alpha1.PayloadPhase) []option {
	out := []option{{Value: "", Label: "Any phase", Selected: chosen == ""}}
	for _, ph := range phases {
		out = append(out, option{Value: string(ph), Label: string(ph), Selected: ph == chosen})
	}
	return out
}

// payloadsPart is the table of a stream page with its pager.
type payloadsPart struct {
	Summary, Empty string
	Rows           []payloadRow
	Page, Pages    int
	Newer, Older   string
	First, Last    string
	Caption        string
	// Upgrades adds the column of the upgrades into each payload.
	Upgrades bool
}

type streamParts struct {
	info, payloads fragment
	pages          int
}

var errNoSuchPage = errors.New("no such page")

// streamParts renders a stream page's live parts: its state and one page of payloads.
func (p *site) streamParts(s *catalog.Stream, sq streamQuery) (streamParts, error) {
	now := p.now()
	key := partKey{view: "stream", snapshot: snapshotID(s), arg: fmt.Sprintf("%d/%s", sq.Page, sq.Phase), minute: minuteOf(now)}
	return cached(p.parts, key, func() (streamParts, error) { return p.renderStream(s, sq, now) })
}

func (p *site) renderStream(s *catalog.Stream, sq streamQuery, now time.Time) (streamParts, error) {
	entries := s.Entries
	if sq.Phase != "" {
		entries = nil
		for _, e := range s.Entries {
			if e.Phase() == sq.Phase {
				entries = append(entries, e)
			}
		}
	}
	pages := max(1, (len(entries)+PageSize-1)/PageSize)
	if sq.Page > pages {
		return streamParts{pages: pages}, errNoSuchPage
	}
	start := (sq.Page - 1) * PageSize
	shown := entries[start:min(start+PageSize, len(entries))]
	base := streamPath(s.Namespace, s.Name)
	pp := payloadsPart{Page: sq.Page, Pages: pages, Upgrades: true}
	what := "payload"
	if sq.Phase != "" {
		what = strings.ToLower(string(sq.Phase)) + " payload"
	}
	switch {
	case len(s.Entries) == 0:
		pp.Empty = EmptyStream + " The stream creates its first payload once all of its components have resolved."
	case len(entries) == 0:
		pp.Empty = fmt.Sprintf("No %s payloads.", strings.ToLower(string(sq.Phase)))
	case pages == 1:
		pp.Summary = plural(len(entries), what)
	default:
		pp.Summary = fmt.Sprintf("%s, %d to %d shown", plural(len(entries), what), start+1, start+len(shown))
	}
	pp.Caption = fmt.Sprintf("Payloads of %s/%s, newest first", s.Namespace, s.Name)
	if sq.Page > 1 {
		pp.Newer = base + pageQuery(sq.Page-1, sq.Phase)
		pp.First = base + pageQuery(1, sq.Phase)
	}
	if sq.Page < pages {
		pp.Older = base + pageQuery(sq.Page+1, sq.Phase)
		pp.Last = base + pageQuery(pages, sq.Phase)
	}
	pp.Rows = make([]payloadRow, 0, len(shown))
	for _, e := range shown {
		pp.Rows = append(pp.Rows, p.row(s, e, now, true))
	}
	out := streamParts{pages: pages}
	var err error
	if out.info, err = part("stream-info", p.streamInfo(s, now)); err != nil {
		return out, err
	}
	out.payloads, err = part("stream-payloads", pp)
	return out, err
}

// releasePage is a payload's page.
type releasePage struct {
	pageBase
	Stream     streamHeader
	Tag        string
	Link       string
	Failed     bool
	Status     fragment
	Components []componentRow
	// The changelog's base and the choice of another one.
	From        string
	FromOptions []option
}

type componentRow struct {
	Name, Digest, Repository, Image, Source string
	// The source repository and revision the image records, when read.
	SourceRepo, SourceURL, Revision, RevisionURL string
}

// statusPart is the live part of a payload page: everything that changes while the payload
// is built and verified.
type statusPart struct {
	Tag                   string
	Phase, PhaseClass     string
	Override              *v1alpha1.PayloadOverride
	PullSpec              string
	ByDigest              bool
	TagPullSpec, Download string
	// Platforms are the payload's image of each platform, when it was built for platforms.
	Platforms  []v1alpha1.PlatformImage
	Created    stamp
	Conditions []conditionRow
	// Signed is the PayloadSigned message of a signed payload ("signed by <key id> ...");
	// AuditFailure the PayloadAudited message of a payload that failed its audit.
	Signed, AuditFailure string
	Creation             creationView
	Failed               bool
	FailureMessage       string
	Blocking, Informing  []verificationView
	UpgradesFrom         []upgradeView
	UpgradesTo           []upgradeView
	// Updates is what the update service does with the payload (updates.go).
	Updates updatesView
	// Sigstore is what the page says of the payload's Sigstore signatures and attestations,
	// once PayloadSigstoreSigned is True.
	Sigstore *sigstoreView
}

// sigstoreView is a payload's Sigstore signatures: the PayloadSigstoreSigned message ("signed by
// <key id>: what is attached") and the commands that check them with the public key saved as
// cosign.pub.
type sigstoreView struct {
	Message, PublicKey   string
	Cosign, CosignAttest string
	Verify               string
}

// sigstoreViewOf is the Sigstore part of the page of a payload whose image is pullSpec (by
// digest); nil before its Sigstore signatures are attached.
func sigstoreViewOf(trust catalog.Trust, pullSpec string, byDigest bool) *sigstoreView {
	if !trust.SigstoreSigned || !byDigest {
		return nil
	}
	return &sigstoreView{
		Message:      trust.SigstoreMessage,
		PublicKey:    catalog.SigstorePublicKeyPath,
		Cosign:       catalog.CosignVerifyCommand(pullSpec),
		CosignAttest: catalog.CosignVerifyAttestationCommand(pullSpec, "slsaprovenance1"),
		Verify:       "release-controller payload verify --format attestation --key cosign.pub " + pullSpec,
	}
}

type conditionRow struct {
	Type, Status, Reason, Message string
	Changed                       stamp
}

type creationView struct {
	Status, StatusClass, Message, Job string
}

type verificationView struct {
	Name, State, StateClass, Message string
	UpgradeFrom, Retries             string
	Runs                             []runView
	NotStarted                       bool
}

type runView struct {
	Attempt                  int32
	Name, URL                string
	State, StateClass        string
	Started                  stamp
	Duration                 string
	UpgradeFrom, UpgradeLink string
	Message                  string
}

type upgradeView struct {
	Tag, Link, Changes  string
	Class, Symbol, Word string
	Counts              string
	Runs                []runLink
}

type runLink struct {
	Label, Title, URL, Class string
}

func (p *site) releaseView(s *catalog.Stream, e catalog.Entry, from catalog.Located) (releasePage, error) {
	self := entryPath(s, e.Tag())
	page := releasePage{
		pageBase: pageBase{
			Title:  e.Tag(),
			Crumbs: []link{{"Streams", IndexPath}, {s.Namespace + "/" + s.Name, streamPath(s.Namespace, s.Name)}},
			Events: withQuery(PageEventsPath, "view", "release", "namespace", s.Namespace, "stream", s.Name, "tag", e.Tag()),
		},
		Stream: streamLinks(s), Tag: e.Tag(), Link: self,
		Failed: e.Phase() == v1alpha1.PhaseFailed,
	}
	for _, c := range e.Payload.Spec.Components {
		row := componentRow{Name: c.Name, Image: c.Image, Source: c.Source}
		row.Repository, row.Digest, _ = strings.Cut(c.Image, "@")
		page.Components = append(page.Components, row)
	}
	if from.Entry.Payload != nil {
		page.From = from.Entry.Tag()
	}
	page.FromOptions = tagOptions(s, s.Index(e.Tag())+1, page.From)
	var err error
	page.Status, err = p.statusPart(s, e)
	return page, err
}

// statusPart renders the live part of a payload page.
func (p *site) statusPart(s *catalog.Stream, e catalog.Entry) (fragment, error) {
	now := p.now()
	// The update service's section reads the namespace's UpgradeRisks too.
	key := partKey{view: "status", snapshot: snapshotID(s), arg: e.Tag() + "/" + risksVersion(p.cat.Risks(), s.Namespace), minute: minuteOf(now)}
	return cached(p.parts, key, func() (fragment, error) { return p.renderStatus(s, e, now) })
}

func (p *site) renderStatus(s *catalog.Stream, e catalog.Entry, now time.Time) (fragment, error) {
	pl := e.Payload
	self := entryPath(s, e.Tag())
	st := statusPart{
		Tag: e.Tag(), Phase: string(e.Phase()), PhaseClass: phaseClass(e.Phase()),
		Override: pl.Spec.PayloadOverride, PullSpec: pullSpec(s, e), ByDigest: pl.Status.PayloadImage != "",
		TagPullSpec: s.PullSpec(e), Created: stampOf(now, pl.CreationTimestamp.Time),
		Failed: e.Phase() == v1alpha1.PhaseFailed, Platforms: pl.Status.PlatformImages,
	}
	if p.opts.ArtifactsURL != "" && st.ByDigest {
		st.Download = p.opts.ArtifactsURL + "/" + e.Tag()
	}
	for _, t := range payloadConditionTypes {
		if c := meta.FindStatusCondition(pl.Status.Conditions, t); c != nil {
			st.Conditions = append(st.Conditions, conditionRow{Type: c.Type, Status: string(c.Status), Reason: c.Reason, Message: c.Message, Changed: stampOf(now, c.LastTransitionTime.Time)})
		}
	}
	if c := meta.FindStatusCondition(pl.Status.Conditions, v1alpha1.ConditionPayloadSigned); c != nil && c.Status == metav1.ConditionTrue {
		st.Signed = c.Message
	}
	st.Sigstore = sigstoreViewOf(e.Trust(), st.PullSpec, st.ByDigest)
	if c := meta.FindStatusCondition(pl.Status.Conditions, v1alpha1.ConditionPayloadAudited); c != nil && c.Reason == v1alpha1.ReasonAuditFailed {
		st.AuditFailure = c.Message
	}
	cr := pl.Status.ReleaseCreationJobResult
	st.Creation = creationView{Status: string(cr.Status), Message: cr.Message}
	if st.Creation.Status == "" {
		st.Creation.Status = string(v1alpha1.CreationJobUnknown)
	}
	st.Creation.StatusClass = "creation-" + strings.ToLower(st.Creation.Status)
	if cr.Name != "" {
		st.Creation.Job = cr.Namespace + "/" + cr.Name
	}
	st.Updates = updatesOf(s, e, updateservice.DescribePayload(s, e, p.cat.Risks(), now, releasePath), now)
	if st.Failed {
		st.FailureMessage = failureMessage(pl)
	} else {
		st.Blocking, st.Informing = p.verifications(s, e, now)
		for _, u := range s.UpgradesInto(e.Tag()) {
			st.UpgradesFrom = append(st.UpgradesFrom, upgrade(s, u, u.From, withQuery(self, "from", u.From)))
		}
		for _, u := range s.UpgradesOutOf(e.Tag()) {
			changes := ""
			if _, ok := s.Entry(u.To); ok {
				changes = withQuery(entryPath(s, u.To), "from", e.Tag())
			}
			st.UpgradesTo = append(st.UpgradesTo, upgrade(s, u, u.To, changes))
		}
	}
	return part("release-status", st)
}

// payloadConditionTypes are the payload conditions a page shows, in this order.
var payloadConditionTypes = []string{
	v1alpha1.ConditionPayloadCreated, v1alpha1.ConditionPayloadAccepted, v1alpha1.ConditionPayloadRejected, v1alpha1.ConditionPayloadFailed,
	v1alpha1.ConditionPayloadAudited, v1alpha1.ConditionPayloadSigned, v1alpha1.ConditionPayloadSigstoreSigned, v1alpha1.ConditionPayloadIssuesVerified,
}

// failureMessage says why a payload failed: the PayloadFailed condition's message, else
// the creation job's.
func failureMessage(pl *v1alpha1.ReleasePayload) string {
	if c := meta.FindStatusCondition(pl.Status.Conditions, v1alpha1.ConditionPayloadFailed); c != nil && c.Status == metav1.ConditionTrue && c.Message != "" {
		return c.Message
	}
	if m := pl.Status.ReleaseCreationJobResult.Message; m != "" {
		return m
	}
	if m := pl.Annotations[v1alpha1.AnnotationAborted]; m != "" {
		return m
	}
	return "The payload failed without saying why."
}

// verifications lists a payload's verifications in the order of its configuration, split
// into blocking and informing ones.
func (p *site) verifications(s *catalog.Stream, e catalog.Entry, now time.Time) (blocking, informing []verificationView) {
	pl := e.Payload
	config := map[string]v1alpha1.Verification{}
	var names []string
	for _, v := range pl.Spec.PayloadVerificationConfig.Verifications {
		config[v.Name] = v
		names = append(names, v.Name)
	}
	status := map[string]v1alpha1.VerificationStatus{}
	for _, v := range pl.Status.Verifications {
		status[v.Name] = v
		if _, ok := config[v.Name]; !ok {
			names = append(names, v.Name)
		}
	}
	for _, name := range names {
		cfg, configured := config[name]
		st, started := status[name]
		vv := verificationView{Name: name, State: string(st.State), StateClass: stateClass(st.State), Message: st.Message}
		isBlocking := cfg.IsBlocking()
		if started {
			isBlocking = st.Type != v1alpha1.Informing
		}
		if !started {
			vv.NotStarted, vv.State, vv.StateClass = true, "Not started", "state-pending"
		} else if vv.State == "" {
			vv.State = string(v1alpha1.JobPending)
		}
		kind := cfg.UpgradeFrom
		if st.UpgradeFrom != "" {
			kind = st.UpgradeFrom
		}
		if kind != "" {
			vv.UpgradeFrom = "upgrade from " + string(kind)
		}
		switch {
		case configured && cfg.Aggregation != nil:
			passed := 0
			for _, r := range st.Runs {
				if r.State == v1alpha1.JobSuccess {
					passed++
				}
			}
			vv.Retries = fmt.Sprintf("aggregated: %d of %d runs passed, %.0f%% needed", passed, cfg.Aggregation.Runs, cfg.Aggregation.PassRatio*100)
		case configured && len(st.Runs) > 1:
			vv.Retries = fmt.Sprintf("%s of %d allowed", retries(len(st.Runs)-1), cfg.MaxRetries)
		case configured && cfg.MaxRetries > 0:
			vv.Retries = "up to " + retries(int(cfg.MaxRetries))
		}
		for _, r := range st.Runs {
			rv := runView{Attempt: r.Attempt, Name: r.Name, URL: r.URL, State: string(r.State), StateClass: stateClass(r.State), Message: r.Message, UpgradeFrom: r.UpgradeFrom}
			if r.StartTime != nil {
				rv.Started = stampOf(now, r.StartTime.Time)
				switch {
				case r.CompletionTime != nil:
					rv.Duration = duration(r.CompletionTime.Sub(r.StartTime.Time))
				case !r.State.IsTerminal():
					rv.Duration = "running for " + duration(now.Sub(r.StartTime.Time))
				}
			}
			if r.UpgradeFrom != "" {
				if _, ok := s.Entry(r.UpgradeFrom); ok {
					rv.UpgradeLink = entryPath(s, r.UpgradeFrom)
				}
			}
			vv.Runs = append(vv.Runs, rv)
		}
		if isBlocking {
			blocking = append(blocking, vv)
		} else {
			informing = append(informing, vv)
		}
	}
	return blocking, informing
}

// upgrade is an edge of the upgrade graph on a payload page: other is the payload at its
// other end.
func upgrade(s *catalog.Stream, u catalog.Upgrade, other, changes string) upgradeView {
	class, symbol, word := result(u)
	uv := upgradeView{Tag: other, Changes: changes, Class: class, Symbol: symbol, Word: word,
		Counts: fmt.Sprintf("%d/%d succeeded", u.Success, u.Total)}
	if _, ok := s.Entry(other); ok {
		uv.Link = entryPath(s, other)
	}
	letters := len(u.Runs) > 2
	for _, r := range u.Runs {
		word, class := "Pending", "state-pending"
		switch r.State {
		case v1alpha1.JobSuccess:
			word, class = "Success", "state-success"
		case v1alpha1.JobFailure, v1alpha1.JobUnknown:
			word, class = "Failed", "state-failure"
		}
		label := word
		if letters {
			label = word[:1]
		}
		uv.Runs = append(uv.Runs, runLink{Label: label, Title: r.Verification + " " + r.Name + ": " + word, URL: r.URL, Class: class})
	}
	return uv
}

// comparePage compares two payloads of a stream.
type comparePage struct {
	pageBase
	Stream                 streamHeader
	Action                 string
	Empty                  string
	FromOptions, ToOptions []option
	// ChangeLog is the section of the page without a comparison asked for.
	ChangeLog changeLogSection
}

// candidatesPage lists the payloads that could be promoted.
type candidatesPage struct {
	pageBase
	Stream streamHeader
	JSON   string
	Rows   []candidateRow
}

type candidateRow struct {
	Name, Tag, Link string
	Created         stamp
	UpgradeFrom     []link
}

func retries(n int) string {
	if n == 1 {
		return "1 retry"
	}
	return fmt.Sprintf("%d retries", n)
}
