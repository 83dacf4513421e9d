package changelog

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/netip"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/go-git/go-git/v5/plumbing/transport/client"
	githttp "github.com/go-git/go-git/v5/plumbing/transport/http"
)

// A component's source URL is chosen by whoever built its image, and the server fetching it
// sits inside a cluster: without a check, a source could make it reach loopback services, the
// cloud's metadata address or anything of the cluster's network. The check is made on the
// address actually dialed, after DNS resolution, so a name resolving (or rebinding) to such an
// address does not help.

// reservedRanges are the addresses fetches do not dial unless the operator allows them
// (NetworkPolicy.Allow), with what each is; the first match names the address.
var reservedRanges = func() []struct {
	prefix netip.Prefix
	class  string
} {
	var out []struct {
		prefix netip.Prefix
		class  string
	}
	for _, r := range [][2]string{
		{"0.0.0.0/8", "unspecified"},
		{"127.0.0.0/8", "loopback"},
		{"10.0.0.0/8", "private"},
		{"172.16.0.0/12", "private"},
		{"192.168.0.0/16", "private"},
		{"100.64.0.0/10", "shared (100.64.0.0/10, used inside clusters)"},
		{"169.254.0.0/16", "link-local"},
		{"192.0.0.0/24", "reserved"},
		{"198.18.0.0/15", "reserved"},
		{"224.0.0.0/4", "multicast"},
		{"255.255.255.255/32", "broadcast"},
		{"240.0.0.0/4", "reserved"},
		{"::/128", "unspecified"},
		{"::1/128", "loopback"},
		{"::/96", "reserved"}, // IPv4-compatible, deprecated
		{"fe80::/10", "link-local"},
		{"fec0::/10", "private"}, // site-local, deprecated
		{"fc00::/7", "private"},  // unique local
		{"64:ff9b:1::/48", "private"},
		{"100::/64", "reserved"},
		{"ff00::/8", "multicast"},
	} {
		out = append(out, struct {
			prefix netip.Prefix
			class  string
		}{netip.MustParsePrefix(r[0]), r[1]})
	}
	return out
}()

// nat64 is the well-known NAT64 prefix: its addresses reach the IPv4 address they embed.
var nat64 = netip.MustParsePrefix("64:ff9b::/96")

// ClassifyAddress says what kind of reserved address ip is ("loopback", "private", …), or ""
// for an address of the public internet. IPv4-mapped and NAT64 addresses are classified by
// the IPv4 address they reach.
func ClassifyAddress(ip netip.Addr) string {
	if !ip.IsValid() {
		return "invalid"
	}
	ip = ip.Unmap().WithZone("")
	if nat64.Contains(ip) {
		b := ip.As16()
		ip = netip.AddrFrom4([4]byte{b[12], b[13], b[14], b[15]})
	}
	for _, r := range reservedRanges {
		if r.prefix.Contains(ip) {
			return r.class
		}
	}
	return ""
}

// NetworkPolicy says which addresses changelog fetches may dial: those of the public
// internet, and those in Allow (the operator's opt-in, e.g. a git server of the cluster).
type NetworkPolicy struct {
	Allow []netip.Prefix
}

// ParseCIDRs reads the CIDRs (or single addresses) of --changelog-allow-cidrs.
func ParseCIDRs(entries []string) ([]netip.Prefix, error) {
	var out []netip.Prefix
	for _, e := range entries {
		e = strings.TrimSpace(e)
		if e == "" {
			continue
		}
		if p, err := netip.ParsePrefix(e); err == nil {
			out = append(out, p.Masked())
			continue
		}
		a, err := netip.ParseAddr(e)
		if err != nil {
			return nil, fmt.Errorf("%q is neither a CIDR (10.0.0.0/8, fd00::/8) nor an address", e)
		}
		out = append(out, netip.PrefixFrom(a, a.BitLen()))
	}
	return out, nil
}

// Check returns nil when ip may be dialed, else an *AddressRefusedError. It is pure.
func (p NetworkPolicy) Check(ip netip.Addr) error {
	class := ClassifyAddress(ip)
	if class == "" {
		return nil
	}
	plain := ip.Unmap().WithZone("")
	for _, a := range p.Allow {
		if a.Contains(plain) || a.Contains(ip) {
			return nil
		}
	}
	return &AddressRefusedError{Addr: plain, Class: class}
}

// AddressRefusedError is a dial the NetworkPolicy refused.
type AddressRefusedError struct {
	Addr  netip.Addr
	Class string
}

func (e *AddressRefusedError) Error() string {
	return fmt.Sprintf("refused to connect to %s: the address is %s (--changelog-allow-cidrs allows such addresses)", e.Addr, e.Class)
}

// fetchGuard dials for one RepoCache: its own connection pool (a connection dialed under
// another policy is never reused), every dial checked by the policy after DNS resolution.
type fetchGuard struct {
	policy    NetworkPolicy
	maxBytes  int64
	transport *http.Transport
}

