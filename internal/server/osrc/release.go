package osrc

import (
	"context"
	"errors"
	"fmt"
	"html"
	"net/http"
	"slices"
	"strings"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/release-controller/release-controller/api/v1alpha1"
	"github.com/release-controller/release-controller/internal/changelog"
	"github.com/release-controller/release-controller/internal/server/catalog"
	"github.com/release-controller/release-controller/internal/updateservice"
)

// changeLogBackground bounds a changelog computation that outlives the request which
// started it (the generator has its own, usually shorter, bound).
const changeLogBackground = 10 * time.Minute

// Texts of release info's 404s (OSRC's).
const (
	textTagMissing  = "unable to find release tag %s, it may have been deleted"
	textTagNotInRel = "release tag %s does not belong to release %s"
)

// OSRC's words for job states.
const (
	stateSucceeded = "Succeeded"
	stateFailed    = "Failed"
	statePending   = "Pending"
)

// apiReleaseInfo is OSRC's APIReleaseInfo (without asyncJobs and nodeImageStreams, which
// we never have).
type apiReleaseInfo struct {
	Name          string                  `json:"name"`
	Phase         string                  `json:"phase"`
	Results       *jobsSummary            `json:"results,omitempty"`
	UpgradesTo    []upgradeHistory        `json:"upgradesTo,omitempty"`
	UpgradesFrom  []upgradeHistory        `json:"upgradesFrom,omitempty"`
	ChangeLog     []byte                  `json:"changeLog,omitempty"`
	ChangeLogJSON changelog.JSONChangeLog `json:"changeLogJson"`
	// Audit and Signature are ours (OSRC has no audit): what the audit found and where the
	// signature is, once there are.
	Audit     *auditInfo     `json:"audit,omitempty"`
	Signature *signatureInfo `json:"signature,omitempty"`
	// SigstoreSignature is ours too: the Sigstore signature and attestations attached to the
	// image in its registry, once they are.
	SigstoreSignature *sigstoreSignatureInfo `json:"sigstoreSignature,omitempty"`
	// Platforms are ours too: of a payload built for platforms, each platform's image.
	Platforms []platformImage `json:"platforms,omitempty"`
	// UpdateService is ours: what /graph does with the payload (the risks of upgrades into
	// it, its channels, pending promotions, a tombstone).
	UpdateService *updateservice.PayloadView `json:"updateService,omitempty"`
}

// platformImage is one platform's payload image.
type platformImage struct {
	Platform string `json:"platform"`
	Image    string `json:"image"`
}

// auditInfo is the payload's audit: reason AuditPassed, AuditFailed or AuditError, and the
// PayloadAudited message.
type auditInfo struct {
	Result  string `json:"result"`
	Message string `json:"message"`
}

// signatureInfo is the payload's signature: the key that made it and its path on this server.
type signatureInfo struct {
	KeyID string `json:"keyID"`
	URL   string `json:"url"`
}

// sigstoreSignatureInfo is the payload's Sigstore signature: the key that made it, what is
// attached (the PayloadSigstoreSigned message), the public key's path on this server and the
// cosign command that checks it.
type sigstoreSignatureInfo struct {
	KeyID     string `json:"keyID"`
	Attached  string `json:"attached"`
	PublicKey string `json:"publicKey"`
	Verify    string `json:"verify"`
}

// jobsSummary is OSRC's VerificationJobsSummary.
type jobsSummary struct {
	BlockingJobs  map[string]*jobStatus `json:"blockingJobs,omitempty"`
	InformingJobs map[string]*jobStatus `json:"informingJobs,omitempty"`
	AsyncJobs     map[string]*jobStatus `json:"asyncJobs,omitempty"`
	PendingJobs   map[string]*jobStatus `json:"pendingJobs,omitempty"`
}

// jobStatus is OSRC's VerificationStatus.
type jobStatus struct {
	State               string       `json:"state"`
	URL                 string       `json:"url"`
	Retries             int          `json:"retries,omitempty"`
	PreviousAttemptURLs []string     `json:"previousAttemptURLs,omitempty"`
	TransitionTime      *metav1.Time `json:"transitionTime,omitempty"`
}

// upgradeHistory is OSRC's UpgradeHistory, whose fields have no json tags: the keys are
// capitalised.
type upgradeHistory struct {
	From, To                string
	Success, Failure, Total int
	History                 map[string]upgradeResult
}

// upgradeResult is OSRC's UpgradeResult.
type upgradeResult struct {
	State string `json:"state"`
	URL   string `json:"url"`
}

