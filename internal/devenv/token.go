package devenv

import (
	"context"
	"fmt"
	"os"

	authenticationv1 "k8s.io/api/authentication/v1"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/utils/ptr"

	"github.com/release-controller/release-controller/api/v1alpha1"
)

// LogWriterAccount is the service account whose token `dev` prints: RBAC lets it add entries
// to the release log, nothing else.
const LogWriterAccount = "release-log-writer"

// TokenFile holds the writer's token inside the data directory.
const TokenFile = "release-log-token"

// logWriterToken makes sure the writer account and its Role exist in namespace and returns a
// fresh token for it (valid for a day; every start of the environment makes a new one, since
// the API server's signing key is new at every start).
func logWriterToken(ctx context.Context, cfg *rest.Config, namespace string) (string, error) {
	cs, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		return "", err
	}
	// AddRelease asks for create on releaselogs/entries, a permission of its own: the
	// account cannot write ReleaseLog objects directly.
	role := &rbacv1.Role{
		ObjectMeta: metav1.ObjectMeta{Namespace: namespace, Name: LogWriterAccount},
		Rules: []rbacv1.PolicyRule{{
			APIGroups: []string{v1alpha1.GroupVersion.Group},
			Resources: []string{"releaselogs/entries"},
			Verbs:     []string{"create"},
		}},
	}
	binding := &rbacv1.RoleBinding{
		ObjectMeta: metav1.ObjectMeta{Namespace: namespace, Name: LogWriterAccount},
		RoleRef:    rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "Role", Name: LogWriterAccount},
		Subjects:   []rbacv1.Subject{{Kind: rbacv1.ServiceAccountKind, Namespace: namespace, Name: LogWriterAccount}},
	}
	account := &corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Namespace: namespace, Name: LogWriterAccount}}
	if _, err := cs.CoreV1().ServiceAccounts(namespace).Create(ctx, account, metav1.CreateOptions{}); err != nil && !apierrors.IsAlreadyExists(err) {
		return "", fmt.Errorf("creating the service account %s: %w", LogWriterAccount, err)
	}
	_, err = cs.RbacV1().Roles(namespace).Create(ctx, role, metav1.CreateOptions{})
	if apierrors.IsAlreadyExists(err) {
		// A data directory of an earlier version holds the Role with other rules.
		_, err = cs.RbacV1().Roles(namespace).Update(ctx, role, metav1.UpdateOptions{})
	}
	if err != nil {
		return "", fmt.Errorf("creating the role %s: %w", LogWriterAccount, err)
	}
	if _, err := cs.RbacV1().RoleBindings(namespace).Create(ctx, binding, metav1.CreateOptions{}); err != nil && !apierrors.IsAlreadyExists(err) {
		return "", fmt.Errorf("creating the role binding %s: %w", LogWriterAccount, err)
	}
	req := &authenticationv1.TokenRequest{Spec: authenticationv1.TokenRequestSpec{ExpirationSeconds: ptr.To[int64](24 * 3600)}}
	tr, err := cs.CoreV1().ServiceAccounts(namespace).CreateToken(ctx, LogWriterAccount, req, metav1.CreateOptions{})
	if err != nil {
		return "", fmt.Errorf("requesting a token for %s: %w", LogWriterAccount, err)
	}
	return tr.Status.Token, nil
}

// writeToken stores the token for the CLI (`log add --token-file`).
func writeToken(path, token string) error {
	return os.WriteFile(path, []byte(token+"\n"), 0o600)
}
