// Package policies proves that the admission policies shipped in config/samples/sigstore
// are what their verifiers accept: the Kyverno ClusterPolicy and the policy-controller
// ClusterImagePolicy are created (server-side dry run, strict field validation) in a real API
// server that has the projects' own CRDs, and the containers/image policy and registries.d
// file, loaded by containers/image, admit an image signed with the key and refuse others.
package policies

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
)

// The placeholders the samples use and docs/signing.md explains, with the values the tests
// put in their place.
const (
	placeholderRepository = "REPOSITORY"
	placeholderNamespace  = "NAMESPACE"
	placeholderStream     = "STREAM"
)

// sampleDir is config/samples/sigstore from this package's folder.
const sampleDir = "../../config/samples/sigstore"

// sample reads a sample and fills in its placeholders: repository, namespace/stream and
// the public key PEM (indented as the placeholder is). It fails when a placeholder the
// docs promise is missing, so a renamed placeholder is noticed.
func sample(name, repository, namespace, stream string, publicKeyPEM []byte) ([]byte, error) {
	data, err := os.ReadFile(filepath.Join(sampleDir, name))
	if err != nil {
		return nil, err
	}
	text := string(data)
	if !strings.Contains(text, placeholderRepository) {
		return nil, fmt.Errorf("%s has no %s placeholder", name, placeholderRepository)
	}
	text = replaceIndentedKey(text, strings.TrimSpace(string(publicKeyPEM)))
	text = strings.ReplaceAll(text, placeholderRepository, repository)
	text = strings.ReplaceAll(text, placeholderNamespace, namespace)
	text = strings.ReplaceAll(text, placeholderStream, stream)
	for _, p := range []string{placeholderRepository, placeholderNamespace, placeholderStream, "PUBLIC-KEY-OF"} {
		if strings.Contains(text, p) {
			return nil, fmt.Errorf("%s: placeholder %s left after filling in", name, p)
		}
	}
	return []byte(text), nil
}

// replaceIndentedKey puts key wherever the key placeholder is, each line indented as the
// placeholder's first line is (YAML block scalars).
func replaceIndentedKey(text, key string) string {
	lines := strings.Split(text, "\n")
	var out []string
	for i := 0; i < len(lines); i++ {
		line := lines[i]
		indent := line[:len(line)-len(strings.TrimLeft(line, " "))]
		if strings.TrimSpace(line) == "-----BEGIN PUBLIC KEY-----" && i+2 < len(lines) &&
			strings.TrimSpace(lines[i+1]) == "PUBLIC-KEY-OF-THE-RELEASE-CONTROLLER" {
			for _, k := range strings.Split(key, "\n") {
				out = append(out, indent+k)
			}
			i += 2
			continue
		}
		out = append(out, line)
	}
	return strings.Join(out, "\n")
}
