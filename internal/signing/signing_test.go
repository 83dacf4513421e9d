package signing

import (
	"bytes"
	"errors"
	"io"
	"regexp"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/ProtonMail/go-crypto/openpgp"
	"github.com/ProtonMail/go-crypto/openpgp/armor"
	"github.com/ProtonMail/go-crypto/openpgp/packet"
)

// RSA 3072 keys take a moment to make: each test binary makes its keys once.
var (
	testKeysOnce sync.Once
	testKeys     [2][]byte
	testKeysErr  error
)

// testKey returns the armored private test key i (0 or 1) and the parsed key.
func testKey(t *testing.T, i int) ([]byte, *Key) {
	t.Helper()
	testKeysOnce.Do(func() {
		for j := range testKeys {
			if testKeys[j], testKeysErr = GenerateKey("Release Controller Test", "signer@example.com"); testKeysErr != nil {
				return
			}
		}
	})
	if testKeysErr != nil {
		t.Fatal(testKeysErr)
	}
	k, err := ParsePrivateKey(testKeys[i], nil, time.Now())
	if err != nil {
		t.Fatal(err)
	}
	return testKeys[i], k
}

const testDigest = "sha256:0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef"

func testClaims() Claims {
	return Claims{
		DockerReference: "registry.example.com/product/release:4.15.0",
		ManifestDigest:  testDigest,
		Creator:         "release-controller test",
		Timestamp:       time.Date(2026, 11, 23, 9, 30, 15, 0, time.UTC),
	}
}

