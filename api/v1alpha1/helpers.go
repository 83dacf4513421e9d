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
