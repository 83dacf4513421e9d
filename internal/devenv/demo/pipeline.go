package demo

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	authenticationv1 "k8s.io/api/authentication/v1"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/release-controller/release-controller/api/v1alpha1"
)

// The demo pipeline: the stream's accepted payloads go to dev, then staging, then (approved)
// prod. Its app is the Deployment AppName in each environment's namespace, whose container
// AppContainer runs the payload image (<payload repository>:<tag>).
const (
	PipelineName = StreamName
	AppName      = "nightly"
	AppContainer = "payload"
	// RemoteClusterSecret holds (key value) the kubeconfig of the "second cluster" staging
	// and prod run on: the same API server, reached as a remote one, as the service account
	// RemoteClusterAccount.
	RemoteClusterSecret  = "remote-cluster"
	RemoteClusterAccount = "remote-deployer"
	// ApprovalSecret holds (key hmac-key) the shared key that signs prod's approvals.
	ApprovalSecret = "prod-approvals"
	// ReleaseManagerAccount is the ServiceAccount whose token is prod's second approver: RBAC
	// lets it approve and reject the demo pipeline's revisions, nothing else.
	ReleaseManagerAccount = "release-manager"
	// AppLabel marks the demo's apps: the dev rollout step writes their status.
	AppLabel = "release-controller.dev/demo-app"
)

// EnvironmentNamespace is the namespace of the demo app in an environment (dev, staging, prod).
func (o Options) EnvironmentNamespace(env string) string {
	return o.namespace() + "-" + env
}

// StagingSoak is how long a revision soaks in the demo's staging before prod may take it:
// long enough to be seen on the pipeline's page, short enough for the tour.
const StagingSoak = time.Minute

// ProdApprovers is how many distinct approvers prod's policy needs: the signed key (one
// machine approver) and the release manager's token.
const ProdApprovers = 2

// Pipeline is the demo's Pipeline: dev on the local cluster, verified by the smoke check after
// each rollout and rolled back when it fails; staging and prod on the remote one, staging
// soaking StagingSoak, prod waiting for ProdApprovers approvals: one signed with the key of
// ApprovalSecret, one sent with ReleaseManagerAccount's token.
func Pipeline(opts Options) *v1alpha1.Pipeline {
	return &v1alpha1.Pipeline{
		ObjectMeta: metav1.ObjectMeta{Namespace: opts.namespace(), Name: PipelineName},
		Spec: v1alpha1.PipelineSpec{
			AppRef: appRef,
			Source: &v1alpha1.PipelineSource{ReleaseStream: StreamName},
			Environments: []v1alpha1.Environment{
				{
					Name:    "dev",
					Targets: []v1alpha1.Target{{Namespace: opts.EnvironmentNamespace("dev")}},
					// Staging takes only a revision that passed; one that fails goes back.
					Verification: &v1alpha1.EnvironmentVerification{
						OnFailure:     v1alpha1.OnFailureRollback,
						Verifications: []v1alpha1.Verification{{Name: CheckSmoke, Type: v1alpha1.Blocking, Job: checkJob(CheckSmoke, opts.checkImage())}},
					},
				},
				{
					Name:    "staging",
					Targets: []v1alpha1.Target{{Namespace: opts.EnvironmentNamespace("staging"), ClusterRef: RemoteClusterSecret}},
					// Prod takes a revision once it ran a while in staging (StagingSoak).
					Promotion: &v1alpha1.Promotion{MinSoak: &metav1.Duration{Duration: StagingSoak}},
				},
				{
					Name:     "prod",
					Targets:  []v1alpha1.Target{{Namespace: opts.EnvironmentNamespace("prod"), ClusterRef: RemoteClusterSecret}},
					Approval: &v1alpha1.Approval{SecretRef: &v1alpha1.SecretKeyReference{Name: ApprovalSecret}, MinApprovers: ProdApprovers},
				},
			},
		},
	}
}

// PlaceholderRevision is the revision of the demo apps until the pipeline promotes a payload
// into them: the payload repository's tag the stream moves to its newest accepted payload
// (PublishTags), absent until it accepted one.
const PlaceholderRevision = "latest"

// App is the demo app in namespace: one replica running the payload repository's
// PlaceholderRevision until the pipeline promotes a payload into it.
func App(opts Options, namespace string) *appsv1.Deployment {
	labels := map[string]string{"app": AppName, AppLabel: "true"}
	return &appsv1.Deployment{
		ObjectMeta: metav1.ObjectMeta{Namespace: namespace, Name: AppName, Labels: labels},
		Spec: appsv1.DeploymentSpec{
			Replicas: ptr.To[int32](1),
			Selector: &metav1.LabelSelector{MatchLabels: map[string]string{"app": AppName}},
			Template: corev1.PodTemplateSpec{
				ObjectMeta: metav1.ObjectMeta{Labels: map[string]string{"app": AppName}},
				Spec: corev1.PodSpec{Containers: []corev1.Container{{
					Name:  AppContainer,
					Image: opts.PayloadRepository() + ":" + PlaceholderRevision,
				}}},
			},
		},
	}
}

