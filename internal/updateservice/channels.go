package updateservice

import (
	"regexp"
	"slices"
	"time"

	"k8s.io/apimachinery/pkg/api/meta"

	"github.com/release-controller/release-controller/api/v1alpha1"
	"github.com/release-controller/release-controller/internal/server/catalog"
)

// Channels is which payloads of one stream each of its declared channels holds at a moment,
// and since when.
type Channels struct {
	// joined[channel][tag] is when the payload joined the channel.
	joined map[string]map[string]time.Time
	// pending[tag] are the promotions a feeder will make once their delay is over.
	pending map[string][]Promotion
	// Next is the earliest pending promotion (zero: none): answers computed now hold until then.
	Next time.Time
}

// Promotion is a feeder's move of a payload into a channel at a time still to come.
type Promotion struct {
	Channel, From string
	At            time.Time
}

// Has says whether channel holds tag.
func (c *Channels) Has(channel, tag string) bool {
	_, ok := c.joined[channel][tag]
	return ok
}

// Joined is when tag joined channel.
func (c *Channels) Joined(channel, tag string) (time.Time, bool) {
	t, ok := c.joined[channel][tag]
	return t, ok
}

// Of lists the channels holding tag, sorted.
func (c *Channels) Of(tag string) []string {
	var out []string
	for name, tags := range c.joined {
		if _, ok := tags[tag]; ok {
			out = append(out, name)
		}
	}
	slices.Sort(out)
	return out
}

// Pending lists the promotions of tag still to come, soonest first.
func (c *Channels) Pending(tag string) []Promotion { return c.pending[tag] }

// Tombstone says whether e is withdrawn from the update service, and since when (the
// PayloadTombstoned condition's transition; until the payload controller has written it, now).
func Tombstone(e catalog.Entry, now time.Time) (time.Time, bool) {
	if _, ok := e.Payload.Annotations[v1alpha1.AnnotationTombstone]; !ok {
		return time.Time{}, false
	}
	if c := meta.FindStatusCondition(e.Payload.Status.Conditions, v1alpha1.ConditionPayloadTombstoned); c != nil && c.Status == "True" {
		return c.LastTransitionTime.Time, true
	}
	return now, true
}

// PhaseSince is when e entered its phase: the transition of the condition that decides it,
// or the payload's creation for Pending and Ready.
func PhaseSince(e catalog.Entry) time.Time {
	var kind string
	switch e.Phase() {
	case v1alpha1.PhaseAccepted:
		kind = v1alpha1.ConditionPayloadAccepted
	case v1alpha1.PhaseRejected:
		kind = v1alpha1.ConditionPayloadRejected
	case v1alpha1.PhaseFailed:
		kind = v1alpha1.ConditionPayloadFailed
	case v1alpha1.PhaseReady:
		kind = v1alpha1.ConditionPayloadCreated
	}
	if c := meta.FindStatusCondition(e.Payload.Status.Conditions, kind); kind != "" && c != nil {
		return c.LastTransitionTime.Time
	}
	return e.Payload.CreationTimestamp.Time
}

// compiledChannel is an UpdateChannel with its patterns compiled.
type compiledChannel struct {
	name     string
	versions *regexp.Regexp // nil: only feeders fill it
	phases   []v1alpha1.PayloadPhase
	feeders  []compiledFeeder
}

type compiledFeeder struct {
	from   string
	delay  time.Duration
	filter *regexp.Regexp // nil: every version
}

func compileChannels(spec []v1alpha1.UpdateChannel) ([]compiledChannel, error) {
	out := make([]compiledChannel, 0, len(spec))
	for _, ch := range spec {
		c := compiledChannel{name: ch.Name, phases: ch.Phases}
		if len(c.phases) == 0 {
			c.phases = []v1alpha1.PayloadPhase{v1alpha1.PhaseAccepted}
		}
		if ch.Versions != "" {
			re, err := regexp.Compile(ch.Versions)
			if err != nil {
				return nil, err
			}
			c.versions = re
		}
		for _, f := range ch.Feeders {
			cf := compiledFeeder{from: f.From, delay: f.Delay.Duration}
			if f.Filter != "" {
				re, err := regexp.Compile(f.Filter)
				if err != nil {
					return nil, err
				}
				cf.filter = re
			}
			c.feeders = append(c.feeders, cf)
		}
		out = append(out, c)
	}
	return out, nil
}

