// Package signing signs and verifies payload images with OpenPGP "simple signing": an OpenPGP
// signed message whose literal data is the `atomic container signature` JSON that
// containers/image, CRI-O and podman verify (DESIGN.md section 12). It holds the keys
// (parse, generate, export) and the claims codec; the signature store is package store
// package beside it.
package signing

import (
	"bytes"
	"crypto"
	"errors"
	"fmt"
	"io"
	"strings"
	"time"

	"github.com/ProtonMail/go-crypto/openpgp"
	"github.com/ProtonMail/go-crypto/openpgp/armor"
	"github.com/ProtonMail/go-crypto/openpgp/packet"
)

// Errors a caller can tell apart with errors.Is.
var (
	// ErrUnknownKey: the signature was made by a key that is not in the keyring.
	ErrUnknownKey = errors.New("signed by an unknown key")
	// ErrBadSignature: the message is signed by a known key but the signature does not match
	// its content (tampered with, truncated, or not a signed message at all).
	ErrBadSignature = errors.New("invalid signature")
	// ErrInvalidClaims: the signature is good but what it says is not a valid simple signing
	// claim.
	ErrInvalidClaims = errors.New("invalid simple signing claims")
)

// maxSignatureBytes bounds what Verify reads from a signed message; a simple signing claim is
// a few hundred bytes.
const maxSignatureBytes = 1 << 20

// config is the one OpenPGP configuration for signing: SHA-256, no randomizing notation (older
// verifiers need nothing unusual in a signature), the current time.
func config() *packet.Config {
	return &packet.Config{
		DefaultHash:                           crypto.SHA256,
		NonDeterministicSignaturesViaNotation: packet.BoolPointer(false),
	}
}

// Key is a private signing key.
type Key struct {
	entity *openpgp.Entity
	// signer is the (sub)key that makes the signatures.
	signer openpgp.Key
	// public is the entity without its private keys.
	public *openpgp.Entity
}

// ParsePrivateKey reads an ASCII-armored private key holding one key (with its subkeys),
// decrypting it with passphrase when it is encrypted; its signing key must be valid (not
// revoked or expired) at now.
func ParsePrivateKey(armored, passphrase []byte, now time.Time) (*Key, error) {
	entities, err := readArmoredKeys(armored)
	if err != nil {
		return nil, fmt.Errorf("reading the private key: %w", err)
	}
	if len(entities) != 1 {
		return nil, fmt.Errorf("reading the private key: the armored block holds %d keys, want one", len(entities))
	}
	e := entities[0]
	if e.PrivateKey == nil {
		return nil, fmt.Errorf("reading the private key: %s is a public key, not a private key", keyID(e.PrimaryKey))
	}
	if encrypted(e) {
		if len(passphrase) == 0 {
			return nil, fmt.Errorf("the private key %s is encrypted and no passphrase was given", keyID(e.PrimaryKey))
		}
		if err := e.DecryptPrivateKeys(passphrase); err != nil {
			return nil, fmt.Errorf("decrypting the private key %s: wrong passphrase (%w)", keyID(e.PrimaryKey), err)
		}
	}
	signer, ok := e.SigningKey(now)
	if !ok || signer.PrivateKey == nil || signer.PrivateKey.Dummy() {
		return nil, fmt.Errorf("the private key %s has no usable signing key (revoked, expired, or only its public part is present)", keyID(e.PrimaryKey))
	}
	public, err := publicPart(e)
	if err != nil {
		return nil, fmt.Errorf("reading the public part of the private key %s: %w", keyID(e.PrimaryKey), err)
	}
	return &Key{entity: e, signer: signer, public: public}, nil
}

func encrypted(e *openpgp.Entity) bool {
	if e.PrivateKey != nil && e.PrivateKey.Encrypted {
		return true
	}
	for _, sub := range e.Subkeys {
		if sub.PrivateKey != nil && sub.PrivateKey.Encrypted {
			return true
		}
	}
	return false
}