// literalData returns the content of a signed message without checking its signature.
func literalData(t *testing.T, sig []byte) []byte {
	t.Helper()
	md, err := openpgp.ReadMessage(bytes.NewReader(sig), openpgp.EntityList{}, nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	body, err := io.ReadAll(md.UnverifiedBody)
	if err != nil {
		t.Fatal(err)
	}
	return body
}

func TestSignVerify(t *testing.T) {
	_, key := testKey(t, 0)
	claims := testClaims()
	sig, err := Sign(key, claims)
	if err != nil {
		t.Fatal(err)
	}
	// The contract's JSON, field for field.
	want := `{"critical":{"type":"atomic container signature","image":{"docker-manifest-digest":"` + testDigest +
		`"},"identity":{"docker-reference":"registry.example.com/product/release:4.15.0"}},` +
		`"optional":{"creator":"release-controller test","timestamp":1795426215}}`
	if got := string(literalData(t, sig)); got != want {
		t.Errorf("signed content:\n%s\nwant:\n%s", got, want)
	}
	if bytes.HasPrefix(sig, []byte("-----BEGIN")) {
		t.Error("the signature is armored; simple signing stores binary messages")
	}

	got, keyID, err := Verify(key.Keyring(), sig)
	if err != nil {
		t.Fatal(err)
	}
	if keyID != key.ID() {
		t.Errorf("key id %s, want %s", keyID, key.ID())
	}
	if !got.Timestamp.Equal(claims.Timestamp) || got.DockerReference != claims.DockerReference ||
		got.ManifestDigest != claims.ManifestDigest || got.Creator != claims.Creator {
		t.Errorf("claims %+v, want %+v", got, claims)
	}

	// The armored public key verifies as well as the key's own keyring.
	pub, err := key.ArmoredPublicKey()
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.HasPrefix(pub, []byte("-----BEGIN PGP PUBLIC KEY BLOCK-----")) || bytes.Contains(pub, []byte("PRIVATE")) {
		t.Errorf("public key:\n%s", pub)
	}
	kr, err := ParsePublicKeys(pub)
	if err != nil {
		t.Fatal(err)
	}
	if _, _, err := Verify(kr, sig); err != nil {
		t.Errorf("verifying with the armored public key: %v", err)
	}

	// The timestamp is the caller's clock's: none is refused rather than guessed.
	claims.Timestamp = time.Time{}
	if _, err := Sign(key, claims); err == nil || !strings.Contains(err.Error(), "no timestamp") {
		t.Errorf("signing claims without a timestamp: %v", err)
	}
}

func TestKeyIdentity(t *testing.T) {
	armored, key := testKey(t, 0)
	if !regexp.MustCompile(`^[0-9A-F]{16}$`).MatchString(key.ID()) {
		t.Errorf("ID() = %q, want 16 upper-case hex digits", key.ID())
	}
	if !regexp.MustCompile(`^[0-9A-F]{40}$`).MatchString(key.Fingerprint()) {
		t.Errorf("Fingerprint() = %q, want 40 upper-case hex digits", key.Fingerprint())
	}
	// A v4 key id is the fingerprint's last 64 bits; GenerateKey's primary key signs.
	if !strings.HasSuffix(key.Fingerprint(), key.ID()) {
		t.Errorf("ID %s is not the end of fingerprint %s", key.ID(), key.Fingerprint())
	}
	if !bytes.HasPrefix(armored, []byte("-----BEGIN PGP PRIVATE KEY BLOCK-----")) {
		t.Errorf("GenerateKey did not armor a private key:\n%.80s", armored)
	}
	entities, err := openpgp.ReadArmoredKeyRing(bytes.NewReader(armored))
	if err != nil {
		t.Fatal(err)
	}
	pk := entities[0].PrimaryKey
	if pk.PubKeyAlgo != packet.PubKeyAlgoRSA {
		t.Errorf("algorithm %v, want RSA", pk.PubKeyAlgo)
	}
	if bits, _ := pk.BitLength(); bits != 3072 {
		t.Errorf("%d bits, want 3072", bits)
	}
	if entities[0].PrivateKey.Encrypted {
		t.Error("GenerateKey encrypted the key")
	}

	// A private key given as a public key counts only by its public part.
	kr, err := ParsePublicKeys(armored)
	if err != nil {
		t.Fatal(err)
	}
	if kr.Len() != 1 || kr.IDs()[0] != key.ID() || kr.entities[0].PrivateKey != nil {
		t.Errorf("keyring of a private key: %d keys %v, private part kept: %v", kr.Len(), kr.IDs(), kr.entities[0].PrivateKey != nil)
	}
	// Several blocks make one keyring.
	other, _ := testKey(t, 1)
	kr, err = ParsePublicKeys(armored, other)
	if err != nil || kr.Len() != 2 {
		t.Errorf("two blocks: %d keys, %v", kr.Len(), err)
	}
	// One input of several exported keys one after the other.
	kr, err = ParsePublicKeys(append(bytes.Clone(armored), other...))
	if err != nil || kr.Len() != 2 {
		t.Errorf("two concatenated blocks: %d keys, %v", kr.Len(), err)
	}
	if _, err := ParsePublicKeys([]byte("not a key")); err == nil {
		t.Error("ParsePublicKeys accepted garbage")
	}
}

func TestVerifyRefuses(t *testing.T) {
	_, key := testKey(t, 0)
	_, other := testKey(t, 1)
	sig, err := Sign(key, testClaims())
	if err != nil {
		t.Fatal(err)
	}

	t.Run("wrong key", func(t *testing.T) {
		_, keyID, err := Verify(other.Keyring(), sig)
		if !errors.Is(err, ErrUnknownKey) {
			t.Fatalf("err = %v, want ErrUnknownKey", err)
		}
		if keyID != key.ID() || !strings.Contains(err.Error(), key.ID()) {
			t.Errorf("key id %q, error %q: want the signer %s named", keyID, err, key.ID())
		}
	})
	t.Run("empty keyring", func(t *testing.T) {
		if _, _, err := Verify(Keyring{}, sig); !errors.Is(err, ErrUnknownKey) {
			t.Fatalf("err = %v, want ErrUnknownKey", err)
		}
	})
	t.Run("tampered content", func(t *testing.T) {
		// Same length, one digit of the digest changed.
		i := bytes.Index(sig, []byte(testDigest))
		if i < 0 {
			t.Fatal("the digest is not in the message")
		}
		tampered := bytes.Clone(sig)
		tampered[i+len(testDigest)-1] = 'e'
		_, keyID, err := Verify(key.Keyring(), tampered)
		if !errors.Is(err, ErrBadSignature) {
			t.Fatalf("err = %v, want ErrBadSignature", err)
		}
		if keyID != key.ID() {
			t.Errorf("key id %q, want %s", keyID, key.ID())
		}
	})
	t.Run("tampered signature", func(t *testing.T) {
		tampered := bytes.Clone(sig)
		tampered[len(tampered)-10] ^= 0xff
		if _, _, err := Verify(key.Keyring(), tampered); !errors.Is(err, ErrBadSignature) {
			t.Fatalf("err = %v, want ErrBadSignature", err)
		}
	})
	t.Run("truncated", func(t *testing.T) {
		if _, _, err := Verify(key.Keyring(), sig[:len(sig)/2]); !errors.Is(err, ErrBadSignature) {
			t.Fatalf("err = %v, want ErrBadSignature", err)
		}
	})
	t.Run("not OpenPGP", func(t *testing.T) {
		if _, _, err := Verify(key.Keyring(), []byte(`{"critical":{}}`)); !errors.Is(err, ErrBadSignature) {
			t.Fatalf("err = %v, want ErrBadSignature", err)
		}
	})
	t.Run("armored", func(t *testing.T) {
		var buf bytes.Buffer
		w, err := armor.Encode(&buf, "PGP MESSAGE", nil)
		if err != nil {
			t.Fatal(err)
		}
		_, _ = w.Write(sig)
		_ = w.Close()
		if _, _, err := Verify(key.Keyring(), buf.Bytes()); !errors.Is(err, ErrBadSignature) {
			t.Fatalf("err = %v, want ErrBadSignature (simple signing signatures are binary)", err)
		}
	})
	t.Run("unsigned literal data", func(t *testing.T) {
		// The signed content as a plain literal data packet, with no signature.
		var plain bytes.Buffer
		lw, err := packet.SerializeLiteral(nopCloser{&plain}, true, "", 0)
		if err != nil {
			t.Fatal(err)
		}
		_, _ = lw.Write(literalData(t, sig))
		_ = lw.Close()
		if _, _, err := Verify(key.Keyring(), plain.Bytes()); !errors.Is(err, ErrBadSignature) {
			t.Fatalf("err = %v, want ErrBadSignature", err)
		}
	})
}

type nopCloser struct{ io.Writer }

func (nopCloser) Close() error { return nil }

// TestVerifyClaims signs malformed claims with a good key: the signature is good, what it
// says is refused as containers/image refuses it.
func TestVerifyClaims(t *testing.T) {
	_, key := testKey(t, 0)
	const (
		image    = `"image":{"docker-manifest-digest":"` + testDigest + `"}`
		identity = `"identity":{"docker-reference":"registry.example.com/product/release:4.15.0"}`
		typ      = `"type":"atomic container signature"`
		optional = `"optional":{"creator":"x","timestamp":1795426215}`
	)
	critical := func(fields ...string) string { return `"critical":{` + strings.Join(fields, ",") + `}` }
	good := `{` + critical(typ, image, identity) + `,` + optional + `}`
	for _, tc := range []struct {
		name, body string
		want       string // in the error; empty: accepted
	}{
		{"good", good, ""},
		{"fields in another order", `{` + optional + `,` + critical(identity, typ, image) + `}`, ""},
		{"unknown optional field ignored", `{` + critical(typ, image, identity) + `,"optional":{"note":[1,2],"timestamp":5}}`, ""},
		{"no creator, no timestamp", `{` + critical(typ, image, identity) + `,"optional":{}}`, ""},
		{"not JSON", `atomic container signature`, "is not JSON"},
		{"not an object", `[1]`, "is not a JSON object"},
		{"trailing data", good + `{}`, "data after the object"},
		{"no optional", `{` + critical(typ, image, identity) + `}`, `lacks the field "optional"`},
		{"unknown top-level field", `{` + critical(typ, image, identity) + `,` + optional + `,"extra":1}`, `unknown field "extra"`},
		{"wrong type", `{` + critical(`"type":"cosign container image signature"`, image, identity) + `,` + optional + `}`, `critical.type is "cosign`},
		{"type not a string", `{` + critical(`"type":1`, image, identity) + `,` + optional + `}`, "critical.type is not a string"},
		{"no identity", `{` + critical(typ, image) + `,` + optional + `}`, `critical lacks the field "identity"`},
		{"unknown critical field", `{` + critical(typ, image, identity, `"expires":1`) + `,` + optional + `}`, `critical has the unknown field "expires"`},
		{"unknown image field", `{` + critical(typ, `"image":{"docker-manifest-digest":"`+testDigest+`","size":3}`, identity) + `,` + optional + `}`, `critical.image has the unknown field "size"`},
		{"unknown identity field", `{` + critical(typ, image, `"identity":{"docker-reference":"a/b","scope":"x"}`) + `,` + optional + `}`, `critical.identity has the unknown field "scope"`},
		{"duplicate field", `{` + critical(typ, image, identity, typ) + `,` + optional + `}`, `has the field "type" twice`},
		{"bad digest", `{` + critical(typ, `"image":{"docker-manifest-digest":"sha256:xyz"}`, identity) + `,` + optional + `}`, "docker-manifest-digest"},
		{"empty reference", `{` + critical(typ, image, `"identity":{"docker-reference":""}`) + `,` + optional + `}`, "docker-reference is empty"},
		{"fractional timestamp", `{` + critical(typ, image, identity) + `,"optional":{"timestamp":1.5}}`, "not a whole number"},
		{"creator not a string", `{` + critical(typ, image, identity) + `,"optional":{"creator":7}}`, "optional.creator is not a string"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			sig, err := signBody(key, []byte(tc.body))
			if err != nil {
				t.Fatal(err)
			}
			c, keyID, err := Verify(key.Keyring(), sig)
			if tc.want == "" {
				if err != nil {
					t.Fatalf("refused: %v", err)
				}
				if c.ManifestDigest != testDigest || c.DockerReference != "registry.example.com/product/release:4.15.0" {
					t.Errorf("claims %+v", c)
				}
				return
			}
			if !errors.Is(err, ErrInvalidClaims) || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("err = %v, want ErrInvalidClaims with %q", err, tc.want)
			}
			if keyID != key.ID() {
				t.Errorf("key id %q, want the signer %s also for invalid claims", keyID, key.ID())
			}
		})
	}
	// Sign refuses claims it would not accept.
	if _, err := Sign(key, Claims{ManifestDigest: testDigest}); err == nil {
		t.Error("Sign accepted claims without a docker reference")
	}
	if _, err := Sign(key, Claims{DockerReference: "a/b", ManifestDigest: "sha256:short"}); err == nil {
		t.Error("Sign accepted an invalid digest")
	}
}

