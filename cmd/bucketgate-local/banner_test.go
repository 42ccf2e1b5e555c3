package main

import (
	"net/http"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/bucketgate/bucketgate/ratelimitheaders"
)

// bannerLoop is the banner's curl loop: how many requests, and whether with a key.
var bannerLoop = regexp.MustCompile(`(?m)^  for i in \$\(seq (\d+)\); do curl -s -o /dev/null -w '%\{http_code\} ' (-H 'X-API-Key: k' )?http://\S+/scores; done; echo$`)

// The banner says what the loaded configuration does, and its curl commands do it: the
// loop's last request is the first 429, sent with a made-up key when such keys are
// limited by IP and without one when they are refused; the 401 it promises is the
// answer, with none of the rate-limit headers (the banner said they were on every answer). Under unknownKeys: refuse it used to promise a 429 for a made-up key; under
// a quota, a concurrency rule or a route that reserves, it counted a bucket's capacity
// by the route's cost alone (a monthly quota of 5: "the 1st request").
func TestBannerTellsTheTruth(t *testing.T) {
	tests := []struct {
		name   string
		config string
		n      int    // requests in the banner's loop; 0: no loop
		key    bool   // the loop sends the made-up key k
		says   string // the banner says so
		refuse string // this key gets 401 ("-" for none; "" is no key)
	}{
		{"built-in", "", 11, true, "the 11th request in a row is answered 429", "-"},
		{"unknown keys refused", "{defaultPlan: free, unknownKeys: refuse, plans: {free: [{name: burst, capacity: 10, refillPerSecond: 1}]}}",
			11, false, "A key nobody registered is answered 401 (unknownKeys: refuse)", "k"},
		{"anonymous refused, a route's cost", "{defaultPlan: p, anonymous: refuse, plans: {p: [{name: b, capacity: 5, refillPerSecond: 1}]}, routes: [{path: /scores, cost: 2}]}",
			3, true, "Without the X-API-Key header the caller is answered 401 (anonymous: refuse)", ""},
		{"both refused", "{defaultPlan: free, unknownKeys: refuse, anonymous: refuse, plans: {free: [{name: burst, capacity: 10, refillPerSecond: 1}]}}",
			0, false, "Every request without a registered API key is answered 401", "k"},
		{"a monthly quota binds first", "{defaultPlan: metered, plans: {metered: [{name: burst, capacity: 10, refillPerSecond: 1}, {name: monthly, limit: 5, period: month}]}}",
			6, true, "the 6th request in a row is answered 429", "-"},
		{"a concurrency rule binds first, whatever the cost", "{defaultPlan: c, plans: {c: [{name: burst, capacity: 10, refillPerSecond: 1}, {name: streams, concurrency: 2}]}, routes: [{path: /scores, cost: 2}]}",
			3, true, "the 3rd request in a row is answered 429", "-"},
		{"a route that reserves", "{defaultPlan: r, plans: {r: [{name: burst, capacity: 100, refillPerSecond: 1}]}, routes: [{path: /scores, reserve: 40}]}",
			3, true, "the 3rd request in a row is answered 429", "-"},
		{"all shadow", "{defaultPlan: t, plans: {t: [{name: b, capacity: 1, refillPerSecond: 1, shadow: true}]}}",
			0, false, "every rule of the default plan t is shadow, so every request is allowed", "-"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			env := map[string]string{"REDIS_ADDR": miniAt(t).Addr()}
			if tc.config != "" {
				env["RATE_LIMIT_CONFIG"] = tc.config
			}
			g := startGateway(t, env)
			banner := waitBanner(t, g)
			for _, says := range []string{tc.says, "-Reset on the backend's answers and the 429s; none on the 503 / 401 / 502\n"} {
				if !strings.Contains(banner, says) {
					t.Errorf("the banner does not say %q:\n%s", says, banner)
				}
			}
			m := bannerLoop.FindStringSubmatch(banner)
			switch {
			case tc.n == 0 && m != nil:
				t.Fatalf("a curl loop in the banner, want none:\n%s", banner)
			case tc.n != 0 && m == nil:
				t.Fatalf("no curl loop in the banner:\n%s", banner)
			case m != nil:
				if n, _ := strconv.Atoi(m[1]); n != tc.n || (m[2] != "") != tc.key {
					t.Fatalf("loop of %s requests, key %q: want %d, key %v", m[1], m[2], tc.n, tc.key)
				}
				key := ""
				if tc.key {
					key = "k"
				}
				var got []string
				for range tc.n {
					got = append(got, strconv.Itoa(g.get(t, "/scores", key).status))
				}
				if want := strings.Repeat("200 ", tc.n-1) + "429"; strings.Join(got, " ") != want {
					t.Errorf("the banner's loop answers %s, want %s", strings.Join(got, " "), want)
				}
			}
			if tc.refuse != "-" {
				if r := g.get(t, "/scores", tc.refuse); r.status != http.StatusUnauthorized || rateLimitHeader(r.header) != "" {
					t.Errorf("key %q: %d with %s, want the 401 the banner promises, with none of the rate-limit headers", tc.refuse, r.status, rateLimitHeader(r.header))
				}
			}
		})
	}
}

