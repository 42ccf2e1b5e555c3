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
// held for the route's ttlMs (the default when left out); LimitsAt gives back the very
// Limits of a route's number.
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
		{"reserve with a ttl", "POST", "/v1/chat", config.Limits{Plan: "llm", Cost: 1, Reserve: 4096, TTL: time.Minute, Route: 1}},
		{"reserve, default ttl", "POST", "/v1/complete", config.Limits{Plan: "llm", Cost: 1, Reserve: 512, Route: 2}},
		{"a cost", "GET", "/v1/models", config.Limits{Plan: "llm", Cost: 2, Route: 3}},
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
			at, ok := c.LimitsAt(p, l.Route)
			at.Rules = nil
			if !ok || !reflect.DeepEqual(at, tt.want) {
				t.Fatalf("LimitsAt(%d) = %+v, %v; want %+v", l.Route, at, ok, tt.want)
			}
		})
	}
	for _, route := range []int{-1, 4} {
		if l, ok := c.LimitsAt(p, route); ok {
			t.Errorf("LimitsAt(%d) = %+v, true: the document has no such route", route, l)
		}
	}
}

// A route's reserve and ttlMs are checked once, at load, with an error naming the field.
func TestRouteReserveErrors(t *testing.T) {
	plans := "defaultPlan: free\nplans: {free: [{name: b, capacity: 100, refillPerSecond: 1}]}\n"
	tests := []struct{ name, routes, want string }{
		{"reserve 0", "routes: [{path: /x, reserve: 0}]", "routes[0].reserve (line 3, column 30): 0: want an estimate of 1 token or more"},
		{"reserve negative", "routes: [{path: /x, reserve: -5}]", "routes[0].reserve (line 3, column 30): -5: want an estimate"},
		{"reserve not whole", "routes: [{path: /x, reserve: 1.5}]", `routes[0].reserve (line 3, column 30): "1.5": want a whole decimal number`},
		{"reserve above capacity", "routes: [{path: /x, reserve: 101}]", "routes[0] (line 3, column 10): with plans.free: invalid: cost 101 exceeds capacity 100 of rule b"},
		{"reserve with cost", "routes: [{path: /x, cost: 2, reserve: 10}]", "routes[0].reserve (line 3, column 39): not with cost"},
		{"ttlMs without reserve", "routes: [{path: /x, ttlMs: 1000}]", "routes[0].ttlMs (line 3, column 28): only with reserve"},
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
