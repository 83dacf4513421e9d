package verify

import (
	"github.com/Masterminds/semver/v3"

	"github.com/release-controller/release-controller/api/v1alpha1"
	"github.com/release-controller/release-controller/internal/jobcontract"
)

// SelectUpgradeSource picks the accepted release an upgrade verification of tag starts from,
// comparing versions as semantic versions (jobcontract.Releases). accepted holds the tags of
// the stream's accepted payloads, in any order; tags that are not semantic versions are
// ignored. ok is false when there is no candidate.
func SelectUpgradeSource(mode v1alpha1.UpgradeFrom, tag string, accepted []string) (string, bool) {
	current, err := semver.NewVersion(tag)
	if err != nil {
		return "", false
	}
	var older []*semver.Version // newest first
	for _, r := range jobcontract.Releases(accepted) {
		if r.Version.LessThan(current) {
			older = append(older, r.Version)
		}
	}
	pick := func(match func(v *semver.Version) bool, skip int) (string, bool) {
		for _, v := range older {
			if !match(v) {
				continue
			}
			if skip == 0 {
				return v.Original(), true
			}
			skip--
		}
		return "", false
	}
	anyVersion := func(*semver.Version) bool { return true }
	switch mode {
	case v1alpha1.UpgradeFromPrevious:
		return pick(anyVersion, 0)
	case v1alpha1.UpgradeFromPreviousMinus1:
		return pick(anyVersion, 1)
	case v1alpha1.UpgradeFromPreviousMinor:
		if current.Minor() == 0 {
			return "", false
		}
		return pick(func(v *semver.Version) bool {
			return v.Major() == current.Major() && v.Minor() == current.Minor()-1
		}, 0)
	case v1alpha1.UpgradeFromPreviousPatch:
		return pick(func(v *semver.Version) bool {
			return v.Major() == current.Major() && v.Minor() == current.Minor() && v.Patch() < current.Patch()
		}, 0)
	}
	return "", false
}
