package config_test

import (
	"errors"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/bucketgate/bucketgate"
	"github.com/bucketgate/bucketgate/internal/config"
)

// A route's reserve: the authorizer reserves that estimate instead of taking a cost,
// held for the route's ttlMs (the default when left out); LimitsOf gives back the very
// Limits of a route's id, and nothing for an id no route has.
func TestRouteReserve(t *testing.T) {
	doc := "defaultPlan: llm\nplans: {llm: [{name: tokens, capacity: 10000, refillPerSecond: 100}]}\nroutes:\n" +
		"  - {method: POST, path: /v1/chat, reserve: 4096, ttlMs: 60000}\n" +
		"  - {method: POST, path: /v1/complete, reserve: 512}\n" +
		"  - {path: /v1/models, cost: 2}\n"
	c, err := config.Parse([]byte(doc))
	if err != nil {
		t.Fatal(err)
	}
	p := c.DefaultPlan()
	tests := []struct {
		name, method, path string
		want               config.Limits
	}{
		{"reserve with a ttl", "POST", "/v1/chat", config.Limits{Plan: "llm", Cost: 1, Reserve: 4096, TTL: time.Minute, Route: chatRoute}},
		{"reserve, default ttl", "POST", "/v1/complete", config.Limits{Plan: "llm", Cost: 1, Reserve: 512, Route: "3ab50e979ffdbcac"}},
		{"a cost", "GET", "/v1/models", config.Limits{Plan: "llm", Cost: 2, Route: "5d09822f0111034a"}},
		{"no route", "GET", "/", config.Limits{Plan: "llm", Cost: 1}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			l := c.Limits(p, tt.method, tt.path)
			got := l
			got.Rules = nil
			if !reflect.DeepEqual(got, tt.want) || len(l.Rules) != 1 || l.Rules[0].Name != "tokens" {
				t.Fatalf("Limits = %+v, want %+v with rule tokens", l, tt.want)
			}
			at, ok := c.LimitsOf(p, l.Route)
			at.Rules = nil
			if !ok || !reflect.DeepEqual(at, tt.want) {
				t.Fatalf("LimitsOf(%q) = %+v, %v; want %+v", l.Route, at, ok, tt.want)
			}
		})
	}
	for _, route := range []string{"0000000000000000", "CB3991B74AF151D5", "1"} {
		if l, ok := c.LimitsOf(p, route); ok {
			t.Errorf("LimitsOf(%q) = %+v, true: the document has no such route", route, l)
		}
	}
}

// chatRoute is the id of the route POST /v1/chat: the first 16 hex digits of the
// SHA-256 of "POST /v1/chat". Pinned: reservations in flight name their routes by it,
// so another spelling of the digest would refuse every settle across an upgrade.
const chatRoute = "cb3991b74af151d5"

// A route's id is its method and path pattern's: the same for every spelling of one
// pattern, another for another method or pattern; and the same whatever routes are
// added, removed or moved around it, so that LimitsOf still finds it there.
func TestRouteIDs(t *testing.T) {
	id := func(t *testing.T, routes string) string {
		t.Helper()
		c, err := config.Parse([]byte("defaultPlan: free\nplans: {free: [{name: b, capacity: 100, refillPerSecond: 1}]}\nroutes: [" + routes + "]\n"))
		if err != nil {
			t.Fatal(err)
		}
		return c.Limits(c.DefaultPlan(), "POST", "/v1/chat").Route
	}
	for _, tt := range []struct {
		name, route string
		same        bool
	}{
		{"as written", "{method: POST, path: /v1/chat}", true},
		{"method in lower case", "{method: post, path: /v1/chat}", true},
		{"literals in upper case", "{method: POST, path: /V1/Chat}", true},
		{"a trailing slash", "{method: POST, path: /v1/chat/}", true},
		{"another cost and rules", "{method: POST, path: /v1/chat, cost: 3, rules: [{name: c, concurrency: 1}]}", true},
		{"a parameter", "{method: POST, path: '/v1/{op}'}", false},
		{"any method", "{path: /v1/chat}", false},
		{"any rest", "{method: POST, path: /v1/chat/**}", false},
	} {
		t.Run(tt.name, func(t *testing.T) {
			if got := id(t, tt.route); (got == chatRoute) != tt.same || len(got) != config.RouteIDLen {
				t.Fatalf("route %s: id %q; want the same as POST /v1/chat's (%s): %v", tt.route, got, chatRoute, tt.same)
			}
		})
	}
	if a, b := id(t, "{method: POST, path: '/v1/{op}'}"), id(t, "{method: POST, path: '/v1/*'}"); a != b {
		t.Errorf("/v1/{op} and /v1/* are one pattern: ids %s and %s", a, b)
	}
	if a, b := id(t, "{method: POST, path: '/v1/{rest+}'}"), id(t, "{method: POST, path: '/v1/**'}"); a != b {
		t.Errorf("/v1/{rest+} and /v1/** are one pattern: ids %s and %s", a, b)
	}
	chat := "{method: POST, path: /v1/chat, reserve: 10}"
	for _, tt := range []struct{ name, routes string }{
		{"alone", chat},
		{"a route inserted before it", "{path: /v1/models}, " + chat},
		{"routes moved around it", "{path: /b}, " + chat + ", {path: /a}"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			c, err := config.Parse([]byte("defaultPlan: free\nplans: {free: [{name: b, capacity: 100, refillPerSecond: 1}]}\nroutes: [" + tt.routes + "]\n"))
			if err != nil {
				t.Fatal(err)
			}
			if l, ok := c.LimitsOf(c.DefaultPlan(), chatRoute); !ok || l.Reserve != 10 || l.Route != chatRoute {
				t.Fatalf("LimitsOf(%s) = %+v, %v; want the route POST /v1/chat that reserves 10", chatRoute, l, ok)
			}
		})
	}
}