func TestParsePrivateKey(t *testing.T) {
	armored, key := testKey(t, 0)

	// The same key, encrypted with a passphrase, as `gpg --export-secret-keys` gives it.
	entities, err := openpgp.ReadArmoredKeyRing(bytes.NewReader(armored))
	if err != nil {
		t.Fatal(err)
	}
	if err := entities[0].EncryptPrivateKeys([]byte("correct horse"), nil); err != nil {
		t.Fatal(err)
	}
	var buf bytes.Buffer
	w, err := armor.Encode(&buf, openpgp.PrivateKeyType, nil)
	if err != nil {
		t.Fatal(err)
	}
	if err := entities[0].SerializePrivateWithoutSigning(w, nil); err != nil {
		t.Fatal(err)
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	encryptedKey := buf.Bytes()

	t.Run("encrypted, right passphrase", func(t *testing.T) {
		k, err := ParsePrivateKey(encryptedKey, []byte("correct horse"), time.Now())
		if err != nil {
			t.Fatal(err)
		}
		if k.ID() != key.ID() {
			t.Errorf("id %s, want %s", k.ID(), key.ID())
		}
		sig, err := Sign(k, testClaims())
		if err != nil {
			t.Fatal(err)
		}
		if _, _, err := Verify(key.Keyring(), sig); err != nil {
			t.Errorf("a signature by the decrypted key does not verify: %v", err)
		}
	})
	t.Run("encrypted, no passphrase", func(t *testing.T) {
		_, err := ParsePrivateKey(encryptedKey, nil, time.Now())
		if err == nil || !strings.Contains(err.Error(), "is encrypted and no passphrase was given") {
			t.Fatalf("err = %v", err)
		}
	})
	t.Run("encrypted, wrong passphrase", func(t *testing.T) {
		_, err := ParsePrivateKey(encryptedKey, []byte("battery staple"), time.Now())
		if err == nil || !strings.Contains(err.Error(), "wrong passphrase") {
			t.Fatalf("err = %v", err)
		}
	})
	t.Run("unencrypted with a passphrase", func(t *testing.T) {
		// A passphrase for a key that needs none is harmless.
		if _, err := ParsePrivateKey(armored, []byte("unused"), time.Now()); err != nil {
			t.Fatal(err)
		}
	})
	t.Run("public key", func(t *testing.T) {
		pub, err := key.ArmoredPublicKey()
		if err != nil {
			t.Fatal(err)
		}
		_, err = ParsePrivateKey(pub, nil, time.Now())
		if err == nil || !strings.Contains(err.Error(), "is a public key, not a private key") {
			t.Fatalf("err = %v", err)
		}
	})
	t.Run("two keys", func(t *testing.T) {
		other, _ := testKey(t, 1)
		_, err := ParsePrivateKey(append(bytes.Clone(armored), other...), nil, time.Now())
		if err == nil || !strings.Contains(err.Error(), "holds 2 keys, want one") {
			t.Fatalf("err = %v", err)
		}
	})
	t.Run("garbage", func(t *testing.T) {
		if _, err := ParsePrivateKey([]byte("-----BEGIN PGP PRIVATE KEY BLOCK-----\n\nnope\n"), nil, time.Now()); err == nil {
			t.Fatal("accepted garbage")
		}
	})
	t.Run("expired key", func(t *testing.T) {
		// A key that expired an hour after it was made, a year ago, signs nothing.
		made := time.Now().AddDate(-1, 0, 0)
		cfg := &packet.Config{Algorithm: packet.PubKeyAlgoEdDSA, KeyLifetimeSecs: 3600, Time: func() time.Time { return made }}
		e, err := openpgp.NewEntity("Old", "", "old@example.com", cfg)
		if err != nil {
			t.Fatal(err)
		}
		var buf bytes.Buffer
		w, _ := armor.Encode(&buf, openpgp.PrivateKeyType, nil)
		if err := e.SerializePrivate(w, cfg); err != nil {
			t.Fatal(err)
		}
		_ = w.Close()
		_, err = ParsePrivateKey(buf.Bytes(), nil, time.Now())
		if err == nil || !strings.Contains(err.Error(), "has no usable signing key") {
			t.Fatalf("err = %v", err)
		}
	})
}