// releaseInfo is /api/v1/releasestream/{stream}/release/{tag}.
func (h *handler) releaseInfo(w http.ResponseWriter, r *http.Request) {
	s, e, ok := h.locateTag(w, r, textTagMissing, textTagNotInRel)
	if !ok {
		return
	}
	var previous *v1alpha1.ReleasePayload
	if from := r.URL.Query().Get("from"); from != "" {
		p, err := h.findFrom(s, from)
		if err != nil {
			var amb *catalog.AmbiguousError
			if errors.As(err, &amb) {
				http.Error(w, amb.Error(), http.StatusConflict)
				return
			}
			http.Error(w, fmt.Sprintf(textTagMissing, e.Tag()), http.StatusNotFound)
			return
		}
		previous = p
	} else if p, ok := s.Previous(e.Tag()); ok {
		previous = p.Payload
	}
	format := r.URL.Query().Get("format")
	short := strings.EqualFold(format, "short")
	if !short && format != "" && format != "json" {
		http.Error(w, "error: format must be '', 'json' or 'short'", http.StatusBadRequest)
		return
	}

	info := apiReleaseInfo{
		Name:         e.Tag(),
		Phase:        string(e.Phase()),
		Results:      verificationResults(e.Payload),
		UpgradesTo:   upgradeHistories(s.UpgradesInto(e.Tag())),
		UpgradesFrom: upgradeHistories(h.upgradesOutOf(s, e.Tag())),
	}
	for _, pi := range e.Payload.Status.PlatformImages {
		info.Platforms = append(info.Platforms, platformImage{Platform: pi.Platform, Image: pi.Image})
	}
	trust := e.Trust()
	if trust.Audit != "" {
		info.Audit = &auditInfo{Result: trust.Audit, Message: trust.AuditMessage}
		if trust.Signed {
			info.Signature = &signatureInfo{KeyID: trust.KeyID, URL: trust.SignaturePath}
		}
	}
	if image := e.Payload.Status.PayloadImage; trust.SigstoreSigned && image != "" {
		info.SigstoreSignature = &sigstoreSignatureInfo{KeyID: trust.SigstoreKeyID, Attached: trust.SigstoreMessage,
			PublicKey: catalog.SigstorePublicKeyPath, Verify: catalog.CosignVerifyCommand(image)}
	}
	// Left out when there is nothing to say, so that OSRC's clients see OSRC's shape.
	if view := updateservice.DescribePayload(s, e, h.cat.Risks(), h.now(), h.pageURL); len(view.UpgradeRisks) > 0 ||
		len(view.Channels) > 0 || len(view.PendingPromotions) > 0 || view.Tombstone != nil || len(view.Warnings) > 0 {
		info.UpdateService = &view
	}
	if !short && previous != nil && h.opts.ChangeLogs != nil {
		if cl := h.changeLog(r.Context(), previous, e.Payload); cl != nil {
			info.ChangeLog = changeLogHTML(cl)
			info.ChangeLogJSON = cl.JSON()
		}
	}
	writeJSON(w, info)
}

// upgradesOutOf are the upgrades from tag: those of its stream, then those of the other
// streams of its namespace (an upgrade is recorded in the stream of its target).
func (h *handler) upgradesOutOf(s *catalog.Stream, tag string) []catalog.Upgrade {
	out := s.UpgradesOutOf(tag)
	for _, o := range h.cat.Streams() {
		if o.Namespace != s.Namespace || o.Name == s.Name {
			continue
		}
		if more := o.UpgradesOutOf(tag); len(more) > 0 {
			out = append(slices.Clip(out), more...)
		}
	}
	return out
}

// findFrom finds ?from: in the tag's stream, else in another stream of the same namespace,
// else anywhere (409 when that is ambiguous).
func (h *handler) findFrom(s *catalog.Stream, from string) (*v1alpha1.ReleasePayload, error) {
	if e, ok := s.Entry(from); ok {
		return e.Payload, nil
	}
	found := h.cat.FindTag(from)
	for _, l := range found {
		if l.Stream.Namespace == s.Namespace {
			return l.Entry.Payload, nil
		}
	}
	l, err := h.cat.Tag(from)
	if err != nil {
		return nil, err
	}
	return l.Entry.Payload, nil
}

// changeLog returns the changelog from one payload to another: from the cache, else
// computed for at most ChangeLogWait. The computation runs detached from the request, so
// it goes on after a timeout and the next request finds it cached; nil when it is not ready
// or failed.
func (h *handler) changeLog(ctx context.Context, from, to *v1alpha1.ReleasePayload) *changelog.ChangeLog {
	cls := h.opts.ChangeLogs
	if cl, ok := cls.Cached(from, to); ok {
		return cl
	}
	done := make(chan *changelog.ChangeLog, 1)
	go func() {
		bg, cancel := context.WithTimeout(context.WithoutCancel(ctx), changeLogBackground)
		defer cancel()
		cl, err := cls.ChangeLog(bg, from, to)
		if err != nil {
			cl = nil
		}
		done <- cl
	}()
	timer := time.NewTimer(h.opts.ChangeLogWait)
	defer timer.Stop()
	select {
	case cl := <-done:
		return cl
	case <-timer.C:
	case <-ctx.Done():
	}
	return nil
}

