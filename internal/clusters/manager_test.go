//go:build !unit

package clusters_test

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"testing"

	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/release-controller/release-controller/api/v1alpha1"
	"github.com/release-controller/release-controller/internal/clusters"
)

// TestManagerLifecycle: Ensure refuses before Start; builds a cluster from its Secret and
// returns the same one while the Secret stays; its first answer calls changed; a changed
// Secret rebuilds it (the old one's context ends, so what ran on it stops); Stop stops it.
func TestManagerLifecycle(t *testing.T) {
	g := NewWithT(t)
	ctx, cancel := context.WithCancel(context.Background())
	t.Cleanup(cancel)
	ns := env.Namespace(t)
	key := clusters.Key{Namespace: ns, Secret: "farm"}
	changed := make(chan clusters.Key, 10)
	m := clusters.NewManager(nil, env.Client, env.Client, func(k clusters.Key) { changed <- k })

	_, err := m.Ensure(ctx, key, nil)
	g.Expect(errors.Is(err, clusters.ErrNotStarted)).To(BeTrue(), "%v", err)
	go func() { _ = m.Start(ctx) }()
	<-m.Started()

	_, err = m.Ensure(ctx, clusters.Key{}, nil)
	g.Expect(err).To(MatchError("no local cluster"))

	path := filepath.Join(t.TempDir(), "kubeconfig")
	g.Expect(env.WriteKubeconfig(path)).To(Succeed())
	kubeconfig, err := os.ReadFile(path)
	g.Expect(err).NotTo(HaveOccurred())
	secret := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "farm"}, Data: map[string][]byte{v1alpha1.SecretKeyKubeconfig: kubeconfig}}
	g.Expect(env.Client.Create(ctx, secret)).To(Succeed())

	first, err := m.Ensure(ctx, key, nil)
	g.Expect(err).NotTo(HaveOccurred())
	g.Eventually(changed).WithTimeout(waitTimeout).Should(Receive(Equal(key)), "the first answer is told")
	again, err := m.Ensure(ctx, key, nil)
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(again.Cluster).To(BeIdenticalTo(first.Cluster))
	g.Expect(again.Answered).To(BeTrue())
	g.Expect(again.Problem).To(BeNil())

	secret.Annotations = map[string]string{"rotated": "yes"}
	g.Expect(env.Client.Update(ctx, secret)).To(Succeed())
	rebuilt, err := m.Ensure(ctx, key, nil)
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(rebuilt.Cluster).NotTo(BeIdenticalTo(first.Cluster))
	g.Eventually(first.Ctx.Done()).WithTimeout(waitTimeout).Should(BeClosed())

	m.Stop(ctx, key)
	g.Eventually(rebuilt.Ctx.Done()).WithTimeout(waitTimeout).Should(BeClosed())
}
