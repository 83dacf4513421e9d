package catalog

import (
	"fmt"

	"github.com/release-controller/release-controller/api/v1alpha1"
)

// CandidateUpgradeSuccess is the share of successful runs above which an upgrade into a
// candidate counts as tested (OpenShift's controller uses the same 80%).
const CandidateUpgradeSuccess = 0.8

// Candidate is an accepted payload that could be promoted to a release.
type Candidate struct {
	Entry Entry
	// Name is the version it would be released as: its tag's major.minor.patch.
	Name string
	// UpgradeFrom are the tags whose upgrades into it succeeded in more than
	// CandidateUpgradeSuccess of their runs, newest first.
	UpgradeFrom []string
}

// Candidates are the stream's accepted payloads whose tag is a semantic version, newest
// first: the payloads a release engineer can promote.
func (s *Stream) Candidates() []Candidate {
	var out []Candidate
	for _, e := range s.Entries {
		if e.Phase() != v1alpha1.PhaseAccepted || e.Version == nil {
			continue
		}
		c := Candidate{Entry: e, Name: fmt.Sprintf("%d.%d.%d", e.Version.Major, e.Version.Minor, e.Version.Patch)}
		for _, u := range s.UpgradesInto(e.Tag()) {
			if u.Total > 0 && float64(u.Success)/float64(u.Total) > CandidateUpgradeSuccess {
				c.UpgradeFrom = append(c.UpgradeFrom, u.From)
			}
		}
		out = append(out, c)
	}
	return out
}