// SetupPipeline makes the demo pipeline exist, creating only what is missing (as Setup): the
// environments' namespaces and apps, the approval key, the remote cluster's service account
// with its RBAC, the RBAC of the account the pipeline acts as locally, and the Pipeline. The remote cluster's kubeconfig Secret is rewritten when it
// changed, since the API server's certificates and token signing key are new at every start;
// cfg is that API server's (its host and CA). It returns the approval key.
func SetupPipeline(ctx context.Context, c client.Client, opts Options, cfg *rest.Config) ([]byte, error) {
	ns := opts.namespace()
	if err := createIfMissing(ctx, c, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}); err != nil {
		return nil, fmt.Errorf("namespace %s: %w", ns, err)
	}
	for _, env := range []string{"dev", "staging", "prod"} {
		envNS := opts.EnvironmentNamespace(env)
		if err := createIfMissing(ctx, c, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: envNS}}); err != nil {
			return nil, fmt.Errorf("namespace %s: %w", envNS, err)
		}
		if err := createIfMissing(ctx, c, App(opts, envNS)); err != nil {
			return nil, fmt.Errorf("app %s/%s: %w", envNS, AppName, err)
		}
	}

	key := make([]byte, 32)
	if _, err := rand.Read(key); err != nil {
		return nil, err
	}
	approvals := &corev1.Secret{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: ApprovalSecret},
		Data:       map[string][]byte{v1alpha1.SecretKeyHMAC: []byte(hex.EncodeToString(key))},
	}
	if err := createIfMissing(ctx, c, approvals); err != nil {
		return nil, fmt.Errorf("approval Secret: %w", err)
	}
	// The key of a previous start (or a user's) wins.
	if err := c.Get(ctx, client.ObjectKeyFromObject(approvals), approvals); err != nil {
		return nil, fmt.Errorf("approval Secret: %w", err)
	}

	kubeconfig, err := remoteKubeconfig(ctx, c, opts, cfg)
	if err != nil {
		return nil, fmt.Errorf("remote cluster: %w", err)
	}
	remote := &corev1.Secret{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: RemoteClusterSecret},
		Data:       map[string][]byte{v1alpha1.SecretKeyKubeconfig: kubeconfig},
	}
	if err := createIfMissing(ctx, c, remote); err != nil {
		return nil, fmt.Errorf("remote cluster Secret: %w", err)
	}
	var existing corev1.Secret
	if err := c.Get(ctx, client.ObjectKeyFromObject(remote), &existing); err != nil {
		return nil, fmt.Errorf("remote cluster Secret: %w", err)
	}
	if !bytes.Equal(existing.Data[v1alpha1.SecretKeyKubeconfig], kubeconfig) {
		existing.Data = remote.Data
		if err := c.Update(ctx, &existing); err != nil {
			return nil, fmt.Errorf("remote cluster Secret: %w", err)
		}
	}

	if err := grantPipelineAccount(ctx, c, opts); err != nil {
		return nil, err
	}
	p := Pipeline(opts)
	if err := createIfMissing(ctx, c, p); err != nil {
		return nil, fmt.Errorf("pipeline %s/%s: %w", p.Namespace, p.Name, err)
	}
	return approvals.Data[v1alpha1.SecretKeyHMAC], nil
}

// PipelineAccount is the ServiceAccount of the demo's namespace the controller acts as for the
// demo pipeline: it names none, so the controller's --default-service-account, "default".
const PipelineAccount = "default"

// PipelineRole names the Roles (and their RoleBindings) that let PipelineAccount do what the
// demo pipeline does on the local cluster.
const PipelineRole = "pipeline"

// grantPipelineAccount gives the demo pipeline's account what the pipeline does as it: apply
// the dev app (the only local target), read the remote cluster's kubeconfig Secret and (for
// the API server's approval route) prod's approval key, and create and delete dev's smoke
// check Jobs. The controller and the API server act as the account, so without these the
// promotion to dev, dev's verification and prod's approval are forbidden.
func grantPipelineAccount(ctx context.Context, c client.Client, opts Options) error {
	ns := opts.namespace()
	subjects := []rbacv1.Subject{{Kind: rbacv1.ServiceAccountKind, Namespace: ns, Name: PipelineAccount}}
	grants := map[string][]rbacv1.PolicyRule{
		opts.EnvironmentNamespace("dev"): {{APIGroups: []string{"apps"}, Resources: []string{"deployments"}, ResourceNames: []string{AppName}, Verbs: []string{"get", "patch"}}},
		ns: {
			{APIGroups: []string{""}, Resources: []string{"secrets"}, ResourceNames: []string{RemoteClusterSecret, ApprovalSecret}, Verbs: []string{"get"}},
			{APIGroups: []string{"batch"}, Resources: []string{"jobs"}, Verbs: []string{"create", "delete"}},
		},
	}
	for namespace, rules := range grants {
		if err := bindRole(ctx, c, namespace, PipelineRole, rules, subjects); err != nil {
			return err
		}
	}
	return nil
}