// GenerateKey makes a new unencrypted RSA 3072 key (an RSA primary key that signs and an RSA
// encryption subkey) and returns it ASCII-armored. RSA is what every simple signing verifier
// reads: gpg and gpgme (CRI-O, podman), containers/image's pure-Go mechanism, and older
// OpenPGP libraries that know no elliptic curves.
func GenerateKey(name, email string) (armoredPrivate []byte, err error) {
	cfg := config()
	cfg.Algorithm = packet.PubKeyAlgoRSA
	cfg.RSABits = 3072
	e, err := openpgp.NewEntity(name, "", email, cfg)
	if err != nil {
		return nil, fmt.Errorf("generating a signing key: %w", err)
	}
	var buf bytes.Buffer
	w, err := armor.Encode(&buf, openpgp.PrivateKeyType, nil)
	if err != nil {
		return nil, err
	}
	if err := e.SerializePrivate(w, cfg); err != nil {
		return nil, fmt.Errorf("encoding the signing key: %w", err)
	}
	if err := w.Close(); err != nil {
		return nil, err
	}
	buf.WriteByte('\n')
	return buf.Bytes(), nil
}

// ID is the key id of the key that signs, 16 upper-case hex digits, as gpg prints it.
func (k *Key) ID() string { return keyID(k.signer.PublicKey) }

// Fingerprint is the primary key's fingerprint in upper-case hex: the key identity
// containers/image reports and policy files name.
func (k *Key) Fingerprint() string { return fingerprint(k.entity.PrimaryKey) }

// ArmoredPublicKey returns the key's public part (public keys, user ids, self-signatures),
// ASCII-armored, as served at /signatures/pubkey.asc.
func (k *Key) ArmoredPublicKey() ([]byte, error) {
	return armoredPublic(k.public)
}

// Keyring returns a keyring holding the public part of k.
func (k *Key) Keyring() Keyring {
	return Keyring{entities: openpgp.EntityList{k.public}}
}

func armoredPublic(e *openpgp.Entity) ([]byte, error) {
	var buf bytes.Buffer
	w, err := armor.Encode(&buf, openpgp.PublicKeyType, nil)
	if err != nil {
		return nil, err
	}
	if err := e.Serialize(w); err != nil {
		return nil, fmt.Errorf("encoding the public key %s: %w", keyID(e.PrimaryKey), err)
	}
	if err := w.Close(); err != nil {
		return nil, err
	}
	buf.WriteByte('\n')
	return buf.Bytes(), nil
}

// publicPart returns a copy of e without its private keys.
func publicPart(e *openpgp.Entity) (*openpgp.Entity, error) {
	var buf bytes.Buffer
	if err := e.Serialize(&buf); err != nil {
		return nil, err
	}
	return openpgp.ReadEntity(packet.NewReader(&buf))
}

// Keyring is a set of public keys that signatures are verified against.
type Keyring struct {
	entities openpgp.EntityList
}

// ParsePublicKeys reads any number of ASCII-armored inputs, each holding one or more armored
// key blocks; of private keys only their public part is kept. Every input must hold a key.
func ParsePublicKeys(armored ...[]byte) (Keyring, error) {
	var kr Keyring
	for i, block := range armored {
		entities, err := readArmoredKeys(block)
		if err != nil {
			return Keyring{}, fmt.Errorf("reading public key block %d: %w", i+1, err)
		}
		for _, e := range entities {
			if e.PrivateKey != nil {
				if e, err = publicPart(e); err != nil {
					return Keyring{}, fmt.Errorf("reading public key block %d: %w", i+1, err)
				}
			}
			kr.entities = append(kr.entities, e)
		}
	}
	return kr, nil
}

// readArmoredKeys reads every armored key block in data (files of keys are often several
// exported keys one after the other; the armor decoder alone reads only the first).
func readArmoredKeys(data []byte) (openpgp.EntityList, error) {
	const begin = "-----BEGIN PGP "
	var all openpgp.EntityList
	rest := data
	for {
		i := bytes.Index(rest, []byte(begin))
		if i < 0 {
			break
		}
		next := bytes.Index(rest[i+len(begin):], []byte("\n"+begin))
		block := rest[i:]
		if next >= 0 {
			block = rest[i : i+len(begin)+next+1]
		}
		entities, err := openpgp.ReadArmoredKeyRing(bytes.NewReader(block))
		if err != nil {
			return nil, err
		}
		all = append(all, entities...)
		rest = rest[i+len(block):]
	}
	if len(all) == 0 {
		// No armor header at all: let the decoder say what is wrong.
		return openpgp.ReadArmoredKeyRing(bytes.NewReader(data))
	}
	return all, nil
}