// Membership computes the channels of stream s at now. A payload joins a channel directly
// when its version matches the channel's versions and it is in one of its phases (since it
// entered the phase). A feeder moves a payload from its channel into another once it has been
// there for the delay, when its version matches the filter, it was not tombstoned before
// then, and no risk that applies to every cluster (see Risk.AppliesToAll) leading into it was
// declared by then. Promotions are never undone by a later risk or tombstone: clusters on a
// payload keep finding it in their channel.
func Membership(s *catalog.Stream, risks *Index, now time.Time) (*Channels, error) {
	c := &Channels{joined: map[string]map[string]time.Time{}, pending: map[string][]Promotion{}}
	if s.Object == nil || s.Object.Spec.UpdateService == nil || len(s.Object.Spec.UpdateService.Channels) == 0 {
		return c, nil
	}
	channels, err := compileChannels(s.Object.Spec.UpdateService.Channels)
	if err != nil {
		return nil, err
	}
	for _, ch := range channels {
		c.joined[ch.name] = map[string]time.Time{}
	}
	for _, e := range s.Entries {
		tag := e.Tag()
		for _, ch := range channels {
			if ch.versions != nil && slices.Contains(ch.phases, e.Phase()) && ch.versions.MatchString(tag) {
				c.joined[ch.name][tag] = PhaseSince(e)
			}
		}
	}
	// Feeders may chain (candidate → fast → stable) and even loop; each round moves payloads
	// one feeder further, and a join time only ever gets earlier, so len(channels) rounds
	// reach the fixed point.
	for range channels {
		changed := false
		for _, ch := range channels {
			for _, f := range ch.feeders {
				for tag, since := range c.joined[f.from] {
					at := since.Add(f.delay)
					if !at.After(now) && c.promote(s, risks, ch.name, f, tag, at, now) {
						changed = true
					}
				}
			}
		}
		if !changed {
			break
		}
	}
	// What the feeders will do once their delays are over.
	for _, ch := range channels {
		for _, f := range ch.feeders {
			for tag, since := range c.joined[f.from] {
				at := since.Add(f.delay)
				if _, in := c.joined[ch.name][tag]; in || !at.After(now) || !mayPromote(s, risks, f, tag, at, now) {
					continue
				}
				c.pending[tag] = append(c.pending[tag], Promotion{Channel: ch.name, From: f.from, At: at})
				if c.Next.IsZero() || at.Before(c.Next) {
					c.Next = at
				}
			}
		}
	}
	for tag := range c.pending {
		slices.SortFunc(c.pending[tag], func(a, b Promotion) int { return a.At.Compare(b.At) })
	}
	return c, nil
}

// promote records tag joining channel at at, unless it is already there since no later.
func (c *Channels) promote(s *catalog.Stream, risks *Index, channel string, f compiledFeeder, tag string, at, now time.Time) bool {
	if old, ok := c.joined[channel][tag]; ok && !at.Before(old) {
		return false
	}
	if !mayPromote(s, risks, f, tag, at, now) {
		return false
	}
	c.joined[channel][tag] = at
	return true
}

// mayPromote says whether feeder f may move tag at the time at.
func mayPromote(s *catalog.Stream, risks *Index, f compiledFeeder, tag string, at, now time.Time) bool {
	if f.filter != nil && !f.filter.MatchString(tag) {
		return false
	}
	e, ok := s.Entry(tag)
	if !ok {
		return false
	}
	if since, dead := Tombstone(e, now); dead && !at.Before(since) {
		return false
	}
	for _, r := range risks.Into(s.Namespace, s.Name, tag) {
		if r.AppliesToAll() && !r.Declared.After(at) {
			return false
		}
	}
	return true
}