// A route's reserve and ttlMs are checked once, at load, with an error naming the field.
func TestRouteReserveErrors(t *testing.T) {
	plans := "defaultPlan: free\nplans: {free: [{name: b, capacity: 100, refillPerSecond: 1}]}\n"
	tests := []struct{ name, routes, want string }{
		{"reserve 0", "routes: [{path: /x, reserve: 0}]", "routes[0].reserve (line 3, column 30): 0: want an estimate of 1 token or more"},
		{"reserve negative", "routes: [{path: /x, reserve: -5}]", "routes[0].reserve (line 3, column 30): -5: want an estimate"},
		{"reserve not whole", "routes: [{path: /x, reserve: 1.5}]", `routes[0].reserve (line 3, column 30): "1.5": want a whole decimal number`},
		{"reserve above capacity", "routes: [{path: /x, reserve: 101}]", "routes[0] (line 3, column 10): with plans.free: reserve of 101 tokens exceeds capacity 100 of rule b"},
		{"reserve with cost", "routes: [{path: /x, cost: 2, reserve: 10}]", "routes[0].reserve (line 3, column 39): not with cost"},
		{"ttlMs 0", "routes: [{path: /x, reserve: 10, ttlMs: 0}]", "routes[0].ttlMs (line 3, column 41): 0: want whole milliseconds from 1 to 3600000"},
		{"ttlMs above an hour", "routes: [{path: /x, reserve: 10, ttlMs: 3600001}]", "routes[0].ttlMs (line 3, column 41): 3600001: want whole milliseconds from 1 to 3600000"},
		{"shadow route reserves", "routes: [{path: /x, reserve: 10, shadow: true, rules: [{name: u, capacity: 50, refillPerSecond: 1}]}]", "routes[0].reserve (line 3, column 30): a shadow route cannot reserve"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := config.Parse([]byte(plans + tt.routes))
			if !errors.Is(err, config.ErrConfig) || !strings.Contains(err.Error(), tt.want) {
				t.Fatalf("Parse() = %v, want ErrConfig mentioning %q", err, tt.want)
			}
		})
	}
	if bucketgate.MaxTTL != time.Hour {
		t.Fatalf("MaxTTL %v: the messages above say 3600000", bucketgate.MaxTTL)
	}
}

