//go:build !unit

package tenancy

import (
	"context"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"

	. "github.com/onsi/gomega"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/release-controller/release-controller/api/v1alpha1"
	"github.com/release-controller/release-controller/internal/pipeline/signature"
)

// TestAttackNotificationSignedWithApprovalKey: tenant A's pipeline names its approval key as the
// key of a notification, at the pipeline's level and at an environment's. Before issue 33 the
// controller signed notifications with it, so anyone who could create a Pipeline could have
// the controller sign an approval. Now admission refuses the pipeline, naming both fields.
func TestAttackNotificationSignedWithApprovalKey(t *testing.T) {
	ctx := context.Background()
	a := rc.a
	notify := &v1alpha1.Promotion{Strategy: v1alpha1.StrategyNotification, Notification: &v1alpha1.NotificationPromotion{
		URL: "https://hooks.example.com/promote", SecretRef: &v1alpha1.SecretKeyReference{Name: "prod-approvals"}}}
	for _, tc := range []struct {
		name string
		edit func(*v1alpha1.Pipeline)
		want string
	}{
		{"notify-pipeline", func(p *v1alpha1.Pipeline) { p.Spec.Promotion = notify },
			"spec.promotion.notification.secretRef must not name the Secret of an environment's approval.secretRef"},
		{"notify-environment", func(p *v1alpha1.Pipeline) { p.Spec.Environments[0].Promotion = notify },
			"an environment's promotion.notification.secretRef must not name the Secret of an environment's approval.secretRef"},
	} {
		p := &v1alpha1.Pipeline{
			ObjectMeta: metav1.ObjectMeta{Namespace: a.namespace, Name: tc.name},
			Spec: v1alpha1.PipelineSpec{
				AppRef:             v1alpha1.AppReference{APIVersion: "apps/v1", Kind: "Deployment", Name: "web", Container: "web"},
				ServiceAccountName: promoterAccount,
				Environments: []v1alpha1.Environment{
					{Name: "dev", Targets: []v1alpha1.Target{{Namespace: a.namespace}}},
					{Name: "prod", Targets: []v1alpha1.Target{{Namespace: a.prod}},
						Approval: &v1alpha1.Approval{SecretRef: &v1alpha1.SecretKeyReference{Name: "prod-approvals"}}},
				},
			},
		}
		tc.edit(p)
		err := a.client.Create(ctx, p)
		if !apierrors.IsInvalid(err) || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: created with %v, want it refused as invalid saying %q", tc.name, err, tc.want)
		}
		if err := env.Client.Get(ctx, types.NamespacedName{Namespace: a.namespace, Name: tc.name}, &v1alpha1.Pipeline{}); !apierrors.IsNotFound(err) {
			t.Errorf("%s exists: %v", tc.name, err)
		}
	}
}

// TestAttackApprovalReplay: tenant A approves a promotion with a signed request, then sends the
// same request again, to the same api and after the api restarted. Before issue 33 used
// signatures were remembered by one process only, so the replay after a restart (or to another
// replica) was accepted. Now each is refused with 409 and the message saying it was used, and
// the environment was promoted once.
func TestAttackApprovalReplay(t *testing.T) {
	ctx := context.Background()
	g := NewWithT(t)
	a := rc.a
	since := time.Now()
	key := []byte("tenant a's replay key")
	asTenant(t, a, &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: a.namespace, Name: "replay-approvals"},
		Data: map[string][]byte{v1alpha1.SecretKeyHMAC: key}})
	for _, ns := range []string{a.namespace, a.prod} {
		asTenant(t, a, deployment(ns, "replay", "r1"))
		rollOut(t, ns, "replay")
	}
	// dev runs r1 already; prod runs r1 too, so the pipeline asks for r2 once dev has it.
	asTenant(t, a, &v1alpha1.Pipeline{
		ObjectMeta: metav1.ObjectMeta{Namespace: a.namespace, Name: "replay"},
		Spec: v1alpha1.PipelineSpec{
			AppRef:             v1alpha1.AppReference{APIVersion: "apps/v1", Kind: "Deployment", Name: "replay", Container: "web"},
			ServiceAccountName: promoterAccount,
			Environments: []v1alpha1.Environment{
				{Name: "dev", Targets: []v1alpha1.Target{{Namespace: a.namespace}}},
				{Name: "prod", Targets: []v1alpha1.Target{{Namespace: a.prod}},
					Approval: &v1alpha1.Approval{SecretRef: &v1alpha1.SecretKeyReference{Name: "replay-approvals"}}},
			},
		},
	})
	setImage(t, a, a.namespace, "replay", "r2")
	rollOut(t, a.namespace, "replay")
	waitWaiting(t, a.namespace, "replay", "prod", "r2")

	path := "/pipelines/" + a.namespace + "/replay/prod/r2/approve"
	ts := time.Now().UTC().Format(time.RFC3339)
	approve := func() (int, string) {
		t.Helper()
		req, err := http.NewRequestWithContext(ctx, http.MethodPost, rc.server+path, nil)
		g.Expect(err).NotTo(HaveOccurred())
		req.Header.Set(signature.HeaderTimestamp, ts)
		req.Header.Set(signature.HeaderSignature, signature.Header(key, http.MethodPost, path, ts, nil))
		resp, err := http.DefaultClient.Do(req)
		g.Expect(err).NotTo(HaveOccurred())
		defer resp.Body.Close()
		body, err := io.ReadAll(resp.Body)
		g.Expect(err).NotTo(HaveOccurred())
		return resp.StatusCode, string(body)
	}
	code, body := approve()
	g.Expect(code).To(Equal(http.StatusOK), "the first approval: %s", body)
	waitImage(t, a.prod, "replay", "r2")

	code, body = approve()
	g.Expect(code).To(Equal(http.StatusConflict), "a replay to the same api: %s", body)
	g.Expect(body).To(ContainSubstring("this signature was used already"))
	g.Expect(rc.restartAPI(ctx)).To(Succeed())
	code, body = approve()
	g.Expect(code).To(Equal(http.StatusConflict), "a replay after the api restarted: %s", body)
	g.Expect(body).To(ContainSubstring("this signature was used already"))

	waitPromotion(t, a.namespace, "replay", "prod", "r2", "hmac:replay-approvals")
	checkNothingOutside(t, since, a)
}

// setImage sets, as tenant te, the image tag of the Deployment's web container.
func setImage(t *testing.T, te *tenant, namespace, name, tag string) {
	t.Helper()
	var d appsv1.Deployment
	g := NewWithT(t)
	g.Expect(te.client.Get(context.Background(), types.NamespacedName{Namespace: namespace, Name: name}, &d)).To(Succeed())
	d.Spec.Template.Spec.Containers[0].Image = appImage + ":" + tag
	g.Expect(te.client.Update(context.Background(), &d)).To(Succeed())
}
