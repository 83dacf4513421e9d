package jiraclient

import (
	"crypto/sha256"
	"sync"
)

// Pool keeps the clients of the Jira servers in use: one per server URL and credential, made
// with the pool's options, and one rate limit per server URL, shared by every credential of
// that server, so that the streams using one server keep to one budget. It is safe for
// concurrent use.
type Pool struct {
	opts []Option

	mu      sync.Mutex
	clients map[string]pooled // by BaseURL
}

type pooled struct {
	credential [32]byte
	client     *Client
}

// NewPool returns a pool whose clients are made with opts.
func NewPool(opts ...Option) *Pool {
	return &Pool{opts: opts, clients: map[string]pooled{}}
}

// Client returns the client of the server at baseURL with auth's credential: the kept one,
// or a new one sharing the server's rate limit.
func (p *Pool) Client(baseURL string, auth Auth) (*Client, error) {
	credential := sha256.Sum256([]byte(auth.Email + "\x00" + auth.Token))
	p.mu.Lock()
	defer p.mu.Unlock()
	c, err := New(baseURL, auth, p.opts...)
	if err != nil {
		return nil, err
	}
	base := c.BaseURL()
	if e, ok := p.clients[base]; ok {
		if e.credential == credential {
			return e.client, nil
		}
		c.limiter = e.client.limiter // a new credential of the same server: same budget
	}
	p.clients[base] = pooled{credential: credential, client: c}
	return c, nil
}
