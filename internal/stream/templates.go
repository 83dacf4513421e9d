package stream

// A payload's verification templates are kept once per stream and distinct verification
// list, in an immutable ConfigMap the payload names (v1alpha1.VerificationTemplates), instead
// of in every payload: the API server handles the payload whole on every status write, and
// job templates are most of its spec.

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/release-controller/release-controller/api/v1alpha1"
	"github.com/release-controller/release-controller/internal/jobcontract"
)

// VerificationTemplates is the ConfigMap holding verifications (a payload's list, job
// templates included) for stream, and the reference a payload keeps to it. The name carries
// the content's digest: payloads of an unchanged list share one ConfigMap.
func VerificationTemplates(stream *v1alpha1.ReleaseStream, verifications []v1alpha1.Verification) (*corev1.ConfigMap, *v1alpha1.VerificationTemplates, error) {
	data, err := json.Marshal(verifications)
	if err != nil {
		return nil, nil, fmt.Errorf("encoding the verifications: %w", err)
	}
	sum := sha256.Sum256(data)
	digest := hex.EncodeToString(sum[:])
	cm := &corev1.ConfigMap{
		ObjectMeta: metav1.ObjectMeta{
			Namespace: stream.Namespace,
			Name:      jobcontract.ObjectName(stream.Name, "verifications", digest[:16]),
			Labels:    map[string]string{v1alpha1.LabelStream: stream.Name, v1alpha1.LabelContent: v1alpha1.ContentVerificationTemplates},
			OwnerReferences: []metav1.OwnerReference{{
				APIVersion: v1alpha1.GroupVersion.String(), Kind: "ReleaseStream", Name: stream.Name, UID: stream.UID,
			}},
		},
		Immutable: ptr.To(true),
		Data:      map[string]string{v1alpha1.VerificationTemplatesKey: string(data)},
	}
	return cm, &v1alpha1.VerificationTemplates{ConfigMap: cm.Name, Digest: "sha256:" + digest}, nil
}

// WithoutBackends is verifications as a payload that keeps its templates in a ConfigMap
// lists them: without job or prowJob.
func WithoutBackends(verifications []v1alpha1.Verification) []v1alpha1.Verification {
	out := make([]v1alpha1.Verification, len(verifications))
	for i := range verifications {
		v := verifications[i].DeepCopy()
		v.Job, v.ProwJob = nil, nil
		out[i] = *v
	}
	return out
}

// templatesUnusable is a templates ConfigMap that is gone or holds other content than the
// payload recorded: no retry reads it back, so the runs that need it fail.
type templatesUnusable struct{ reason string }

func (e *templatesUnusable) Error() string { return e.reason }

func unusable(format string, args ...any) error {
	return &templatesUnusable{reason: fmt.Sprintf(format, args...)}
}

// isUnusable reports whether err says the templates are gone or changed for good.
func isUnusable(err error) bool {
	var u *templatesUnusable
	return errors.As(err, &u)
}

// DecodeTemplates reads the verifications of a templates ConfigMap by name, refusing one
// whose content is not the one ref recorded.
func DecodeTemplates(cm *corev1.ConfigMap, ref *v1alpha1.VerificationTemplates) (map[string]v1alpha1.Verification, error) {
	data := cm.Data[v1alpha1.VerificationTemplatesKey]
	sum := sha256.Sum256([]byte(data))
	if got := "sha256:" + hex.EncodeToString(sum[:]); got != ref.Digest {
		return nil, unusable("ConfigMap %s holds content of digest %s under %s, not the payload's %s",
			cm.Name, got, v1alpha1.VerificationTemplatesKey, ref.Digest)
	}
	var list []v1alpha1.Verification
	if err := json.Unmarshal([]byte(data), &list); err != nil {
		return nil, unusable("ConfigMap %s holds no verification list under %s: %v", cm.Name, v1alpha1.VerificationTemplatesKey, err)
	}
	byName := make(map[string]v1alpha1.Verification, len(list))
	for _, v := range list {
		byName[v.Name] = v
	}
	return byName, nil
}

