//go:build !unit

package v1alpha1_test

import (
	"context"
	"fmt"
	"strings"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/release-controller/release-controller/api/v1alpha1"
)

func validPipeline(ns string) *v1alpha1.Pipeline {
	return &v1alpha1.Pipeline{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "podinfo"},
		Spec: v1alpha1.PipelineSpec{
			AppRef: v1alpha1.AppReference{APIVersion: "helm.toolkit.fluxcd.io/v2", Kind: "HelmRelease", Name: "podinfo"},
			Environments: []v1alpha1.Environment{
				{Name: "dev", Targets: []v1alpha1.Target{{Namespace: "podinfo-dev"}}},
				{Name: "prod", Targets: []v1alpha1.Target{
					{Namespace: "podinfo", ClusterRef: "prod-eu"},
					{Namespace: "podinfo", ClusterRef: "prod-us"},
				}, Approval: &v1alpha1.Approval{SecretRef: &v1alpha1.SecretKeyReference{Name: "approvals"}}},
			},
			Source: &v1alpha1.PipelineSource{ReleaseStream: "nightly"},
		},
	}
}

func validPullRequest() *v1alpha1.PullRequestPromotion {
	return &v1alpha1.PullRequestPromotion{
		URL: "https://git.example.com/example/fleet.git", BaseBranch: "main", Branch: "promote/{environment}/{revision}",
		Path: "apps/podinfo/prod/release.yaml", YAMLPath: "spec.chart.spec.version",
		SecretRef: &v1alpha1.GitCredentialsReference{Name: "fleet-git"},
		Author:    &v1alpha1.GitAuthor{Name: "Release Bot", Email: "release-bot@example.com"},
	}
}

func TestValidPipelinesAreAdmittedWithDefaults(t *testing.T) {
	ns := env.Namespace(t)
	ctx := context.Background()
	p := validPipeline(ns)
	p.Spec.Promotion = &v1alpha1.Promotion{}
	p.Spec.ServiceAccountName = "promoter"
	if err := env.Client.Create(ctx, p); err != nil {
		t.Fatalf("creating a valid pipeline: %v", err)
	}
	if p.Spec.Promotion.Strategy != v1alpha1.StrategyPatch {
		t.Errorf("strategy not defaulted to patch: %q", p.Spec.Promotion.Strategy)
	}
	others := map[string]v1alpha1.AppReference{
		"deployment":    {APIVersion: "apps/v1", Kind: "Deployment", Name: "web", Container: "web"},
		"kustomization": {APIVersion: "kustomize.toolkit.fluxcd.io/v1", Kind: "Kustomization", Name: "apps"},
		"application":   {APIVersion: "argoproj.io/v1alpha1", Kind: "Application", Name: "guestbook"},
		"custom":        {APIVersion: "example.com/v1", Kind: "Widget", Name: "w", RevisionPath: "status.version", PromotionPath: "spec.version"},
	}
	for name, ref := range others {
		p := validPipeline(ns)
		p.Name = name
		p.Spec.AppRef = ref
		p.Spec.Promotion = &v1alpha1.Promotion{Strategy: v1alpha1.StrategyNotification,
			Notification: &v1alpha1.NotificationPromotion{URL: "https://hooks.example.com/promote", SecretRef: &v1alpha1.SecretKeyReference{Name: "hook"}}}
		if err := env.Client.Create(ctx, p); err != nil {
			t.Errorf("creating a pipeline of a %s: %v", name, err)
		}
	}
	// The pullRequest strategy, on a Kustomization too: it sets no field of the app, so no
	// promotionPath is needed.
	pr := &v1alpha1.Promotion{Strategy: v1alpha1.StrategyPullRequest, PullRequest: validPullRequest()}
	for name, ref := range map[string]v1alpha1.AppReference{
		"pr-helmrelease":   p.Spec.AppRef,
		"pr-kustomization": {APIVersion: "kustomize.toolkit.fluxcd.io/v1", Kind: "Kustomization", Name: "apps"},
	} {
		q := validPipeline(ns)
		q.Name = name
		q.Spec.AppRef = ref
		q.Spec.Promotion = pr
		if err := env.Client.Create(ctx, q); err != nil {
			t.Errorf("creating a pipeline promoted by pull request (%s): %v", name, err)
		}
	}
	// The status as the controller writes it.
	p.Status = v1alpha1.PipelineStatus{Environments: []v1alpha1.EnvironmentStatus{{
		Name: "dev", Revision: "1.2.3", Ready: true,
		Targets:         []v1alpha1.TargetStatus{{Namespace: "podinfo-dev", Revision: "1.2.3", Ready: true}},
		LastPromotion:   &v1alpha1.PromotionRecord{ID: "x/dev/1.2.3", Revision: "1.2.3", Strategy: "patch", Time: metav1.Now()},
		WaitingApproval: &v1alpha1.WaitingApproval{Revision: "1.2.3", Since: metav1.Now()},
	}}}
	if err := env.Client.Status().Update(ctx, p); err != nil {
		t.Errorf("writing a status: %v", err)
	}
}

