package devenv

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/release-controller/release-controller/internal/audit"
	"github.com/release-controller/release-controller/internal/signing"
	"github.com/release-controller/release-controller/internal/signing/cosign"
	signstore "github.com/release-controller/release-controller/internal/signing/store"
)

// Paths of the environment's signing, inside the data directory.
const (
	// SigningKeyFile is the armored private key that signs the accepted payloads, made on
	// the first start.
	SigningKeyFile = "signing-key.asc"
	// PublicKeyFile is its public key, for `payload verify --key`.
	PublicKeyFile = "signing-key.pub.asc"
	// SignaturesDir is the signature store (file://).
	SignaturesDir = "signatures"
	// CosignKeyFile is the PEM private key that attaches the Sigstore signatures and
	// attestations, made on the first start.
	CosignKeyFile = "cosign.key"
	// CosignPublicKeyFile is its public key, for `cosign verify --key`.
	CosignPublicKeyFile = "cosign.pub"
)

// SigningKeySecret holds the key in the demo namespace, where the controllers read it.
const SigningKeySecret = "release-controller-signing-key"

// SigstoreKeySecret holds the Sigstore key in the demo namespace, as cosign.key.
const SigstoreKeySecret = "release-controller-sigstore-key"

// cosignKey returns the environment's PEM Sigstore key, making it on the first start, and
// writes its public key beside it.
func cosignKey(dataDir string) (*cosign.Signer, []byte, error) {
	path := filepath.Join(dataDir, CosignKeyFile)
	pem, err := os.ReadFile(path)
	if errors.Is(err, fs.ErrNotExist) {
		if pem, err = cosign.GenerateKey(); err != nil {
			return nil, nil, fmt.Errorf("making the Sigstore key: %w", err)
		}
		err = os.WriteFile(path, pem, 0o600)
	}
	if err != nil {
		return nil, nil, fmt.Errorf("the Sigstore key %s: %w", path, err)
	}
	signer, err := cosign.LoadSigner(pem, nil)
	if err != nil {
		return nil, nil, fmt.Errorf("the Sigstore key %s: %w (delete it to make a new one)", path, err)
	}
	public, err := signer.PublicKeyPEM()
	if err != nil {
		return nil, nil, err
	}
	if err := os.WriteFile(filepath.Join(dataDir, CosignPublicKeyFile), public, 0o644); err != nil {
		return nil, nil, err
	}
	return signer, pem, nil
}

// signingKey returns the environment's armored signing key, making it on the first start,
// and writes its public key beside it.
func signingKey(dataDir string) (*signing.Key, []byte, error) {
	path := filepath.Join(dataDir, SigningKeyFile)
	armored, err := os.ReadFile(path)
	if errors.Is(err, fs.ErrNotExist) {
		if armored, err = signing.GenerateKey("release-controller dev", "dev@release-controller.invalid"); err != nil {
			return nil, nil, fmt.Errorf("making the signing key: %w", err)
		}
		err = os.WriteFile(path, armored, 0o600)
	}
	if err != nil {
		return nil, nil, fmt.Errorf("the signing key %s: %w", path, err)
	}
	key, err := signing.ParsePrivateKey(armored, nil, time.Now())
	if err != nil {
		return nil, nil, fmt.Errorf("the signing key %s: %w (delete it to make a new one)", path, err)
	}
	public, err := key.ArmoredPublicKey()
	if err != nil {
		return nil, nil, err
	}
	if err := os.WriteFile(filepath.Join(dataDir, PublicKeyFile), public, 0o644); err != nil {
		return nil, nil, err
	}
	return key, armored, nil
}

// setUpSigning opens the signature store of the data directory and puts the keys into their
// Secrets, for the audit controller: the OpenPGP key and the Sigstore key.
func setUpSigning(ctx context.Context, c client.Client, dataDir string, armored, cosignPEM []byte) (audit.Options, error) {
	if err := putKeySecret(ctx, c, SigningKeySecret, audit.SecretKeyPrivate, armored); err != nil {
		return audit.Options{}, err
	}
	if err := putKeySecret(ctx, c, SigstoreKeySecret, audit.SecretKeyCosign, cosignPEM); err != nil {
		return audit.Options{}, err
	}
	store, err := signstore.Open(ctx, "file://"+filepath.Join(dataDir, SignaturesDir))
	if err != nil {
		return audit.Options{}, err
	}
	return audit.Options{
		Store:             store,
		KeySecret:         types.NamespacedName{Namespace: DemoNamespace, Name: SigningKeySecret},
		SigstoreKeySecret: types.NamespacedName{Namespace: DemoNamespace, Name: SigstoreKeySecret},
	}, nil
}

// putKeySecret makes the Secret name of the demo namespace hold key under dataKey alone.
func putKeySecret(ctx context.Context, c client.Client, name, dataKey string, key []byte) error {
	secret := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: DemoNamespace, Name: name}}
	if err := c.Get(ctx, client.ObjectKeyFromObject(secret), secret); client.IgnoreNotFound(err) != nil {
		return err
	}
	if string(secret.Data[dataKey]) == string(key) {
		return nil
	}
	secret.Data = map[string][]byte{dataKey: key}
	err := c.Update(ctx, secret)
	if apierrors.IsNotFound(err) {
		err = c.Create(ctx, secret)
	}
	if err != nil {
		return fmt.Errorf("storing the key in Secret %s/%s: %w", DemoNamespace, name, err)
	}
	return nil
}
