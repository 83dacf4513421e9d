//go:build !unit

package bench

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"path/filepath"
	"testing"
	"time"

	authenticationv1 "k8s.io/api/authentication/v1"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/release-controller/release-controller/api/v1alpha1"
	"github.com/release-controller/release-controller/internal/server/approval"
	"github.com/release-controller/release-controller/internal/testenv"
)

// benchApprovals approve prod through the approval route of the built binary's `api`: once
// signed with key (the machine approver), once with the approver account's token.
type benchApprovals struct {
	key   []byte
	token string
}

// stopTheLine is the ReleaseFreeze holding the frozen pipelines.
const stopTheLine = "incident"

// setUpPolicies makes what BenchmarkShippedPipelinesWithPolicies's pipelines name: prod's
// approval key, an account RBAC lets approve (and a token of it), the stop-the-line holding
// the pipelines labelled frozenLabel, and a weekly ClusterReleaseFreeze of every pipeline's
// prod whose window opens in two to three days, in Europe/Berlin.
func setUpPolicies(b *testing.B, mgmt *testenv.Env) *benchApprovals {
	b.Helper()
	ctx := context.Background()
	key := make([]byte, 32)
	if _, err := rand.Read(key); err != nil {
		b.Fatal(err)
	}
	a := &benchApprovals{key: []byte(hex.EncodeToString(key))}
	account := &corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Namespace: pipelineNamespace, Name: approverAccount}}
	weekday := (int(time.Now().Weekday()) + 3) % 7
	for _, obj := range []client.Object{
		&corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: pipelineNamespace, Name: approvalSecret},
			Data: map[string][]byte{v1alpha1.SecretKeyHMAC: a.key}},
		account,
		&rbacv1.Role{ObjectMeta: metav1.ObjectMeta{Namespace: pipelineNamespace, Name: approverAccount},
			Rules: []rbacv1.PolicyRule{{APIGroups: []string{v1alpha1.GroupVersion.Group}, Resources: []string{"pipelines/approval"}, Verbs: []string{"update"}}}},
		&rbacv1.RoleBinding{ObjectMeta: metav1.ObjectMeta{Namespace: pipelineNamespace, Name: approverAccount},
			RoleRef:  rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "Role", Name: approverAccount},
			Subjects: []rbacv1.Subject{{Kind: rbacv1.ServiceAccountKind, Namespace: pipelineNamespace, Name: approverAccount}}},
		&v1alpha1.ReleaseFreeze{ObjectMeta: metav1.ObjectMeta{Namespace: pipelineNamespace, Name: stopTheLine},
			Spec: v1alpha1.ReleaseFreezeSpec{Reason: "bench: a stop-the-line", Pipelines: &metav1.LabelSelector{MatchLabels: map[string]string{frozenLabel: "true"}}}},
		&v1alpha1.ClusterReleaseFreeze{ObjectMeta: metav1.ObjectMeta{Name: "bench-weekly"},
			Spec: v1alpha1.ReleaseFreezeSpec{Reason: "bench: a weekly window, not open during the run", Environments: []string{"prod"},
				Schedule: &v1alpha1.FreezeSchedule{Cron: fmt.Sprintf("0 3 * * %d", weekday), Duration: metav1.Duration{Duration: time.Hour}, TimeZone: "Europe/Berlin"}}},
	} {
		if err := mgmt.Client.Create(ctx, obj); err != nil {
			b.Fatalf("creating %T %s: %v", obj, obj.GetName(), err)
		}
	}
	req := &authenticationv1.TokenRequest{Spec: authenticationv1.TokenRequestSpec{ExpirationSeconds: ptr.To[int64](3600)}}
	if err := mgmt.Client.SubResource("token").Create(ctx, account, req); err != nil {
		b.Fatalf("requesting a token of %s: %v", approverAccount, err)
	}
	a.token = req.Status.Token
	return a
}

// approveAll waits until every measured pipeline's prod waits for revision 2 (staging soaked
// it), starts binary's `api` (kubeconfig its, dir its log's folder), and approves each prod
// twice, promoteWorkers pipelines at a time: met[i] is when the approval that met pipeline i's
// policy was sent. (Not answered: the route writes policyMet before it records the approval's
// Event and release log entry and answers, and the controller may promote meanwhile.) The api
// starts only now, as BenchmarkShippedPipelines runs none: on a cluster it has cores of its
// own, and here it would take the two cores' time from the controller in the soak's hop.
func (a *benchApprovals) approveAll(b *testing.B, mgmt *testenv.Env, ctl *process, binary, dir, kubeconfig string, met []time.Time) {
	b.Helper()
	waitPipelines(b, mgmt, ctl, "prod waiting for the approval of 2", func(p *v1alpha1.Pipeline) bool {
		w := envStatusOf(p, "prod").WaitingApproval
		return w != nil && w.Revision == "2"
	})
	listen := freeAddr(b)
	api := startProcess(b, binary, filepath.Join(dir, "api.log"), "api", "--kubeconfig", kubeconfig, "--listen", listen)
	defer api.stop()
	server := "http://" + listen
	waitServing(b, api, server+"/healthz")
	parallel(b, ctl, benchPipelines, promoteWorkers, func(i int) error {
		req := approval.Request{Server: server, Namespace: pipelineNamespace, Pipeline: appName(i), Environment: "prod", Revision: "2", Key: a.key}
		if _, err := req.Send(context.Background(), nil); err != nil {
			return fmt.Errorf("the signed approval of %s: %w", appName(i), err)
		}
		req.Key, req.Token = nil, a.token
		met[i] = time.Now()
		resp, err := req.Send(context.Background(), nil)
		if err != nil {
			return fmt.Errorf("the token's approval of %s: %w", appName(i), err)
		}
		if resp.PolicyMet == nil {
			return fmt.Errorf("%s: two approvals (%v) and the policy is not met", appName(i), resp.Approvers)
		}
		return nil
	})
}

// checkFrozen checks that the stop-the-line held the frozen pipelines: dev at 2 (moved by
// hand), staging and prod still at 1, each environment naming the freeze, Frozen=True; and that
// the weekly window, not open, holds no measured pipeline.
func checkFrozen(b *testing.B, mgmt *testenv.Env) {
	b.Helper()
	var list v1alpha1.PipelineList
	if err := mgmt.Client.List(context.Background(), &list, client.InNamespace(pipelineNamespace)); err != nil {
		b.Fatal(err)
	}
	frozen := 0
	for _, p := range list.Items {
		if p.Labels[frozenLabel] != "true" {
			if meta.FindStatusCondition(p.Status.Conditions, v1alpha1.ConditionFrozen) != nil {
				b.Errorf("%s: frozen, and no freeze holds it now: %+v", p.Name, p.Status.Conditions)
			}
			continue
		}
		frozen++
		for _, e := range p.Status.Environments {
			want := "1"
			if e.Name == benchEnvironments[0].name {
				want = "2"
			}
			if e.Revision != want || e.Frozen == nil || e.Frozen.Freeze != pipelineNamespace+"/"+stopTheLine {
				b.Errorf("%s: %s at %q (want %s), frozen %+v: the stop-the-line did not hold it", p.Name, e.Name, e.Revision, want, e.Frozen)
			}
		}
		if !meta.IsStatusConditionTrue(p.Status.Conditions, v1alpha1.ConditionFrozen) {
			b.Errorf("%s: Frozen is not True: %+v", p.Name, p.Status.Conditions)
		}
	}
	if frozen != benchFrozen {
		b.Errorf("%d frozen pipelines, want %d", frozen, benchFrozen)
	}
}