func TestInvalidPipelinesAreRejected(t *testing.T) {
	ns := env.Namespace(t)
	tests := []struct {
		name   string
		mutate func(p *v1alpha1.Pipeline)
		want   string
	}{
		{"no environments", func(p *v1alpha1.Pipeline) { p.Spec.Environments = nil }, "spec.environments: Required value"},
		{"environment without targets", func(p *v1alpha1.Pipeline) { p.Spec.Environments[0].Targets = nil }, "spec.environments[0].targets: Required value"},
		{"duplicate environments", func(p *v1alpha1.Pipeline) { p.Spec.Environments[1].Name = "dev" }, "Duplicate value"},
		{"environment name not a label", func(p *v1alpha1.Pipeline) { p.Spec.Environments[0].Name = "Dev_1" }, "an environment's name must be a DNS label"},
		{"duplicate targets", func(p *v1alpha1.Pipeline) {
			p.Spec.Environments[1].Targets[1].ClusterRef = "prod-eu"
		}, "Duplicate value"},
		{"duplicate local targets", func(p *v1alpha1.Pipeline) {
			p.Spec.Environments[0].Targets = append(p.Spec.Environments[0].Targets, p.Spec.Environments[0].Targets[0])
		}, "Duplicate value"},
		{"target namespace not a label", func(p *v1alpha1.Pipeline) { p.Spec.Environments[0].Targets[0].Namespace = "Bad NS" }, "namespace must be a DNS label"},
		{"deployment without container", func(p *v1alpha1.Pipeline) {
			p.Spec.AppRef = v1alpha1.AppReference{APIVersion: "apps/v1", Kind: "Deployment", Name: "web"}
		}, "a Deployment app names the container"},
		{"container on a HelmRelease", func(p *v1alpha1.Pipeline) { p.Spec.AppRef.Container = "web" }, "container is only for apps/v1 Deployment apps"},
		{"unknown kind without paths", func(p *v1alpha1.Pipeline) {
			p.Spec.AppRef = v1alpha1.AppReference{APIVersion: "example.com/v1", Kind: "Widget", Name: "w", RevisionPath: "status.version"}
		}, "names its revisionPath and promotionPath"},
		{"kustomization patched without promotionPath", func(p *v1alpha1.Pipeline) {
			p.Spec.AppRef = v1alpha1.AppReference{APIVersion: "kustomize.toolkit.fluxcd.io/v1", Kind: "Kustomization", Name: "apps"}
		}, "a Kustomization promoted by the patch strategy needs appRef.promotionPath"},
		{"bad revision path", func(p *v1alpha1.Pipeline) { p.Spec.AppRef.RevisionPath = "status..version" }, "revisionPath must be a dotted field path"},
		{"bad apiVersion", func(p *v1alpha1.Pipeline) { p.Spec.AppRef.APIVersion = "apps/version1" }, "apiVersion must be GROUP/VERSION"},
		{"bad kind", func(p *v1alpha1.Pipeline) { p.Spec.AppRef.Kind = "helmrelease" }, "kind must be a Kubernetes kind"},
		{"unknown strategy", func(p *v1alpha1.Pipeline) { p.Spec.Promotion = &v1alpha1.Promotion{Strategy: "email"} }, `Unsupported value: "email"`},
		{"notification without url", func(p *v1alpha1.Pipeline) {
			p.Spec.Promotion = &v1alpha1.Promotion{Strategy: v1alpha1.StrategyNotification}
		}, "the notification strategy needs notification.url"},
		{"notification config on patch", func(p *v1alpha1.Pipeline) {
			p.Spec.Environments[1].Promotion = &v1alpha1.Promotion{Strategy: v1alpha1.StrategyPatch,
				Notification: &v1alpha1.NotificationPromotion{URL: "https://hooks.example.com/"}}
		}, "notification is only for the notification strategy"},
		{"notification url not http", func(p *v1alpha1.Pipeline) {
			p.Spec.Promotion = &v1alpha1.Promotion{Strategy: v1alpha1.StrategyNotification,
				Notification: &v1alpha1.NotificationPromotion{URL: "ftp://hooks.example.com/"}}
		}, "url must be an http(s) URL"},
		{"pullRequest without its configuration", func(p *v1alpha1.Pipeline) {
			p.Spec.Promotion = &v1alpha1.Promotion{Strategy: v1alpha1.StrategyPullRequest}
		}, "the pullRequest strategy needs pullRequest"},
		{"pullRequest configuration on patch", func(p *v1alpha1.Pipeline) {
			p.Spec.Environments[1].Promotion = &v1alpha1.Promotion{Strategy: v1alpha1.StrategyPatch, PullRequest: validPullRequest()}
		}, "pullRequest is only for the pullRequest strategy"},
		{"kustomization patched in one environment", func(p *v1alpha1.Pipeline) {
			p.Spec.AppRef = v1alpha1.AppReference{APIVersion: "kustomize.toolkit.fluxcd.io/v1", Kind: "Kustomization", Name: "apps"}
			p.Spec.Promotion = &v1alpha1.Promotion{Strategy: v1alpha1.StrategyPullRequest, PullRequest: validPullRequest()}
			p.Spec.Environments[1].Promotion = &v1alpha1.Promotion{Strategy: v1alpha1.StrategyPatch}
		}, "a Kustomization promoted by the patch strategy needs appRef.promotionPath"},
		{"pullRequest over ssh", func(p *v1alpha1.Pipeline) {
			p.Spec.Promotion = &v1alpha1.Promotion{Strategy: v1alpha1.StrategyPullRequest, PullRequest: validPullRequest()}
			p.Spec.Promotion.PullRequest.URL = "ssh://git@github.com/example/fleet.git"
		}, "url must be the http(s) URL of a git repository"},
		{"pullRequest path leaving the repository", func(p *v1alpha1.Pipeline) {
			p.Spec.Promotion = &v1alpha1.Promotion{Strategy: v1alpha1.StrategyPullRequest, PullRequest: validPullRequest()}
			p.Spec.Promotion.PullRequest.Path = "apps/../../etc/passwd"
		}, "path must be a relative file path"},
		{"pullRequest yamlPath", func(p *v1alpha1.Pipeline) {
			p.Spec.Promotion = &v1alpha1.Promotion{Strategy: v1alpha1.StrategyPullRequest, PullRequest: validPullRequest()}
			p.Spec.Promotion.PullRequest.YAMLPath = "spec..version"
		}, "yamlPath must be keys separated by dots"},
		{"pullRequest branch", func(p *v1alpha1.Pipeline) {
			p.Spec.Promotion = &v1alpha1.Promotion{Strategy: v1alpha1.StrategyPullRequest, PullRequest: validPullRequest()}
			p.Spec.Promotion.PullRequest.Branch = "promote {revision}"
		}, "branch must be a branch name"},
		{"pullRequest base branch", func(p *v1alpha1.Pipeline) {
			p.Spec.Promotion = &v1alpha1.Promotion{Strategy: v1alpha1.StrategyPullRequest, PullRequest: validPullRequest()}
			p.Spec.Promotion.PullRequest.BaseBranch = "main.lock"
		}, "baseBranch must be a branch name"},
		{"pullRequest author email", func(p *v1alpha1.Pipeline) {
			p.Spec.Promotion = &v1alpha1.Promotion{Strategy: v1alpha1.StrategyPullRequest, PullRequest: validPullRequest()}
			p.Spec.Promotion.PullRequest.Author = &v1alpha1.GitAuthor{Email: "Release Bot <bot@example.com>"}
		}, "email must be an e-mail address"},
		{"approval without secret", func(p *v1alpha1.Pipeline) { p.Spec.Environments[1].Approval.SecretRef.Name = "" }, "spec.environments[1].approval.secretRef.name"},
		// A key has one purpose: the controller signs notifications with theirs, so a
		// notification key that is also an approval key would let a pipeline's author have the
		// controller sign something under an approval key.
		{"notification signed with an approval key", func(p *v1alpha1.Pipeline) {
			p.Spec.Promotion = &v1alpha1.Promotion{Strategy: v1alpha1.StrategyNotification,
				Notification: &v1alpha1.NotificationPromotion{URL: "https://hooks.example.com/", SecretRef: &v1alpha1.SecretKeyReference{Name: "approvals"}}}
		}, "spec.promotion.notification.secretRef must not name the Secret of an environment's approval.secretRef"},
		{"an environment's notification signed with another's approval key", func(p *v1alpha1.Pipeline) {
			p.Spec.Environments[0].Promotion = &v1alpha1.Promotion{Strategy: v1alpha1.StrategyNotification,
				Notification: &v1alpha1.NotificationPromotion{URL: "https://hooks.example.com/", SecretRef: &v1alpha1.SecretKeyReference{Name: "approvals"}}}
		}, "an environment's promotion.notification.secretRef must not name the Secret of an environment's approval.secretRef"},
		{"an environment's notification signed with its own approval key", func(p *v1alpha1.Pipeline) {
			p.Spec.Environments[1].Promotion = &v1alpha1.Promotion{Strategy: v1alpha1.StrategyNotification,
				Notification: &v1alpha1.NotificationPromotion{URL: "https://hooks.example.com/", SecretRef: &v1alpha1.SecretKeyReference{Name: "approvals"}}}
		}, "spec.environments[].approval.secretRef"},
		{"too many environments", func(p *v1alpha1.Pipeline) {
			for i := range v1alpha1.MaxPipelineEnvironments {
				p.Spec.Environments = append(p.Spec.Environments, v1alpha1.Environment{Name: fmt.Sprintf("e%d", i), Targets: p.Spec.Environments[0].Targets})
			}
		}, "Too many"},
		{"serviceAccountName not a ServiceAccount name", func(p *v1alpha1.Pipeline) { p.Spec.ServiceAccountName = "system:serviceaccount:other:admin" },
			"serviceAccountName must be a ServiceAccount name"},
	}
	for i, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			p := validPipeline(ns)
			p.Name = fmt.Sprintf("invalid-%d", i)
			tt.mutate(p)
			err := env.Client.Create(context.Background(), p)
			if err == nil {
				t.Fatalf("admitted; want an error containing %q", tt.want)
			}
			if !strings.Contains(err.Error(), tt.want) {
				t.Errorf("error %q does not contain %q", err, tt.want)
			}
		})
	}
}