// Len is the number of keys (primary keys) in the keyring.
func (kr Keyring) Len() int { return len(kr.entities) }

// IDs are the key ids of the keyring's primary keys, as gpg prints them.
func (kr Keyring) IDs() []string {
	ids := make([]string, len(kr.entities))
	for i, e := range kr.entities {
		ids[i] = keyID(e.PrimaryKey)
	}
	return ids
}

func keyID(pk *packet.PublicKey) string { return fmt.Sprintf("%016X", pk.KeyId) }

func fingerprint(pk *packet.PublicKey) string {
	return strings.ToUpper(fmt.Sprintf("%x", pk.Fingerprint))
}

// Sign returns a binary OpenPGP signed message (one-pass signature, literal data, signature)
// whose literal data is c as simple signing JSON. c.Timestamp is the caller's clock's; the
// OpenPGP signature packet's own creation time is the machine's (a verifier refuses a
// signature made before its key, which a test's fake clock could otherwise ask for).
func Sign(k *Key, c Claims) ([]byte, error) {
	if c.Timestamp.IsZero() {
		return nil, errors.New("signing: the claims have no timestamp")
	}
	body, err := c.marshal()
	if err != nil {
		return nil, err
	}
	return signBody(k, body)
}

// signBody signs body as a binary literal data packet.
func signBody(k *Key, body []byte) ([]byte, error) {
	cfg := config()
	cfg.SigningKeyId = k.signer.PublicKey.KeyId
	var buf bytes.Buffer
	w, err := openpgp.Sign(&buf, k.entity, &openpgp.FileHints{IsBinary: true}, cfg)
	if err != nil {
		return nil, fmt.Errorf("signing with key %s: %w", k.ID(), err)
	}
	if _, err := w.Write(body); err != nil {
		return nil, fmt.Errorf("signing with key %s: %w", k.ID(), err)
	}
	if err := w.Close(); err != nil {
		return nil, fmt.Errorf("signing with key %s: %w", k.ID(), err)
	}
	return buf.Bytes(), nil
}

// Verify checks sig, a binary OpenPGP signed message, against kr and parses its claims as
// containers/image does. keyID is the id of the key that made the signature, also when the
// error is ErrUnknownKey or ErrBadSignature (empty when sig is not a signed message at all).
func Verify(kr Keyring, sig []byte) (c Claims, keyID string, err error) {
	md, err := openpgp.ReadMessage(bytes.NewReader(sig), kr.entities, nil, config())
	if err != nil {
		return Claims{}, "", fmt.Errorf("%w: not an OpenPGP signed message: %w", ErrBadSignature, err)
	}
	if !md.IsSigned {
		return Claims{}, "", fmt.Errorf("%w: the message is not signed", ErrBadSignature)
	}
	keyID = fmt.Sprintf("%016X", md.SignedByKeyId)
	if md.SignedBy == nil {
		return Claims{}, keyID, fmt.Errorf("%w %s", ErrUnknownKey, keyID)
	}
	// The signature is checked once the body has been read to its end.
	body, err := io.ReadAll(io.LimitReader(md.UnverifiedBody, maxSignatureBytes+1))
	if err != nil {
		return Claims{}, keyID, fmt.Errorf("%w: reading the signed message: %w", ErrBadSignature, err)
	}
	if len(body) > maxSignatureBytes {
		return Claims{}, keyID, fmt.Errorf("%w: the signed content is over %d bytes", ErrBadSignature, maxSignatureBytes)
	}
	if md.SignatureError != nil {
		return Claims{}, keyID, fmt.Errorf("%w by key %s: %w", ErrBadSignature, keyID, md.SignatureError)
	}
	if md.Signature == nil {
		return Claims{}, keyID, fmt.Errorf("%w: the message holds no signature by key %s", ErrBadSignature, keyID)
	}
	c, err = parseClaims(body)
	if err != nil {
		return Claims{}, keyID, err
	}
	return c, keyID, nil
}