func newFetchGuard(policy NetworkPolicy, maxBytes int64) *fetchGuard {
	g := &fetchGuard{policy: policy, maxBytes: maxBytes}
	dialer := &net.Dialer{
		Timeout:   30 * time.Second,
		KeepAlive: 30 * time.Second,
		// Control runs once the address is resolved, just before connecting.
		Control: func(network, address string, _ syscall.RawConn) error {
			ap, err := netip.ParseAddrPort(address)
			if err != nil {
				return fmt.Errorf("refused to connect to %q: not an address", address)
			}
			return policy.Check(ap.Addr())
		},
	}
	g.transport = &http.Transport{
		Proxy:                 http.ProxyFromEnvironment,
		DialContext:           dialer.DialContext,
		ForceAttemptHTTP2:     true,
		MaxIdleConns:          16,
		IdleConnTimeout:       90 * time.Second,
		TLSHandshakeTimeout:   10 * time.Second,
		ExpectContinueTimeout: time.Second,
	}
	return g
}

// fetchState is one fetch's account: the bytes received, and why it was cut off.
type fetchState struct {
	guard    *fetchGuard
	received atomic.Int64
	tooLarge atomic.Bool

	mu      sync.Mutex
	refused *AddressRefusedError
}

func (s *fetchState) refuse(e *AddressRefusedError) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.refused == nil {
		s.refused = e
	}
}

func (s *fetchState) refusal() *AddressRefusedError {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.refused
}

type fetchStateKey struct{}

// withFetchState makes the HTTP requests of go-git made with ctx go through the state's guard.
func withFetchState(ctx context.Context, s *fetchState) context.Context {
	return context.WithValue(ctx, fetchStateKey{}, s)
}

// ErrFetchTooLarge is a fetch that received more than its limit.
var ErrFetchTooLarge = errors.New("the repository sent more than the fetch size limit (--changelog-max-fetch-size)")

// guardedTransport is go-git's HTTP transport in this process. Requests of a changelog fetch
// (their context holds a fetchState) go through the fetch's guard; any other go-git request
// (the pipelines' pushes) through http.DefaultTransport, as go-git's own default does.
type guardedTransport struct{}

func (guardedTransport) RoundTrip(req *http.Request) (*http.Response, error) {
	s, _ := req.Context().Value(fetchStateKey{}).(*fetchState)
	if s == nil {
		return http.DefaultTransport.RoundTrip(req)
	}
	// An address in the URL is checked here too: through a proxy, the dial is the proxy's.
	if a, err := netip.ParseAddr(strings.Trim(req.URL.Hostname(), "[]")); err == nil {
		if err := s.guard.policy.Check(a); err != nil {
			var refused *AddressRefusedError
			if errors.As(err, &refused) {
				s.refuse(refused)
			}
			return nil, err
		}
	}
	if s.tooLarge.Load() {
		return nil, ErrFetchTooLarge
	}
	resp, err := s.guard.transport.RoundTrip(req)
	if err != nil {
		var refused *AddressRefusedError
		if errors.As(err, &refused) {
			s.refuse(refused)
		}
		return nil, err
	}
	resp.Body = &countingBody{body: resp.Body, state: s}
	return resp, nil
}

// countingBody fails a response once the fetch received more than its limit.
type countingBody struct {
	body  io.ReadCloser
	state *fetchState
}

func (b *countingBody) Read(p []byte) (int, error) {
	n, err := b.body.Read(p)
	limit := b.state.guard.maxBytes
	if total := b.state.received.Add(int64(n)); limit > 0 && total > limit {
		b.state.tooLarge.Store(true)
		return 0, ErrFetchTooLarge
	}
	return n, err
}

func (b *countingBody) Close() error { return b.body.Close() }

func init() {
	// go-git's transports are process-wide; this one behaves as go-git's default for every
	// request but those of changelog fetches.
	// No transport cache: an endpoint with TLS or proxy options gets an error, not a panic
	// (go-git clones the client's *http.Transport for those; neither caller sets them).
	t := githttp.NewClientWithOptions(&http.Client{Transport: guardedTransport{}}, nil)
	client.InstallProtocol("https", t)
	client.InstallProtocol("http", t)
}

// checkResolved is the check of the ssh:// and git:// transports, which go-git dials itself:
// the host's addresses are resolved and checked before the fetch. Unlike the HTTP check it
// is not made on the connection itself, so a name that changes its address between the two
// (DNS rebinding) can pass it; those schemes are fetched only when --git-source-allow names them.
func checkResolved(ctx context.Context, policy NetworkPolicy, host string) error {
	if a, err := netip.ParseAddr(strings.Trim(host, "[]")); err == nil {
		return policy.Check(a)
	}
	addrs, err := net.DefaultResolver.LookupNetIP(ctx, "ip", host)
	if err != nil {
		return err
	}
	for _, a := range addrs {
		if err := policy.Check(a); err != nil {
			return err
		}
	}
	return nil
}