// A notification with a key of its own is admitted next to approvals; the approval route's
// record of used signatures is a valid status, bounded.
func TestNotificationKeyOfItsOwnAndUsedSignatures(t *testing.T) {
	ns := env.Namespace(t)
	ctx := context.Background()
	p := validPipeline(ns)
	p.Spec.Environments[0].Promotion = &v1alpha1.Promotion{Strategy: v1alpha1.StrategyNotification,
		Notification: &v1alpha1.NotificationPromotion{URL: "https://hooks.example.com/", SecretRef: &v1alpha1.SecretKeyReference{Name: "hook"}}}
	if err := env.Client.Create(ctx, p); err != nil {
		t.Fatalf("a notification with a key of its own: %v", err)
	}
	used := func(n int) []v1alpha1.UsedSignature {
		out := make([]v1alpha1.UsedSignature, n)
		for i := range out {
			out[i] = v1alpha1.UsedSignature{SHA256: fmt.Sprintf("%064x", i), Expires: metav1.Now()}
		}
		return out
	}
	p.Status.Environments = []v1alpha1.EnvironmentStatus{{Name: "prod",
		Approval: &v1alpha1.ApprovalRecord{Revision: "1.2.3", Approver: "hmac:approvals", Time: metav1.Now(), UsedSignatures: used(v1alpha1.MaxUsedApprovalSignatures)}}}
	if err := env.Client.Status().Update(ctx, p); err != nil {
		t.Errorf("writing %d used signatures: %v", v1alpha1.MaxUsedApprovalSignatures, err)
	}
	p.Status.Environments[0].Approval.UsedSignatures = used(v1alpha1.MaxUsedApprovalSignatures + 1)
	if err := env.Client.Status().Update(ctx, p); err == nil || !strings.Contains(err.Error(), "Too many") {
		t.Errorf("writing %d used signatures: %v, want Too many", v1alpha1.MaxUsedApprovalSignatures+1, err)
	}
}
