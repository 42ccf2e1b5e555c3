package authorizer

import (
	"strconv"
	"strings"
	"testing"

	"github.com/bucketgate/bucketgate/internal/testkit/samples"
)

// The source address is the request context's, never one that a header the client
// writes claims: from one source, a new X-Forwarded-For (or X-Real-IP, Forwarded,
// True-Client-IP, CF-Connecting-IP, X-Client-IP) with every request is one caller, so
// the 11th request is denied under the free plan and Redis holds the source's one
// bucket.
func TestClaimedSourceHeadersIgnored(t *testing.T) {
	events := []struct {
		name   string
		event  func(t *testing.T) []byte
		source string // the event's requestContext source address
	}{
		{"REST", func(t *testing.T) []byte { return samples.Read(t, restEvent) }, "203.0.113.10"},
		{"HTTP API 1.0", httpV1Event, "203.0.113.10"},
		{"HTTP API 2.0", func(t *testing.T) []byte { return samples.Read(t, httpEvent) }, "198.51.100.23"},
	}
	for _, tc := range events {
		t.Run(tc.name, func(t *testing.T) {
			f := newFixture(t, options{})
			var allowed []string
			for i := range 12 {
				claimed := "192.0.2." + strconv.Itoa(i+1)
				ev := withHeaders(t, tc.event(t), map[string]string{
					"X-Forwarded-For":  claimed,
					"X-Real-IP":        claimed,
					"Forwarded":        "for=" + claimed,
					"True-Client-IP":   claimed,
					"CF-Connecting-IP": claimed,
					"X-Client-IP":      claimed,
				})
				a := f.mustInvoke(t, ev)
				allowed = append(allowed, strconv.FormatBool(a.allowed(t)))
				if a.PrincipalID != "" && a.PrincipalID != "ip:"+tc.source {
					t.Fatalf("request %d: principal %q, want ip:%s", i+1, a.PrincipalID, tc.source)
				}
			}
			if got, want := strings.Join(allowed, " "), strings.TrimSpace(strings.Repeat("true ", 10))+" false false"; got != want {
				t.Fatalf("allowed: %s, want %s", got, want)
			}
			if keys := f.mr.Keys(); len(keys) != 1 || !strings.Contains(keys[0], "{ip:"+tc.source+"}") {
				t.Fatalf("Redis keys %v, want the bucket of ip:%s alone", keys, tc.source)
			}
		})
	}
}
