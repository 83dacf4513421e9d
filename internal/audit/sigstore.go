package audit

import (
	"context"
	"fmt"
	"strings"

	"github.com/google/go-containerregistry/pkg/name"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	ctrl "sigs.k8s.io/controller-runtime"

	"github.com/release-controller/release-controller/api/v1alpha1"
	"github.com/release-controller/release-controller/internal/attestation"
	"github.com/release-controller/release-controller/internal/eventlog"
	"github.com/release-controller/release-controller/internal/signing/cosign"
	"github.com/release-controller/release-controller/internal/version"
)

// BuilderID identifies this controller and its version in the attestations: the provenance's
// builder and the verification summary's verifier.
func BuilderID() string {
	return "https://release-controller.dev/controller@" + version.Version
}

// SigstoreImages are the images of p that get a Sigstore signature, by digest: each platform's
// image first, then the payload's own (the index of a payload built for platforms), whose
// signature comes last so that a payload said to be signed has every signature.
func SigstoreImages(p *v1alpha1.ReleasePayload) ([]name.Digest, error) {
	var out []name.Digest
	for _, pi := range p.Status.PlatformImages {
		d, err := name.NewDigest(pi.Image)
		if err != nil {
			return nil, fmt.Errorf("the image of platform %s, %q, is not a pull spec by digest: %w", pi.Platform, pi.Image, err)
		}
		out = append(out, d)
	}
	d, err := name.NewDigest(p.Status.PayloadImage)
	if err != nil {
		return nil, fmt.Errorf("the payload image %q is not a pull spec by digest: %w", p.Status.PayloadImage, err)
	}
	return append(out, d), nil
}

// signSigstore attaches the Sigstore signatures and the attestations of the audited payload p
// to its images in their registry, and sets PayloadSigstoreSigned. What is attached already
// (an earlier reconcile that failed midway, or one whose status write was lost) is found, not
// attached again.
func (r *Reconciler) signSigstore(ctx context.Context, p *v1alpha1.ReleasePayload, set func(metav1.Condition)) (ctrl.Result, error) {
	signer, why := r.sigstoreKey(ctx, p)
	if signer == nil {
		set(SigstoreNoKeyCondition(why))
		r.report.Warningf(ctx, p, nil, v1alpha1.ReasonNoSigningKey, actionSigstore, "not signed with Sigstore: %s", why)
		return ctrl.Result{RequeueAfter: r.KeyRetry}, nil
	}
	images, err := SigstoreImages(p)
	if err == nil {
		var statements []attestation.Statement
		statements, err = attestation.Statements(p, nil, BuilderID())
		if err == nil {
			return r.attach(ctx, p, signer, images, statements, set)
		}
	}
	return ctrl.Result{}, eventlog.Step(v1alpha1.ReasonReconcileFailed, actionSigstore, "preparing the Sigstore signatures", err)
}

// attach signs each of images and attests each statement about the last (the payload's own).
func (r *Reconciler) attach(ctx context.Context, p *v1alpha1.ReleasePayload, signer *cosign.Signer, images []name.Digest,
	statements []attestation.Statement, set func(metav1.Condition)) (ctrl.Result, error) {
	opts := r.Registry.Options(ctx)
	identity := p.Spec.PayloadCreationConfig.Repository + ":" + p.Name
	var written []string
	for _, im := range images {
		created, err := cosign.EnsureSigned(ctx, im, identity, signer, opts...)
		if err != nil {
			return ctrl.Result{}, eventlog.Step(v1alpha1.ReasonRegistryError, actionSigstore, "attaching the signature of "+im.String(), err)
		}
		if created {
			written = append(written, "the signature of "+im.DigestStr())
		}
	}
	payload := images[len(images)-1]
	for _, st := range statements {
		created, err := cosign.EnsureAttested(ctx, payload, st.JSON, signer, opts...)
		if err != nil {
			return ctrl.Result{}, eventlog.Step(v1alpha1.ReasonRegistryError, actionSigstore, "attaching the attestation "+st.Name, err)
		}
		if created {
			written = append(written, st.Name)
		}
	}
	c := SigstoreSignedCondition(signer.KeyID(), statements)
	set(c)
	if len(written) > 0 {
		r.report.Eventf(ctx, p, nil, v1alpha1.ReasonSigned, actionSigstore, "%s %s; attached %s", c.Message, payload, strings.Join(written, ", "))
	}
	return ctrl.Result{}, nil
}

// sigstoreKey returns the Sigstore signer, or nil and why there is none. A new signer (or a
// new version of its Secret) has its public key published to the store, when there is one,
// as cosign.pub beside the OpenPGP keys; a store that refuses it is said in an Event and tried
// again on the next payload, without holding the signatures back: verifiers take the key
// from their own configuration, not from the store.
func (r *Reconciler) sigstoreKey(ctx context.Context, p *v1alpha1.ReleasePayload) (*cosign.Signer, string) {
	version := "kms:" + r.SigstoreKMSKey
	var secret corev1.Secret
	if r.SigstoreKMSKey == "" {
		if err := r.APIReader.Get(ctx, r.SigstoreKeySecret, &secret); err != nil {
			if apierrors.IsNotFound(err) {
				return nil, fmt.Sprintf("the Sigstore key Secret %s does not exist", r.SigstoreKeySecret)
			}
			return nil, fmt.Sprintf("reading the Sigstore key Secret %s: %v", r.SigstoreKeySecret, err)
		}
		version = "secret:" + secret.ResourceVersion
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.sigstoreVersion != version || r.sigstoreSigner == nil {
		signer, why := r.loadSigstoreSigner(ctx, &secret)
		if signer == nil {
			return nil, why
		}
		r.sigstoreVersion, r.sigstoreSigner, r.sigstorePublished = version, signer, false
	}
	if !r.sigstorePublished && r.Store != nil {
		if err := r.publishCosignKey(ctx, r.sigstoreSigner); err != nil {
			r.report.Warningf(ctx, p, nil, v1alpha1.ReasonSignatureStoreError, actionSigstore, "publishing the Sigstore public key: %v", err)
		} else {
			r.sigstorePublished = true
		}
	}
	return r.sigstoreSigner, ""
}

// loadSigstoreSigner reads the signer from the KMS, or from secret.
func (r *Reconciler) loadSigstoreSigner(ctx context.Context, secret *corev1.Secret) (*cosign.Signer, string) {
	if r.SigstoreKMSKey != "" {
		signer, err := cosign.LoadKMSSigner(ctx, r.SigstoreKMSKey)
		if err != nil {
			return nil, fmt.Sprintf("the Sigstore KMS key %s: %v", r.SigstoreKMSKey, err)
		}
		return signer, ""
	}
	pem := secret.Data[SecretKeyCosign]
	if len(pem) == 0 {
		return nil, fmt.Sprintf("the Sigstore key Secret %s has no %s", r.SigstoreKeySecret, SecretKeyCosign)
	}
	signer, err := cosign.LoadSigner(pem, secret.Data[SecretKeyCosignPassword])
	if err != nil {
		return nil, fmt.Sprintf("the Sigstore key in Secret %s: %v", r.SigstoreKeySecret, err)
	}
	return signer, ""
}

// publishCosignKey writes the signer's public key to the store as cosign.pub.
func (r *Reconciler) publishCosignKey(ctx context.Context, signer *cosign.Signer) error {
	pub, err := signer.PublicKeyPEM()
	if err != nil {
		return err
	}
	return r.Store.PutCosignPublicKey(ctx, pub)
}
