package releaselog

import (
	"context"
	"crypto/hmac"
	"crypto/rand"
	"crypto/sha256"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/release-controller/release-controller/api/v1alpha1"
)

// An entry's seal says it was written through the release controller: the controller's own
// entries and AddRelease's, whose author the writer set. Anyone whom RBAC lets create or
// update ReleaseLogs can write any entry, naming any author; without the key they cannot seal
// it, so readers show it as written directly. The key has this one purpose and lives in a
// Secret of the controller's own namespace, which tenants cannot read.

// Defaults of the release log key.
const (
	// DefaultKeySecret names the Secret holding the key, in the namespace of the controller
	// and the API server.
	DefaultKeySecret = "release-controller-release-log-key"
	// KeySecretKey is the key of the Secret's data that holds the key.
	KeySecretKey = "key"
	// MinKeyBytes is the shortest key accepted: an HMAC-SHA256 key of 32 random bytes.
	MinKeyBytes = 32
)

// sealBytes is how much of the HMAC-SHA256 a seal keeps: 128 bits, plenty against forgery
// (each guess is a write the API server sees), and 32 bytes of JSON an entry rather than 87,
// so that a day of 3,500 verdicts still fits DefaultMaxDayBytes.
const sealBytes = 16

// sealDomain separates the MACs of the release log's entries from anything else a key could
// ever be used for.
const sealDomain = "release-controller.dev/releaselog-entry/v1"

// Seal returns the seal of entry e of day (YYYY-MM-DD) in namespace under key: an HMAC-SHA256
// of the namespace, the day and the entry's JSON without its seal, its first 16 bytes in
// unpadded base64url (22 characters). The namespace and the day are part of it, so a sealed
// entry copied to another day or namespace is not sealed there. It is empty without a key.
func Seal(key []byte, namespace, day string, e v1alpha1.ReleaseLogEntry) string {
	if len(key) == 0 {
		return ""
	}
	return base64.RawURLEncoding.EncodeToString(mac(key, namespace, day, e))
}

// Sealed reports whether e carries the seal that key gives it on day in namespace. Without a
// key nothing is sealed.
func Sealed(key []byte, namespace, day string, e v1alpha1.ReleaseLogEntry) bool {
	if len(key) == 0 {
		return false
	}
	sum, err := base64.RawURLEncoding.DecodeString(e.Seal)
	if err != nil || len(sum) != sealBytes {
		return false
	}
	return hmac.Equal(sum, mac(key, namespace, day, e))
}

// mac is the HMAC of the entry's canonical form: the domain, the namespace and the day (none
// of which holds a NUL byte), then the entry as JSON without its seal. encoding/json writes a
// struct's fields in their order and every date as whole seconds in UTC, as the API server
// stores it, so an entry read back gives the same bytes it was sealed with.
func mac(key []byte, namespace, day string, e v1alpha1.ReleaseLogEntry) []byte {
	e.Seal = ""
	data, err := json.Marshal(e)
	if err != nil {
		// An API type always marshals.
		panic(fmt.Sprintf("marshalling a release log entry: %v", err))
	}
	h := hmac.New(sha256.New, key)
	h.Write([]byte(sealDomain + "\x00" + namespace + "\x00" + day + "\x00"))
	h.Write(data)
	return h.Sum(nil)[:sealBytes]
}

// ErrShortKey says the Secret holds no key, or one shorter than MinKeyBytes.
var ErrShortKey = errors.New("the release log key is too short")

// KeyFromSecret returns the release log key the Secret holds.
func KeyFromSecret(s *corev1.Secret) ([]byte, error) {
	key := s.Data[KeySecretKey]
	if len(key) < MinKeyBytes {
		return nil, fmt.Errorf("%w: the Secret %s/%s: data.%s holds %d bytes, the release log key needs at least %d (delete the Secret to have a new key made)",
			ErrShortKey, s.Namespace, s.Name, KeySecretKey, len(key), MinKeyBytes)
	}
	return key, nil
}

// EnsureKey returns the release log key in the Secret ref, creating the Secret with a new
// random key when there is none: the controller or the API server, whichever starts first,
// makes it, and both then read the same key. Entries sealed under a key that was replaced
// show as written directly.
func EnsureKey(ctx context.Context, c client.Client, ref types.NamespacedName) ([]byte, error) {
	var s corev1.Secret
	err := c.Get(ctx, ref, &s)
	if apierrors.IsNotFound(err) {
		key := make([]byte, MinKeyBytes)
		if _, err := rand.Read(key); err != nil {
			return nil, err
		}
		s = corev1.Secret{
			ObjectMeta: metav1.ObjectMeta{Namespace: ref.Namespace, Name: ref.Name,
				Labels: map[string]string{"app.kubernetes.io/part-of": "release-controller"}},
			Type: corev1.SecretTypeOpaque,
			Data: map[string][]byte{KeySecretKey: key},
		}
		err = c.Create(ctx, &s)
		if apierrors.IsAlreadyExists(err) {
			// The other process made it meanwhile: use theirs.
			err = c.Get(ctx, ref, &s)
		}
	}
	if err != nil {
		return nil, fmt.Errorf("reading or making the Secret %s: %w", ref, err)
	}
	return KeyFromSecret(&s)
}
