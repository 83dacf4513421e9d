package mcp_test

import (
	"context"
	"io"
	"net"
	"net/http"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/release-controller/release-controller/internal/releaselog"
	"github.com/release-controller/release-controller/internal/server"
	"github.com/release-controller/release-controller/internal/server/catalog"
	"github.com/release-controller/release-controller/internal/server/mcp"
)

// A request body over the server's limit is refused with 413 saying the limit, whether the
// client announced its length or sent it chunked; the MCP endpoint still answers afterwards.
func TestOversizedRequestIsRefused(t *testing.T) {
	s := server.New()
	mcp.Register(s, filledStore(), releaselog.Options{}, catalog.New(), nil)
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	ctx, stop := context.WithCancel(context.Background())
	served := make(chan error, 1)
	go func() { served <- s.Serve(ctx, l, 5*time.Second) }()
	t.Cleanup(func() {
		stop()
		if err := <-served; err != nil {
			t.Errorf("serving: %v", err)
		}
	})
	url := "http://" + l.Addr().String() + mcp.Path

	call := `{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"list_releases","arguments":{"day":"` +
		strings.Repeat("x", server.DefaultMaxBodyBytes) + `"}}}`
	for _, chunked := range []bool{false, true} {
		var body io.Reader = strings.NewReader(call)
		if chunked {
			body = struct{ io.Reader }{body}
		}
		req, _ := http.NewRequest(http.MethodPost, url, body)
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set("Accept", "application/json, text/event-stream")
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		text, _ := io.ReadAll(resp.Body)
		_ = resp.Body.Close()
		if resp.StatusCode != http.StatusRequestEntityTooLarge || !strings.Contains(string(text), strconv.Itoa(server.DefaultMaxBodyBytes)) {
			t.Errorf("chunked %v: %d %q, want 413 naming the limit", chunked, resp.StatusCode, text)
		}
	}
}