// A route's ttlMs is how long its requests' leases hold too: accepted on a route whose
// requests can take one by the document (a concurrency rule of its own, or of any plan,
// the default plan or another), within 1 to 3600000 ms. On a route whose requests hold
// nothing by the document, Parse accepts it (a registry table's identity may have a
// concurrency rule of its own) and CheckAlone, for a document that is the whole
// registry, refuses it; a document that lists keys or tenants has no table, and Parse
// refuses it there. Limits carry the ttl, and Limits.Request gives it to a request that
// holds something alone: on a plan without a concurrency rule, a check of the route
// holds nothing and has no ttl (the engine would refuse one).
func TestRouteTTLOfLeases(t *testing.T) {
	const (
		bucket  = "{name: b, capacity: 100, refillPerSecond: 1}"
		streams = "{name: streams, concurrency: 2}"
		idle    = "only with reserve or a concurrency rule (the route's, a plan's, or with a registry table an identity's own): how long the route's reservation or lease holds, and this route's requests hold neither"
	)
	doc := func(free, pro, routes string) string {
		return "defaultPlan: free\nplans: {free: [" + free + "], pro: [" + pro + "]}\nroutes: [" + routes + "]\n"
	}
	tests := []struct {
		name, doc string
		want      string        // Parse's error; empty: accepted
		alone     string        // accepted: CheckAlone's error; empty: none
		plan      string        // accepted: the plan whose request on GET /x is checked
		ttl       time.Duration // accepted: that request's ttl
	}{
		{name: "a concurrency rule of the route's", doc: doc(bucket, bucket, "{path: /x, ttlMs: 3600000, rules: ["+streams+"]}"), plan: "free", ttl: time.Hour},
		{name: "a concurrency rule of the default plan's", doc: doc(bucket+", "+streams, bucket, "{path: /x, cost: 2, ttlMs: 90000}"), plan: "free", ttl: 90 * time.Second},
		{name: "a concurrency rule of another plan's: its requests", doc: doc(bucket, bucket+", "+streams, "{path: /x, ttlMs: 1}"), plan: "pro", ttl: time.Millisecond},
		{name: "a concurrency rule of another plan's: the default plan's hold nothing", doc: doc(bucket, bucket+", "+streams, "{path: /x, ttlMs: 1}"), plan: "free", ttl: 0},
		{name: "reserve and a concurrency rule: one ttl for both", doc: doc(bucket, bucket, "{path: /x, reserve: 10, ttlMs: 60000, rules: ["+streams+"]}"), plan: "free", ttl: time.Minute},
		{name: "no concurrency rule, no reserve", doc: doc(bucket, bucket, "{path: /x, ttlMs: 60000}"), plan: "free", ttl: 0,
			alone: "routes[0].ttlMs (line 3, column 28): " + idle},
		{name: "a cost and no concurrency rule", doc: doc(bucket, bucket, "{path: /x, cost: 2, ttlMs: 1000}"), plan: "pro", ttl: 0,
			alone: "routes[0].ttlMs (line 3, column 37): " + idle},
		{name: "another route's concurrency rule", doc: doc(bucket, bucket, "{path: /y, rules: ["+streams+"]}, {path: /x, ttlMs: 60000}"), plan: "free", ttl: 0,
			alone: "routes[1].ttlMs (line 3, column 82): " + idle},
		{name: "no concurrency rule, keys listed", doc: doc(bucket, bucket, "{path: /x, ttlMs: 60000}") + "keys: {0123456789abcdef0123456789abcdef: pro}\n",
			want: "routes[0].ttlMs (line 3, column 28): " + idle},
		{name: "ttlMs 0 with a concurrency rule", doc: doc(bucket+", "+streams, bucket, "{path: /x, ttlMs: 0}"),
			want: "routes[0].ttlMs (line 3, column 28): 0: want whole milliseconds from 1 to 3600000"},
		{name: "ttlMs above an hour with a concurrency rule", doc: doc(bucket, bucket, "{path: /x, ttlMs: 3600001, rules: ["+streams+"]}"),
			want: "routes[0].ttlMs (line 3, column 28): 3600001: want whole milliseconds from 1 to 3600000"},
		{name: "ttlMs 0 without a concurrency rule", doc: doc(bucket, bucket, "{path: /x, ttlMs: 0}"),
			want: "routes[0].ttlMs (line 3, column 28): 0: want whole milliseconds from 1 to 3600000"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c, err := config.Parse([]byte(tt.doc))
			if tt.want != "" {
				if !errors.Is(err, config.ErrConfig) || !strings.Contains(err.Error(), tt.want) {
					t.Fatalf("Parse() = %v, want ErrConfig mentioning %q", err, tt.want)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if err := c.CheckAlone(); tt.alone == "" && err != nil || tt.alone != "" && (!errors.Is(err, config.ErrConfig) || !strings.Contains(err.Error(), tt.alone)) {
				t.Fatalf("CheckAlone() = %v, want %q", err, tt.alone)
			}
			p, _ := c.Plan(tt.plan)
			q := c.Limits(p, "GET", "/x").Request("id")
			if q.TTL != tt.ttl || q.Holds() != (tt.ttl != 0) {
				t.Fatalf("request on plan %s: %+v (holds %v), want ttl %v", tt.plan, q, q.Holds(), tt.ttl)
			}
			if err := q.Validate(); err != nil {
				t.Fatalf("request on plan %s: %v", tt.plan, err)
			}
		})
	}
	t.Run("an identity's own concurrency rule", func(t *testing.T) {
		c, err := config.Parse([]byte(doc(bucket, bucket, "{path: /x, ttlMs: 90000}")))
		if err != nil {
			t.Fatal(err)
		}
		own, err := c.Override(c.DefaultPlan(), []bucketgate.Rule{{Name: "mine", Concurrency: 3}})
		if err != nil {
			t.Fatal(err)
		}
		if q := c.Limits(own, "GET", "/x").Request("id"); q.TTL != 90*time.Second || q.Validate() != nil {
			t.Fatalf("request of an identity of the default plan with a concurrency rule of its own: %+v (%v), want the route's ttl", q, q.Validate())
		}
	})
}