// bindRole creates the Role name of namespace with rules, bound to subjects, unless they exist.
func bindRole(ctx context.Context, c client.Client, namespace, name string, rules []rbacv1.PolicyRule, subjects []rbacv1.Subject) error {
	for _, obj := range []client.Object{
		&rbacv1.Role{ObjectMeta: metav1.ObjectMeta{Namespace: namespace, Name: name}, Rules: rules},
		&rbacv1.RoleBinding{ObjectMeta: metav1.ObjectMeta{Namespace: namespace, Name: name},
			RoleRef: rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "Role", Name: name}, Subjects: subjects},
	} {
		if err := createIfMissing(ctx, c, obj); err != nil {
			return fmt.Errorf("%T %s/%s: %w", obj, namespace, obj.GetName(), err)
		}
	}
	return nil
}

// ReleaseManagerToken makes sure ReleaseManagerAccount exists, with RBAC to approve and reject
// the demo pipeline's revisions (update on pipelines/approval, as the approval route asks),
// and returns a fresh token of it, valid for a day: tokens die with the API server's signing
// key at the next start anyway.
func ReleaseManagerToken(ctx context.Context, c client.Client, opts Options) (string, error) {
	ns := opts.namespace()
	account := &corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: ReleaseManagerAccount}}
	if err := createIfMissing(ctx, c, account); err != nil {
		return "", fmt.Errorf("ServiceAccount %s/%s: %w", ns, ReleaseManagerAccount, err)
	}
	rules := []rbacv1.PolicyRule{{APIGroups: []string{v1alpha1.GroupVersion.Group}, Resources: []string{"pipelines/approval"}, ResourceNames: []string{PipelineName}, Verbs: []string{"update"}}}
	subjects := []rbacv1.Subject{{Kind: rbacv1.ServiceAccountKind, Namespace: ns, Name: ReleaseManagerAccount}}
	if err := bindRole(ctx, c, ns, ReleaseManagerAccount, rules, subjects); err != nil {
		return "", err
	}
	req := &authenticationv1.TokenRequest{Spec: authenticationv1.TokenRequestSpec{ExpirationSeconds: ptr.To[int64](24 * 3600)}}
	if err := c.SubResource("token").Create(ctx, account, req); err != nil {
		return "", fmt.Errorf("requesting a token for %s: %w", ReleaseManagerAccount, err)
	}
	return req.Status.Token, nil
}

// remoteKubeconfig makes sure the remote cluster's service account and RBAC exist and returns
// a kubeconfig with a fresh token of it: it may watch Deployments everywhere (the pipeline
// controller shares one informer per kind and cluster) and apply them only in the staging and
// prod namespaces.
func remoteKubeconfig(ctx context.Context, c client.Client, opts Options, cfg *rest.Config) ([]byte, error) {
	ns := opts.namespace()
	name := ns + "-" + RemoteClusterAccount
	account := &corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: RemoteClusterAccount}}
	subjects := []rbacv1.Subject{{Kind: rbacv1.ServiceAccountKind, Namespace: ns, Name: RemoteClusterAccount}}
	objs := []client.Object{
		account,
		&rbacv1.ClusterRole{
			ObjectMeta: metav1.ObjectMeta{Name: name + "-read"},
			Rules:      []rbacv1.PolicyRule{{APIGroups: []string{"apps"}, Resources: []string{"deployments"}, Verbs: []string{"get", "list", "watch"}}},
		},
		&rbacv1.ClusterRoleBinding{
			ObjectMeta: metav1.ObjectMeta{Name: name + "-read"},
			RoleRef:    rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: name + "-read"},
			Subjects:   subjects,
		},
	}
	for _, obj := range objs {
		if err := createIfMissing(ctx, c, obj); err != nil {
			return nil, fmt.Errorf("%T %s: %w", obj, obj.GetName(), err)
		}
	}
	apply := []rbacv1.PolicyRule{{APIGroups: []string{"apps"}, Resources: []string{"deployments"}, Verbs: []string{"get", "patch", "update"}}}
	for _, env := range []string{"staging", "prod"} {
		if err := bindRole(ctx, c, opts.EnvironmentNamespace(env), RemoteClusterAccount, apply, subjects); err != nil {
			return nil, err
		}
	}
	// A week: tokens die with the API server's signing key at the next start anyway.
	req := &authenticationv1.TokenRequest{Spec: authenticationv1.TokenRequestSpec{ExpirationSeconds: ptr.To[int64](7 * 24 * 3600)}}
	if err := c.SubResource("token").Create(ctx, account, req); err != nil {
		return nil, fmt.Errorf("requesting a token for %s: %w", RemoteClusterAccount, err)
	}
	kc := clientcmdapi.NewConfig()
	kc.Clusters["remote"] = &clientcmdapi.Cluster{Server: cfg.Host, CertificateAuthorityData: cfg.CAData}
	kc.AuthInfos[RemoteClusterAccount] = &clientcmdapi.AuthInfo{Token: req.Status.Token}
	kc.Contexts["remote"] = &clientcmdapi.Context{Cluster: "remote", AuthInfo: RemoteClusterAccount}
	kc.CurrentContext = "remote"
	return clientcmd.Write(*kc)
}
