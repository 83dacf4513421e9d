//go:build !unit

package hostile

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"time"

	authenticationv1 "k8s.io/api/authentication/v1"
	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/release-controller/release-controller/api/v1alpha1"
	"github.com/release-controller/release-controller/internal/testenv"
	"github.com/release-controller/release-controller/internal/upgradegraph"
	"github.com/release-controller/release-controller/internal/verdict/verdicttest"
)

// canaryMark starts the content of every canary file: no response may ever contain it.
const canaryMark = "HOSTILE-CANARY-"

// seed is what the API server and the signature store hold before the api starts.
type seed struct {
	namespace, otherNamespace, logNamespace string
	// stream has tags (oldest first, the verdicts in phases); dupStream is a stream of the same
	// name in namespace and otherNamespace (a 409 for the routes without a namespace).
	stream, dupStream string
	tags              []string
	phases            []v1alpha1.PayloadPhase
	// pipeline waits in its environment approvalEnv (signed with approvalKey) for waiting.
	pipeline, approvalEnv, waiting string
	approvalKey                    []byte
	// storeDir is the signature store; digest has signature-1 in it, whose content is signature.
	storeDir, digest string
	signature        []byte
	// canaries are the planted files outside the store, absolute paths.
	canaries []string
	// writerToken is a bearer token allowed to add to the release log.
	writerToken string
}

// seedAll creates the namespaces, streams, payloads with earned verdicts, an upgrade graph, a
// pipeline waiting for approval with its key, a release log writer, and the signature store
// with canaries next to and above it.
func seedAll(ctx context.Context, e *testenv.Env, dir string) (*seed, error) {
	s := &seed{
		namespace: "hostile", otherNamespace: "hostile-b", logNamespace: "hostile-log",
		stream: "4.20.0-0.nightly", dupStream: "4.19.0-0.ci",
		phases:   []v1alpha1.PayloadPhase{v1alpha1.PhaseAccepted, v1alpha1.PhaseRejected, v1alpha1.PhaseAccepted, v1alpha1.PhaseAccepted, v1alpha1.PhasePending},
		pipeline: "web", approvalEnv: "staging",
		approvalKey: []byte("hostile approval key"),
	}
	c := e.Client
	var objects []client.Object
	for _, ns := range []string{s.namespace, s.otherNamespace, s.logNamespace} {
		objects = append(objects, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}})
	}
	objects = append(objects, stream(s.namespace, s.stream), stream(s.namespace, s.dupStream), stream(s.otherNamespace, s.dupStream))
	for _, obj := range objects {
		if err := c.Create(ctx, obj); err != nil {
			return nil, fmt.Errorf("creating %T %s: %w", obj, obj.GetName(), err)
		}
	}

	for i, phase := range s.phases {
		tag := fmt.Sprintf("%s-2026-03-%02d-000000", s.stream, i+1)
		s.tags = append(s.tags, tag)
		if err := createPayload(ctx, c, s.namespace, s.stream, tag, phase); err != nil {
			return nil, err
		}
	}
	if err := createPayload(ctx, c, s.otherNamespace, s.dupStream, s.dupStream+"-2026-03-01-000000", v1alpha1.PhaseAccepted); err != nil {
		return nil, err
	}
	// The upgrades between the accepted payloads, as the stream controller records them.
	var graph upgradegraph.Graph
	for _, pair := range [][2]int{{0, 2}, {2, 3}} {
		graph.Edges = append(graph.Edges, upgradegraph.Edge{From: s.tags[pair[0]], To: s.tags[pair[1]], Verification: "e2e",
			Run: s.tags[pair[1]] + "-e2e-1", State: v1alpha1.JobSuccess})
	}
	data, err := json.Marshal(graph)
	if err != nil {
		return nil, err
	}
	if err := c.Create(ctx, &corev1.ConfigMap{
		ObjectMeta: metav1.ObjectMeta{Namespace: s.namespace, Name: upgradegraph.ConfigMapName(s.stream), Labels: map[string]string{v1alpha1.LabelStream: s.stream}},
		Data:       map[string]string{upgradegraph.Key: string(data)},
	}); err != nil {
		return nil, err
	}

	s.waiting = s.tags[3]
	if err := createWaitingPipeline(ctx, c, s.namespace, s.pipeline, s.approvalEnv, "approvals", s.approvalKey, s.waiting); err != nil {
		return nil, err
	}
	if s.writerToken, err = logWriterToken(ctx, e, s.logNamespace); err != nil {
		return nil, err
	}
	if err := s.plantStore(dir); err != nil {
		return nil, err
	}
	return s, nil
}

