package catalog

import (
	"cmp"
	"slices"
	"sync"

	"github.com/blang/semver/v4"

	"github.com/release-controller/release-controller/api/v1alpha1"
)

// Upgrade is every tested upgrade from one tag to another.
type Upgrade struct {
	From, To string
	// Success, Failure and Pending count the runs by state; Total counts them all.
	Success, Failure, Pending, Total int
	// Runs are ordered by URL, then by name.
	Runs []UpgradeRun
}

// UpgradeRun is one run of an upgrade verification.
type UpgradeRun struct {
	Verification string
	Name         string
	State        v1alpha1.JobState
	URL          string
}

// upgrades indexes a snapshot's upgrades both ways, built on first use.
type upgrades struct {
	once     sync.Once
	into     map[string][]Upgrade
	outOf    map[string][]Upgrade
	allEdges []Upgrade
}

// UpgradesInto returns the upgrades into tag (OSRC's upgradesTo, "Upgrades from" on its page),
// newest source first.
func (s *Stream) UpgradesInto(tag string) []Upgrade {
	s.indexUpgrades()
	return s.upgrades.into[tag]
}

// UpgradesOutOf returns the upgrades from tag to newer payloads, newest target first.
func (s *Stream) UpgradesOutOf(tag string) []Upgrade {
	s.indexUpgrades()
	return s.upgrades.outOf[tag]
}

// Upgrades returns every upgrade of the stream, ordered by (from, to).
func (s *Stream) Upgrades() []Upgrade {
	s.indexUpgrades()
	return s.upgrades.allEdges
}

// indexUpgrades merges the finished runs of the upgrade graph with the runs in the payloads'
// status (which also has those still running, and those of payloads the graph has not
// recorded yet); a run in both counts once, with the payload's state.
func (s *Stream) indexUpgrades() {
	s.upgrades.once.Do(func() {
		type edgeKey struct{ from, to string }
		type runKey struct{ to, run string }
		runs := map[edgeKey]map[runKey]UpgradeRun{}
		add := func(from, to string, r UpgradeRun) {
			k := edgeKey{from, to}
			if runs[k] == nil {
				runs[k] = map[runKey]UpgradeRun{}
			}
			runs[k][runKey{to, r.Name}] = r
		}
		for _, e := range s.Graph.Edges {
			add(e.From, e.To, UpgradeRun{Verification: e.Verification, Name: e.Run, State: e.State, URL: e.URL})
		}
		for _, entry := range s.Entries {
			for _, v := range entry.Payload.Status.Verifications {
				for _, r := range v.Runs {
					if r.UpgradeFrom != "" {
						add(r.UpgradeFrom, entry.Tag(), UpgradeRun{Verification: v.Name, Name: r.Name, State: r.State, URL: r.URL})
					}
				}
			}
		}
		s.upgrades.into = map[string][]Upgrade{}
		s.upgrades.outOf = map[string][]Upgrade{}
		for k, byRun := range runs {
			u := Upgrade{From: k.from, To: k.to}
			for _, r := range byRun {
				u.Runs = append(u.Runs, r)
				u.Total++
				switch r.State {
				case v1alpha1.JobSuccess:
					u.Success++
				case v1alpha1.JobFailure, v1alpha1.JobUnknown:
					u.Failure++
				default:
					u.Pending++
				}
			}
			slices.SortFunc(u.Runs, func(a, b UpgradeRun) int {
				return cmp.Or(cmp.Compare(a.URL, b.URL), cmp.Compare(a.Name, b.Name))
			})
			s.upgrades.into[k.to] = append(s.upgrades.into[k.to], u)
			s.upgrades.outOf[k.from] = append(s.upgrades.outOf[k.from], u)
			s.upgrades.allEdges = append(s.upgrades.allEdges, u)
		}
		order := tagOrder{}
		for _, us := range s.upgrades.into {
			slices.SortFunc(us, func(a, b Upgrade) int { return order.compare(a.From, b.From) })
		}
		for _, us := range s.upgrades.outOf {
			slices.SortFunc(us, func(a, b Upgrade) int { return order.compare(a.To, b.To) })
		}
		slices.SortFunc(s.upgrades.allEdges, func(a, b Upgrade) int {
			return cmp.Or(cmp.Compare(a.From, b.From), cmp.Compare(a.To, b.To))
		})
	})
}

// tagOrder compares tags in semver order (newest first), parsing each tag once.
type tagOrder map[string]*semver.Version

func (o tagOrder) version(tag string) *semver.Version {
	v, ok := o[tag]
	if !ok {
		if parsed, err := semver.Parse(tag); err == nil {
			v = &parsed
		}
		o[tag] = v
	}
	return v
}

func (o tagOrder) compare(a, b string) int {
	return compareVersions(o.version(a), o.version(b), a, b)
}

// Previous is the payload a changelog of tag starts from when nobody names one: the newest
// older Accepted payload of the stream, else the newest older payload of any phase.
func (s *Stream) Previous(tag string) (Entry, bool) {
	i := s.Index(tag)
	if i < 0 || i+1 >= len(s.Entries) {
		return Entry{}, false
	}
	older := s.Entries[i+1:]
	for _, e := range older {
		if e.Phase() == v1alpha1.PhaseAccepted {
			return e, true
		}
	}
	return older[0], true
}
