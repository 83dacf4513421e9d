package v1alpha1

import (
	"fmt"
	"strings"
)

// SkippedUpgrades returns the verifications listed in the AnnotationUpgradeSkipped annotation.
func (p *ReleasePayload) SkippedUpgrades() map[string]bool {
	skipped := map[string]bool{}
	for name := range strings.SplitSeq(p.Annotations[AnnotationUpgradeSkipped], ",") {
		if name = strings.TrimSpace(name); name != "" {
			skipped[name] = true
		}
	}
	return skipped
}

// SignedMessage is the message of a PayloadSigned condition that is True: "signed by <key id>
// (signature-<n>)", the signature being signature-<n> of the payload's digest in the signature
// store. The pages, REST and MCP read the key and the signature back from it.
func SignedMessage(keyID string, index int) string {
	return fmt.Sprintf("signed by %s (signature-%d)", keyID, index)
}

// ParseSignedMessage reads a SignedMessage back; ok is false for any other text.
func ParseSignedMessage(msg string) (keyID string, index int, ok bool) {
	if _, err := fmt.Sscanf(msg, "signed by %s (signature-%d)", &keyID, &index); err != nil || index < 1 || SignedMessage(keyID, index) != msg {
		return "", 0, false
	}
	return keyID, index, true
}

// PlatformSuffix is what a platform adds to the name of a verification run once per platform:
// its architecture, and its variant after a dash (linux/arm64/v8 → arm64-v8).
func PlatformSuffix(platform string) string {
	_, archVariant, _ := strings.Cut(platform, "/")
	return strings.ReplaceAll(archVariant, "/", "-")
}

// PlatformLabel is a platform as a label value: "/" written "-" (linux/arm64 → linux-arm64).
func PlatformLabel(platform string) string {
	return strings.ReplaceAll(platform, "/", "-")
}

// Platform is the one platform a payload's verification runs for, "" for none. (A stream's
// verification may list several; each payload gets one verification per platform.)
func (v *Verification) Platform() string {
	if len(v.Platforms) == 1 {
		return v.Platforms[0]
	}
	return ""
}

// ImageOf is the payload's image of platform ("" or a platform the payload was not built
// for: the payload image itself, an index when the payload has platforms).
func (s *ReleasePayloadStatus) ImageOf(platform string) string {
	for _, pi := range s.PlatformImages {
		if pi.Platform == platform {
			return pi.Image
		}
	}
	return s.PayloadImage
}