func stream(namespace, name string) *v1alpha1.ReleaseStream {
	return &v1alpha1.ReleaseStream{
		ObjectMeta: metav1.ObjectMeta{Namespace: namespace, Name: name},
		Spec: v1alpha1.ReleaseStreamSpec{
			TagPrefix:         name,
			PayloadRepository: "registry.example.com/ocp/release",
			Components:        []v1alpha1.ComponentSource{{Name: "api", Image: "registry.example.com/ocp/api:latest"}},
		},
	}
}

// createPayload creates a payload whose status holds the verdict phase as the payload
// controller earns it. Its image is on a closed loopback port, so that a changelog of it
// fails at once instead of waiting for a registry on the internet.
func createPayload(ctx context.Context, c client.Client, namespace, streamName, tag string, phase v1alpha1.PayloadPhase) error {
	p := verdicttest.Payload(namespace, streamName, tag, false)
	p.UID = ""
	p.Labels = map[string]string{v1alpha1.LabelStream: streamName}
	p.Spec.Components = []v1alpha1.PinnedComponent{{Name: "api", Image: "127.0.0.1:9/ocp/api@sha256:" + strings.Repeat("0", 64)}}
	p.Spec.PayloadCreationConfig.Repository = "127.0.0.1:9/ocp/release"
	p.Spec.PayloadVerificationConfig.Verifications[0].Job = &v1alpha1.JobBackend{Template: batchv1.JobTemplateSpec{Spec: batchv1.JobSpec{
		Template: corev1.PodTemplateSpec{Spec: corev1.PodSpec{RestartPolicy: corev1.RestartPolicyNever,
			Containers: []corev1.Container{{Name: "e2e", Image: "registry.example.com/tests:latest"}}}}}}}
	verdicttest.Earn(p, phase)
	_, digest, _ := strings.Cut(p.Status.PayloadImage, "@")
	p.Status.PayloadImage = "127.0.0.1:9/ocp/release@" + digest
	status := *p.Status.DeepCopy() // Create drops the status
	if err := c.Create(ctx, p); err != nil {
		return fmt.Errorf("creating payload %s: %w", tag, err)
	}
	p.Status = status
	if err := c.Status().Update(ctx, p); err != nil {
		return fmt.Errorf("writing the status of payload %s: %w", tag, err)
	}
	return nil
}

// createWaitingPipeline creates pipeline name in namespace, whose environments dev (no
// approval), envName and prod (both signed with key, in the Secret secretName) promote the
// Deployment web, and writes the status the pipeline controller writes when envName and
// prod wait for the approval of revision. No controller runs here: the api's approval route
// only reads that status.
func createWaitingPipeline(ctx context.Context, c client.Client, namespace, name, envName, secretName string, key []byte, revision string) error {
	secret := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: namespace, Name: secretName}, Data: map[string][]byte{v1alpha1.SecretKeyHMAC: key}}
	if err := c.Create(ctx, secret); err != nil && !strings.Contains(err.Error(), "already exists") {
		return fmt.Errorf("creating Secret %s/%s: %w", namespace, secretName, err)
	}
	// The api reads the key as the namespace's default ServiceAccount (its
	// --default-service-account): RBAC lets that account get this one Secret.
	grant := "approval-key-" + secretName
	for _, obj := range []client.Object{
		&rbacv1.Role{ObjectMeta: metav1.ObjectMeta{Namespace: namespace, Name: grant},
			Rules: []rbacv1.PolicyRule{{APIGroups: []string{""}, Resources: []string{"secrets"}, ResourceNames: []string{secretName}, Verbs: []string{"get"}}}},
		&rbacv1.RoleBinding{ObjectMeta: metav1.ObjectMeta{Namespace: namespace, Name: grant},
			RoleRef:  rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "Role", Name: grant},
			Subjects: []rbacv1.Subject{{Kind: rbacv1.ServiceAccountKind, Namespace: namespace, Name: "default"}}},
	} {
		if err := c.Create(ctx, obj); err != nil && !strings.Contains(err.Error(), "already exists") {
			return fmt.Errorf("granting the default ServiceAccount of %s the approval key: %w", namespace, err)
		}
	}
	approval := &v1alpha1.Approval{SecretRef: &v1alpha1.SecretKeyReference{Name: secretName}}
	p := &v1alpha1.Pipeline{
		ObjectMeta: metav1.ObjectMeta{Namespace: namespace, Name: name},
		Spec: v1alpha1.PipelineSpec{
			AppRef: v1alpha1.AppReference{APIVersion: "apps/v1", Kind: "Deployment", Name: "web", Container: "web"},
			Source: &v1alpha1.PipelineSource{ReleaseStream: "nightly"},
			Environments: []v1alpha1.Environment{
				{Name: "dev", Targets: []v1alpha1.Target{{Namespace: namespace + "-dev"}}},
				{Name: envName, Targets: []v1alpha1.Target{{Namespace: namespace + "-" + envName}}, Approval: approval},
				{Name: "prod", Targets: []v1alpha1.Target{{Namespace: namespace + "-prod"}}, Approval: approval},
			},
		},
	}
	if err := c.Create(ctx, p); err != nil {
		return fmt.Errorf("creating pipeline %s/%s: %w", namespace, name, err)
	}
	since := metav1.NewTime(time.Now().UTC().Truncate(time.Second))
	p.Status = v1alpha1.PipelineStatus{ObservedGeneration: p.Generation, Environments: []v1alpha1.EnvironmentStatus{
		{Name: "dev", Revision: revision, Ready: true},
		{Name: envName, WaitingApproval: &v1alpha1.WaitingApproval{Revision: revision, Since: since}},
		{Name: "prod", WaitingApproval: &v1alpha1.WaitingApproval{Revision: revision, Since: since}},
	}}
	if err := c.Status().Update(ctx, p); err != nil {
		return fmt.Errorf("writing the status of pipeline %s/%s: %w", namespace, name, err)
	}
	return nil
}

