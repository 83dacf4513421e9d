package main

import (
	"os"
	"path/filepath"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/release-controller/release-controller/api/v1alpha1"
)

func TestReconcileOutcome(t *testing.T) {
	const asked = "2026-11-28T12:00:00Z"
	ready := metav1.Condition{Type: v1alpha1.ConditionReady, Status: metav1.ConditionTrue, Reason: "UpToDate", Message: "the newest payload has the current components"}
	notReady := metav1.Condition{Type: v1alpha1.ConditionReady, Status: metav1.ConditionFalse, Reason: "PublishFailed", Message: "moving latest: denied"}
	stalled := metav1.Condition{Type: v1alpha1.ConditionStalled, Status: metav1.ConditionTrue, Reason: "InvalidApp", Message: "appRef.kind Foo"}
	progressing := metav1.Condition{Type: v1alpha1.ConditionReconciling, Status: metav1.ConditionTrue, Reason: v1alpha1.ReasonProgressing, Message: "building 4.15.1"}
	for _, tt := range []struct {
		name        string
		handled     string
		conds       []metav1.Condition
		gen, obs    int64
		wantDone    bool
		wantSummary string
		wantErr     string
	}{
		{name: "not answered yet", handled: "2026-11-28T11:00:00Z", conds: []metav1.Condition{ready}, gen: 1, obs: 1},
		{name: "answered before the new generation was seen", handled: asked, conds: []metav1.Condition{ready}, gen: 2, obs: 1},
		{name: "ready", handled: asked, conds: []metav1.Condition{ready}, gen: 2, obs: 2, wantDone: true,
			wantSummary: "UpToDate: the newest payload has the current components"},
		{name: "ready and still progressing", handled: asked, conds: []metav1.Condition{ready, progressing}, gen: 2, obs: 2, wantDone: true,
			wantSummary: "UpToDate: the newest payload has the current components (still Progressing: building 4.15.1)"},
		{name: "not ready", handled: asked, conds: []metav1.Condition{notReady}, gen: 1, obs: 1, wantDone: true,
			wantErr: "not ready: PublishFailed: moving latest: denied"},
		{name: "stalled", handled: asked, conds: []metav1.Condition{notReady, stalled}, gen: 1, obs: 1, wantDone: true,
			wantErr: "stalled: InvalidApp: appRef.kind Foo"},
		{name: "no Ready", handled: asked, gen: 1, obs: 1, wantDone: true, wantErr: "reconciled, but the status has no Ready condition"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			done, summary, err := reconcileOutcome(asked, tt.handled, tt.conds, tt.gen, tt.obs)
			gotErr := ""
			if err != nil {
				gotErr = err.Error()
			}
			if done != tt.wantDone || summary != tt.wantSummary || gotErr != tt.wantErr {
				t.Errorf("reconcileOutcome = %v, %q, %q; want %v, %q, %q", done, summary, gotErr, tt.wantDone, tt.wantSummary, tt.wantErr)
			}
		})
	}
}

func TestReconcileKey(t *testing.T) {
	kubeconfig := filepath.Join(t.TempDir(), "kubeconfig")
	if err := os.WriteFile(kubeconfig, []byte(`apiVersion: v1
kind: Config
clusters: [{name: c, cluster: {server: "https://127.0.0.1:1"}}]
users: [{name: u, user: {token: t}}]
contexts: [{name: x, context: {cluster: c, user: u, namespace: team-a}}]
current-context: x
`), 0o600); err != nil {
		t.Fatal(err)
	}
	for _, tt := range []struct {
		arg, namespace, kubeconfig string
		want                       types.NamespacedName
		wantErr                    bool
	}{
		{arg: "demo/nightly", want: types.NamespacedName{Namespace: "demo", Name: "nightly"}},
		{arg: "demo/nightly", namespace: "demo", want: types.NamespacedName{Namespace: "demo", Name: "nightly"}},
		{arg: "demo/nightly", namespace: "other", wantErr: true},
		{arg: "nightly", namespace: "demo", want: types.NamespacedName{Namespace: "demo", Name: "nightly"}},
		{arg: "nightly", kubeconfig: kubeconfig, want: types.NamespacedName{Namespace: "team-a", Name: "nightly"}},
		{arg: "/nightly", wantErr: true},
		{arg: "a/b/c", wantErr: true},
	} {
		got, err := reconcileKey(tt.arg, tt.namespace, tt.kubeconfig)
		if (err != nil) != tt.wantErr || got != tt.want {
			t.Errorf("reconcileKey(%q, %q) = %v, %v; want %v (error %v)", tt.arg, tt.namespace, got, err, tt.want, tt.wantErr)
		}
	}
	if _, err := reconcileTarget("deployment"); err == nil {
		t.Error("reconcile deployment was accepted")
	}
}