// waitBanner returns the banner once g has printed it whole.
func waitBanner(t *testing.T, g *gateway) string {
	t.Helper()
	for deadline := time.Now().Add(10 * time.Second); time.Now().Before(deadline); time.Sleep(10 * time.Millisecond) {
		if out := g.stdout.String(); strings.Contains(out, "Ctrl-C stops.") {
			return out
		}
	}
	t.Fatalf("no banner after 10 s:\n%s", g.stdout)
	return ""
}

// rateLimitHeader returns the first rate-limit header of h (see ratelimitheaders.Owned),
// or "" when it has none.
func rateLimitHeader(h http.Header) string {
	for name := range h {
		if ratelimitheaders.Owned(name) {
			return name
		}
	}
	return ""
}

// With -template naming a template of other gateway responses (here only UNAUTHORIZED;
// API Gateway's defaults for the rest), the banner states that template's statuses,
// and its curl loop ends in the status the gateway really answers: it said 429 / 503 /
// 401 / 502 and "answered 429 with Retry-After" whatever the template held. The
// rate-limit headers are on the denial only when the template maps them there.
func TestBannerFollowsTheTemplate(t *testing.T) {
	tpl := filepath.Join(t.TempDir(), "own.yaml")
	doc := "Resources:\n  Api:\n    Type: AWS::Serverless::Api\n    Properties:\n      GatewayResponses:\n        UNAUTHORIZED:\n          StatusCode: 401\n"
	if err := os.WriteFile(tpl, []byte(doc), 0o600); err != nil {
		t.Fatal(err)
	}
	g := startGatewayWith(t, serveOptions{template: tpl}, map[string]string{"REDIS_ADDR": miniAt(t).Addr()})
	banner := waitBanner(t, g)
	for _, want := range []string{
		"responses   403 / 500 / 401 / 504 gateway responses from " + tpl,
		"-Reset on the backend's answers; none on the 403 / 500 / 401 / 504\n",
		"the 11th request in a row is answered 403.\n",
	} {
		if !strings.Contains(banner, want) {
			t.Errorf("the banner does not say %q:\n%s", want, banner)
		}
	}
	if m := bannerLoop.FindStringSubmatch(banner); m == nil || m[1] != "11" {
		t.Fatalf("the banner's loop %q, want 11 requests:\n%s", m, banner)
	}
	for range 10 {
		g.get(t, "/scores", "k")
	}
	if r := g.get(t, "/scores", "k"); r.status != http.StatusForbidden || rateLimitHeader(r.header) != "" {
		t.Errorf("11th: %d with %s, want the 403 the banner promises, with none of the rate-limit headers", r.status, rateLimitHeader(r.header))
	}
}