// logWriterToken creates a ServiceAccount that RBAC allows to create releaselogs/entries in the
// log's namespace (what AddRelease asks) and returns a token of it.
func logWriterToken(ctx context.Context, e *testenv.Env, namespace string) (string, error) {
	const name = "log-writer"
	objects := []client.Object{
		&corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Namespace: namespace, Name: name}},
		&rbacv1.Role{ObjectMeta: metav1.ObjectMeta{Namespace: namespace, Name: name},
			Rules: []rbacv1.PolicyRule{{APIGroups: []string{v1alpha1.GroupVersion.Group}, Resources: []string{"releaselogs/entries"}, Verbs: []string{"create"}}}},
		&rbacv1.RoleBinding{ObjectMeta: metav1.ObjectMeta{Namespace: namespace, Name: name},
			RoleRef:  rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "Role", Name: name},
			Subjects: []rbacv1.Subject{{Kind: rbacv1.ServiceAccountKind, Namespace: namespace, Name: name}}},
	}
	for _, obj := range objects {
		if err := e.Client.Create(ctx, obj); err != nil {
			return "", fmt.Errorf("creating %T %s: %w", obj, obj.GetName(), err)
		}
	}
	cs, err := kubernetes.NewForConfig(e.Config)
	if err != nil {
		return "", err
	}
	tr, err := cs.CoreV1().ServiceAccounts(namespace).CreateToken(ctx, name, &authenticationv1.TokenRequest{
		Spec: authenticationv1.TokenRequestSpec{ExpirationSeconds: ptr.To[int64](3600)},
	}, metav1.CreateOptions{})
	if err != nil {
		return "", fmt.Errorf("requesting a token of %s/%s: %w", namespace, name, err)
	}
	return tr.Status.Token, nil
}

// plantStore writes the signature store, dir/store, with one signature and the public keys,
// and canaries outside it: a file next to it, one above it laid out as a signature (a request
// that climbs out of the store by one folder would find it), and one in a sibling folder
// whose name starts like the store's.
func (s *seed) plantStore(dir string) error {
	s.storeDir = filepath.Join(dir, "store")
	s.digest = "sha256:" + strings.Repeat("ab", 32)
	folder := "sha256=" + strings.TrimPrefix(s.digest, "sha256:")
	s.signature = []byte("a real signature of " + s.digest)
	files := map[string][]byte{
		filepath.Join(s.storeDir, folder, "signature-1"): s.signature,
		filepath.Join(s.storeDir, "pubkey.asc"):          []byte("-----BEGIN PGP PUBLIC KEY BLOCK-----\n\nhostile test key\n-----END PGP PUBLIC KEY BLOCK-----\n"),
	}
	for _, canary := range []string{
		filepath.Join(dir, "canary"),
		filepath.Join(dir, folder, "signature-1"),
		filepath.Join(dir, "store-sibling", folder, "signature-1"),
	} {
		mark := make([]byte, 8)
		if _, err := rand.Read(mark); err != nil {
			return err
		}
		files[canary] = []byte(canaryMark + hex.EncodeToString(mark) + "\n")
		s.canaries = append(s.canaries, canary)
	}
	for path, data := range files {
		if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
			return err
		}
		if err := os.WriteFile(path, data, 0o644); err != nil {
			return err
		}
	}
	return nil
}
