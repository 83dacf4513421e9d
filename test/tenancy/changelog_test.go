//go:build !unit

package tenancy

import (
	"context"
	"fmt"
	"net"
	"net/url"
	"sync/atomic"
	"testing"
	"time"

	. "github.com/onsi/gomega"

	"github.com/release-controller/release-controller/internal/testbinary"
)

// TestAttackChangelogSourceOnLoopback: tenant A's component images say their source is a
// repository on the API server's loopback address (as a cluster-internal service would be).
// Before issue 33 the API server cloned from any https host, so anyone who could push a
// component image made it connect there, and the page showed what the remote answered. Now the
// fetch is refused when dialing (after name resolution), the changelog says so as a status,
// and nothing ever connects to the address.
func TestAttackChangelogSourceOnLoopback(t *testing.T) {
	ctx := context.Background()
	g := NewWithT(t)
	a := rc.a
	// The "internal service": it counts every connection made to it.
	l, err := net.Listen("tcp", "127.0.0.1:0")
	g.Expect(err).NotTo(HaveOccurred())
	defer l.Close()
	var connections atomic.Int64
	go func() {
		for {
			c, err := l.Accept()
			if err != nil {
				return
			}
			connections.Add(1)
			_ = c.Close()
		}
	}()
	source := "https://" + l.Addr().String() + "/internal/repo"

	publish(t, a.namespace, "changes-web", "r1", source)
	asTenant(t, a, streamOf(a.namespace, "changes", []string{"changes-web"}))
	p1 := waitAccepted(t, a.namespace, "changes")
	publish(t, a.namespace, "changes-web", "r2", source)
	p2 := waitAccepted(t, a.namespace, "changes", p1.Name)

	// The api's cache may not have the second payload's image yet: 409 until it does.
	var page string
	g.Eventually(func() (err error) {
		page, err = testbinary.Get(ctx, fmt.Sprintf("%s/changelog?from=%s&to=%s", rc.server, url.QueryEscape(p1.Name), url.QueryEscape(p2.Name)))
		return err
	}).WithTimeout(waitTimeout).WithPolling(200 * time.Millisecond).Should(Succeed())
	g.Expect(page).To(ContainSubstring("refused: address is loopback"), "the changelog:\n%s", page)
	g.Expect(connections.Load()).To(BeZero(), "the API server connected to the loopback source")
}