// changeLogHTML renders the changelog's Markdown as HTML for changeLog; should that fail,
// the Markdown itself, escaped, in a <pre>.
func changeLogHTML(cl *changelog.ChangeLog) []byte {
	out, err := cl.HTML()
	if err != nil {
		return []byte("<pre>" + html.EscapeString(cl.Markdown()) + "</pre>\n")
	}
	return out
}

// verificationResults sorts a payload's verifications into blocking and informing jobs, and
// those not finished also into pendingJobs. Verifications of the payload's config without a
// status yet are pending.
func verificationResults(p *v1alpha1.ReleasePayload) *jobsSummary {
	out := &jobsSummary{}
	add := func(m *map[string]*jobStatus, name string, st *jobStatus) {
		if *m == nil {
			*m = map[string]*jobStatus{}
		}
		(*m)[name] = st
	}
	specs := p.Spec.PayloadVerificationConfig.Verifications
	seen := make(map[string]bool, len(p.Status.Verifications))
	for _, v := range p.Status.Verifications {
		seen[v.Name] = true
		aggregated := false
		for i := range specs {
			if specs[i].Name == v.Name {
				aggregated = specs[i].Aggregation != nil
				break
			}
		}
		st := jobStatusOf(v, aggregated)
		if v.Type == v1alpha1.Informing {
			add(&out.InformingJobs, v.Name, st)
		} else {
			add(&out.BlockingJobs, v.Name, st)
		}
		if !v.State.IsTerminal() {
			add(&out.PendingJobs, v.Name, st)
		}
	}
	for _, v := range specs {
		if seen[v.Name] {
			continue
		}
		st := &jobStatus{State: statePending}
		if v.IsBlocking() {
			add(&out.BlockingJobs, v.Name, st)
		} else {
			add(&out.InformingJobs, v.Name, st)
		}
		add(&out.PendingJobs, v.Name, st)
	}
	return out
}

// jobStatusOf reads one verification as OSRC reports a job: the URL of its first successful
// run, else of its last run; the other runs' URLs as previous attempts; the number of
// retries; and the last run's completion time.
func jobStatusOf(v v1alpha1.VerificationStatus, aggregated bool) *jobStatus {
	st := &jobStatus{State: stateWord(v.State)}
	runs := v.Runs
	if len(runs) == 0 {
		return st
	}
	for _, run := range runs {
		if run.State == v1alpha1.JobSuccess {
			st.URL = run.URL
			break
		}
	}
	last := runs[len(runs)-1]
	if st.URL == "" {
		st.URL = last.URL
	}
	if len(runs) > 1 {
		for _, run := range runs {
			if run.URL != "" && run.URL != st.URL {
				st.PreviousAttemptURLs = append(st.PreviousAttemptURLs, run.URL)
			}
		}
	}
	if !aggregated {
		attempts := len(runs)
		for _, run := range runs {
			attempts = max(attempts, int(run.Attempt))
		}
		st.Retries = attempts - 1
	}
	if last.CompletionTime != nil {
		t := *last.CompletionTime
		st.TransitionTime = &t
	}
	return st
}

// stateWord is OSRC's word for a verification's or a run's state.
func stateWord(s v1alpha1.JobState) string {
	switch s {
	case v1alpha1.JobSuccess, v1alpha1.JobSkipped:
		return stateSucceeded
	case v1alpha1.JobFailure, v1alpha1.JobUnknown:
		return stateFailed
	}
	return statePending
}

// upgradeHistories converts the catalog's upgrades; runs are keyed by URL, or by name when
// they have none.
func upgradeHistories(us []catalog.Upgrade) []upgradeHistory {
	if len(us) == 0 {
		return nil
	}
	out := make([]upgradeHistory, len(us))
	for i, u := range us {
		hist := make(map[string]upgradeResult, len(u.Runs))
		for _, run := range u.Runs {
			key := run.URL
			if key == "" {
				key = run.Name
			}
			hist[key] = upgradeResult{State: stateWord(run.State), URL: run.URL}
		}
		out[i] = upgradeHistory{From: u.From, To: u.To, Success: u.Success, Failure: u.Failure, Total: u.Total, History: hist}
	}
	return out
}
