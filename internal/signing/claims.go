package signing

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"time"

	digest "github.com/opencontainers/go-digest"
)

// SignatureType is critical.type of every simple signing claim.
const SignatureType = "atomic container signature"

// Claims are what a simple signing signature says.
type Claims struct {
	// DockerReference is critical.identity.docker-reference: the image's name as it is
	// published (registry/repository:tag).
	DockerReference string
	// ManifestDigest is critical.image.docker-manifest-digest, "sha256:<hex>".
	ManifestDigest string
	// Creator is optional.creator, the signing program; may be empty.
	Creator string
	// Timestamp is optional.timestamp, in whole seconds.
	Timestamp time.Time
}

// The JSON shapes, in the order containers/image writes them.
type claimsJSON struct {
	Critical criticalJSON `json:"critical"`
	Optional optionalJSON `json:"optional"`
}

type criticalJSON struct {
	Type     string       `json:"type"`
	Image    imageJSON    `json:"image"`
	Identity identityJSON `json:"identity"`
}

type imageJSON struct {
	DockerManifestDigest string `json:"docker-manifest-digest"`
}

type identityJSON struct {
	DockerReference string `json:"docker-reference"`
}

type optionalJSON struct {
	Creator   string `json:"creator,omitempty"`
	Timestamp int64  `json:"timestamp"`
}

func (c Claims) marshal() ([]byte, error) {
	if c.DockerReference == "" {
		return nil, errors.New("signing: the claims have no docker reference")
	}
	if _, err := digest.Parse(c.ManifestDigest); err != nil {
		return nil, fmt.Errorf("signing: manifest digest %q: %w", c.ManifestDigest, err)
	}
	return json.Marshal(claimsJSON{
		Critical: criticalJSON{
			Type:     SignatureType,
			Image:    imageJSON{DockerManifestDigest: c.ManifestDigest},
			Identity: identityJSON{DockerReference: c.DockerReference},
		},
		Optional: optionalJSON{Creator: c.Creator, Timestamp: c.Timestamp.Unix()},
	})
}

// parseClaims reads simple signing JSON with containers/image's rules: every object of the
// critical part has exactly its known fields (an unknown critical field may change the
// meaning, so it is refused), no field appears twice, optional fields other than creator and
// timestamp are ignored, and the timestamp is a whole number.
func parseClaims(data []byte) (Claims, error) {
	bad := func(format string, args ...any) (Claims, error) {
		return Claims{}, fmt.Errorf("%w: %s", ErrInvalidClaims, fmt.Sprintf(format, args...))
	}
	top, err := exactFields(data, "", "critical", "optional")
	if err != nil {
		return bad("%v", err)
	}
	critical, err := exactFields(top["critical"], "critical", "type", "image", "identity")
	if err != nil {
		return bad("%v", err)
	}
	var typ string
	if err := json.Unmarshal(critical["type"], &typ); err != nil {
		return bad("critical.type is not a string")
	}
	if typ != SignatureType {
		return bad("critical.type is %q, want %q", typ, SignatureType)
	}
	image, err := exactFields(critical["image"], "critical.image", "docker-manifest-digest")
	if err != nil {
		return bad("%v", err)
	}
	var c Claims
	if err := json.Unmarshal(image["docker-manifest-digest"], &c.ManifestDigest); err != nil {
		return bad("critical.image.docker-manifest-digest is not a string")
	}
	if _, err := digest.Parse(c.ManifestDigest); err != nil {
		return bad("critical.image.docker-manifest-digest %q: %v", c.ManifestDigest, err)
	}
	identity, err := exactFields(critical["identity"], "critical.identity", "docker-reference")
	if err != nil {
		return bad("%v", err)
	}
	if err := json.Unmarshal(identity["docker-reference"], &c.DockerReference); err != nil {
		return bad("critical.identity.docker-reference is not a string")
	}
	if c.DockerReference == "" {
		return bad("critical.identity.docker-reference is empty")
	}
	optional, err := objectFields(top["optional"], "optional")
	if err != nil {
		return bad("%v", err)
	}
	if raw, ok := optional["creator"]; ok {
		if err := json.Unmarshal(raw, &c.Creator); err != nil {
			return bad("optional.creator is not a string")
		}
	}
	if raw, ok := optional["timestamp"]; ok {
		var ts float64
		if err := json.Unmarshal(raw, &ts); err != nil {
			return bad("optional.timestamp is not a number")
		}
		if ts != math.Trunc(ts) || math.Abs(ts) > 1<<53 {
			return bad("optional.timestamp %v is not a whole number of seconds", ts)
		}
		c.Timestamp = time.Unix(int64(ts), 0).UTC()
	}
	return c, nil
}

// exactFields parses an object that must have exactly the given fields.
func exactFields(data []byte, where string, fields ...string) (map[string]json.RawMessage, error) {
	obj, err := objectFields(data, where)
	if err != nil {
		return nil, err
	}
	for _, f := range fields {
		if _, ok := obj[f]; !ok {
			return nil, fmt.Errorf("%s lacks the field %q", describe(where), f)
		}
	}
	if len(obj) != len(fields) {
		for name := range obj {
			known := false
			for _, f := range fields {
				known = known || f == name
			}
			if !known {
				return nil, fmt.Errorf("%s has the unknown field %q", describe(where), name)
			}
		}
	}
	return obj, nil
}

func describe(where string) string {
	if where == "" {
		return "the signature JSON"
	}
	return where
}

// objectFields parses one JSON object into its fields, refusing a field given twice and
// anything after the object.
func objectFields(data []byte, where string) (map[string]json.RawMessage, error) {
	dec := json.NewDecoder(bytes.NewReader(data))
	tok, err := dec.Token()
	if err != nil {
		return nil, fmt.Errorf("%s is not JSON: %w", describe(where), err)
	}
	if d, ok := tok.(json.Delim); !ok || d != '{' {
		return nil, fmt.Errorf("%s is not a JSON object", describe(where))
	}
	fields := map[string]json.RawMessage{}
	for dec.More() {
		tok, err := dec.Token()
		if err != nil {
			return nil, fmt.Errorf("%s is not valid JSON: %w", describe(where), err)
		}
		name := tok.(string) // inside an object the decoder only returns string keys
		var value json.RawMessage
		if err := dec.Decode(&value); err != nil {
			return nil, fmt.Errorf("%s is not valid JSON: %w", describe(where), err)
		}
		if _, dup := fields[name]; dup {
			return nil, fmt.Errorf("%s has the field %q twice", describe(where), name)
		}
		fields[name] = value
	}
	if _, err := dec.Token(); err != nil {
		return nil, fmt.Errorf("%s is not valid JSON: %w", describe(where), err)
	}
	if _, err := dec.Token(); err != io.EOF {
		return nil, fmt.Errorf("%s has data after the object", describe(where))
	}
	return fields, nil
}