// ensureTemplates creates cm unless the cache holds it already. One of that name that is not
// the controller's (without its labels, so not in the cache) or that holds other content is
// an error: the payload is not created.
func (s *streamSync) ensureTemplates(ctx context.Context, cm *corev1.ConfigMap, ref *v1alpha1.VerificationTemplates) error {
	var existing corev1.ConfigMap
	switch err := s.r.Get(ctx, client.ObjectKeyFromObject(cm), &existing); {
	case err == nil:
		_, err := DecodeTemplates(&existing, ref)
		return err
	case !apierrors.IsNotFound(err):
		return err
	}
	err := s.r.Create(ctx, cm)
	if apierrors.IsAlreadyExists(err) {
		return fmt.Errorf("ConfigMap %s exists but is not the controller's (it lacks the labels %s=%s and %s=%s); delete or rename it",
			cm.Name, v1alpha1.LabelStream, s.stream.Name, v1alpha1.LabelContent, v1alpha1.ContentVerificationTemplates)
	}
	return err
}

// readTemplates reads p's verifications with their job templates, by name: from the
// ConfigMap the payload names, else from the payload itself (read from the API server, as
// the cache leaves the templates out).
func (s *streamSync) readTemplates(ctx context.Context, p *v1alpha1.ReleasePayload) (map[string]v1alpha1.Verification, error) {
	ref := p.Spec.PayloadVerificationConfig.TemplatesFrom
	if ref == nil {
		var full v1alpha1.ReleasePayload
		if err := s.apiReader().Get(ctx, client.ObjectKeyFromObject(p), &full); err != nil {
			return nil, err
		}
		byName := make(map[string]v1alpha1.Verification, len(full.Spec.PayloadVerificationConfig.Verifications))
		for _, v := range full.Spec.PayloadVerificationConfig.Verifications {
			byName[v.Name] = v
		}
		return byName, nil
	}
	// The cache holds the ConfigMaps labelled with a stream: the controller's.
	var cm corev1.ConfigMap
	switch err := s.r.Get(ctx, client.ObjectKey{Namespace: p.Namespace, Name: ref.ConfigMap}, &cm); {
	case apierrors.IsNotFound(err):
		return nil, unusable("ConfigMap %s, which holds the job templates, does not exist (or lacks the label %s)", ref.ConfigMap, v1alpha1.LabelStream)
	case err != nil:
		return nil, err
	}
	return DecodeTemplates(&cm, ref)
}

// collectTemplates deletes the stream's templates ConfigMaps that no payload names any more,
// but the one of the stream's current list and those created since the newest payload: a
// payload created a moment ago may not be in the cache yet, and one it names must stay.
func (s *streamSync) collectTemplates(ctx context.Context) {
	var list corev1.ConfigMapList
	if err := s.r.List(ctx, &list, client.InNamespace(s.stream.Namespace), client.MatchingLabels{
		v1alpha1.LabelStream: s.stream.Name, v1alpha1.LabelContent: v1alpha1.ContentVerificationTemplates,
	}); err != nil {
		s.fail(s.stream, v1alpha1.ReasonReconcileFailed, "Collect", "listing the verification templates", err)
		return
	}
	used := map[string]bool{}
	var newest time.Time
	for i := range s.payloads {
		if ref := s.payloads[i].Spec.PayloadVerificationConfig.TemplatesFrom; ref != nil {
			used[ref.ConfigMap] = true
		}
		if created := s.payloads[i].CreationTimestamp.Time; created.After(newest) {
			newest = created
		}
	}
	var unused []*corev1.ConfigMap
	for i := range list.Items {
		if cm := &list.Items[i]; !used[cm.Name] && cm.CreationTimestamp.Time.Before(newest) {
			unused = append(unused, cm)
		}
	}
	if len(unused) == 0 {
		return // the usual pass: every ConfigMap is named by a payload
	}
	current, _, err := VerificationTemplates(s.stream, PerPlatform(s.stream.Spec.Verification))
	if err != nil {
		s.fail(s.stream, v1alpha1.ReasonReconcileFailed, "Collect", "naming the current verification templates", err)
		return
	}
	for _, cm := range unused {
		if cm.Name == current.Name {
			continue
		}
		if err := s.r.Delete(ctx, cm); client.IgnoreNotFound(err) != nil {
			s.fail(s.stream, v1alpha1.ReasonReconcileFailed, "Collect", "deleting the verification templates "+cm.Name, err)
		}
	}
}

// apiReader reads from the API server, past the cache (the Reconciler's client when it has no
// APIReader).
func (s *streamSync) apiReader() client.Reader {
	if s.r.APIReader != nil {
		return s.r.APIReader
	}
	return s.r.Client
}
