package middleware_test

import (
	"context"
	"net"
	"net/http"
	"path/filepath"
	"testing"

	"github.com/bucketgate/bucketgate/middleware"
)

// A service behind a sidecar proxy on a Unix socket sees no peer address (RemoteAddr
// "@" or ""): trusted by TrustedProxies' "unix", the peer's X-Forwarded-For names the
// source, and two clients are two callers; untrusted, every request is the one shared
// unknown source, whatever its header says. On a real Unix listener.
func TestUnixSocketPeer(t *testing.T) {
	for _, tc := range []struct {
		name    string
		trusted []string
		left    []string // X-RateLimit-Remaining of 198.51.100.1, 198.51.100.2, 198.51.100.1
	}{
		{"trusted: one caller per source", []string{"unix"}, []string{"9", "9", "8"}},
		{"trusted beside addresses", []string{"10.0.0.0/8", "unix"}, []string{"9", "9", "8"}},
		{"untrusted: one shared caller", []string{"10.0.0.0/8"}, []string{"9", "8", "7"}},
		{"no proxies: one shared caller", nil, []string{"9", "8", "7"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			l := newLimiter(t, map[string]string{"RATE_LIMIT_CONFIG": tenTokens}, middleware.Options{TrustedProxies: tc.trusted})
			sock := filepath.Join(t.TempDir(), "s")
			ln, err := net.Listen("unix", sock)
			if err != nil {
				t.Fatal(err)
			}
			srv := &http.Server{Handler: l.Handler(ok)}
			go srv.Serve(ln)
			defer srv.Close()
			var d net.Dialer
			client := &http.Client{Transport: &http.Transport{DialContext: func(ctx context.Context, _, _ string) (net.Conn, error) {
				return d.DialContext(ctx, "unix", sock)
			}}}
			for i, source := range []string{"198.51.100.1", "198.51.100.2", "198.51.100.1"} {
				req, err := http.NewRequest("GET", "http://sidecar/orders/42", nil)
				if err != nil {
					t.Fatal(err)
				}
				req.Header.Set("X-Forwarded-For", source)
				resp, err := client.Do(req)
				if err != nil {
					t.Fatal(err)
				}
				resp.Body.Close()
				if got := resp.Header.Get("X-RateLimit-Remaining"); resp.StatusCode != http.StatusOK || got != tc.left[i] {
					t.Fatalf("request %d from %s: %d with %s remaining, want 200 with %s", i+1, source, resp.StatusCode, got, tc.left[i])
				}
			}
		})
	}
}
