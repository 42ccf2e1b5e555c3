package app_test

import (
	"context"
	"strings"
	"testing"

	"github.com/bucketgate/bucketgate/internal/app"
	"github.com/bucketgate/bucketgate/internal/bucket"
	"github.com/bucketgate/bucketgate/internal/config"
	"github.com/bucketgate/bucketgate/internal/settings"
	"github.com/bucketgate/bucketgate/internal/testkit/redistest"
)

func env(kv map[string]string) func(string) string { return func(k string) string { return kv[k] } }

func TestNewDeciderErrorsSayWhatToSet(t *testing.T) {
	tests := []struct {
		name string
		env  map[string]string
		want []string
	}{
		{"no Redis address", map[string]string{}, []string{settings.EnvRedisAddr, "host:port"}},
		{"bad fail mode", map[string]string{settings.EnvRedisAddr: "127.0.0.1:1", settings.EnvFailMode: "sideways"}, []string{settings.EnvFailMode}},
		{"bad timeout", map[string]string{settings.EnvRedisAddr: "127.0.0.1:1", settings.EnvTimeoutMS: "-5"}, []string{settings.EnvTimeoutMS}},
		// The configuration is checked before any connection: the unreachable address
		// is not what the error is about.
		{"bad configuration", map[string]string{settings.EnvRedisAddr: "127.0.0.1:1", config.EnvInline: "defaultPlan: gold\nplans: {free: [{name: burst, capacity: 10, refillPerSecond: 1}]}"},
			[]string{config.EnvInline, "defaultPlan", "gold"}},
		{"missing configuration file", map[string]string{config.EnvFile: "/nonexistent/bucketgate.yaml"}, []string{config.EnvFile}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			g, _, _, err := app.NewDecider(env(tc.env))
			if err == nil || g != nil {
				t.Fatalf("NewDecider = %v, %v; want an error", g, err)
			}
			for _, w := range tc.want {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("error %q does not mention %q", err, w)
				}
			}
		})
	}
}

func TestNewDeciderDecides(t *testing.T) {
	m, _ := redistest.Mini(t)
	g, cfg, s, err := app.NewDecider(env(map[string]string{
		settings.EnvRedisAddr: m.Addr(),
		settings.EnvFailMode:  settings.FailOpen,
		settings.EnvTimeoutMS: "2000", // generous: a loaded machine must not turn this into degraded
	}))
	if err != nil {
		t.Fatal(err)
	}
	if !s.FailOpen || len(s.RedisAddrs) != 1 || s.RedisAddrs[0] != m.Addr() {
		t.Errorf("settings %+v", s)
	}
	limits := cfg.Limits(cfg.DefaultPlan(), "GET", "/")
	if limits.Plan != "free" {
		t.Fatalf("default configuration plan %q, want free", limits.Plan)
	}
	r, err := g.Decide(context.Background(), bucket.Request{Identity: "ip:192.0.2.1", Rules: limits.Rules, Cost: limits.Cost})
	if err != nil || !r.Allowed || r.Reason != bucket.ReasonOK || r.Remaining != 9 {
		t.Fatalf("Decide = %+v, %v", r, err)
	}
	if !m.Exists(bucket.Key("ip:192.0.2.1")) {
		t.Fatalf("no bucket written; keys %v", m.Keys())
	}
}
