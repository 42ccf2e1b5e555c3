package binaries_test

import (
	"context"
	"os"
	"regexp"
	"strings"
	"testing"

	"github.com/bucketgate/bucketgate/checkapi"
	"github.com/bucketgate/bucketgate/internal/bucket"
	"github.com/bucketgate/bucketgate/internal/lua"
	"github.com/bucketgate/bucketgate/internal/redisconn"
	"github.com/bucketgate/bucketgate/internal/testkit/redistest"
)

// templateAccessString returns the AccessString the template gives the cache user it
// creates for the functions.
func templateAccessString(t *testing.T) string {
	t.Helper()
	b, err := os.ReadFile("../../template.yaml")
	if err != nil {
		t.Fatal(err)
	}
	m := regexp.MustCompile(`(?m)^  CacheUser:\n(?:    .*\n)*?      AccessString: (.+)\n`).FindSubmatch(b)
	if m == nil {
		t.Fatal("template.yaml: no AccessString in CacheUser")
	}
	return string(m[1])
}

// TestOperationsAsRestrictedUser: every kind of call the functions make (the
// authorizer's check; the check function's check with a requestId, reserve and settle,
// lease and release, usage, refund and reset), each answered by Redis and not by the
// failure policy, as a user whose ACL is exactly the cache user's of the template, or
// the narrower one docs/deploy.md gives for a cache of your own and the error of a
// refused command (redisconn.MinimalACL), with the default user off, as on the
// created cache.
func TestOperationsAsRestrictedUser(t *testing.T) {
	tests := []struct{ name, access string }{
		{"the template's cache user", templateAccessString(t)},
		{"deploy.md's user of your own cache", redisconn.MinimalACL},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			args := append([]string{"--user", "limiter"}, strings.Fields(tc.access)...)
			redis := redistest.Start(t, append(args, ">pw", "--user", "default", "off")...)
			authorizer, check := binariesOn(t, redis, slowFree, map[string]string{"REDIS_USERNAME": "limiter", "REDIS_PASSWORD": "pw"})
			if ok, ctx := authorize(t, authorizer); !ok || ctx["remaining"] != 2.0 {
				t.Fatalf("authorizer: allowed %v, context %v: want 2 left", ok, ctx)
			}
			bucket := `"key":"acl-app","rules":[{"name":"tokens","capacity":100,"refillPerSecond":0.001}]`
			streams := `"key":"acl-app","rules":[{"name":"streams","concurrency":2}]`
			call := func(step, payload string, want func(r checkapi.Response) bool) checkapi.Response {
				t.Helper()
				r := checkOK(t, check, payload)
				if r.Reason == checkapi.ReasonUnavailable || r.Reason == checkapi.ReasonDegraded || !want(r) {
					t.Fatalf("%s: %+v", step, r)
				}
				return r
			}
			left := func(n int64) func(checkapi.Response) bool {
				return func(r checkapi.Response) bool { return r.Allowed && r.Remaining == n }
			}
			call("check", `{`+bucket+`,"cost":5,"requestId":"acl-1"}`, left(95))
			call("check again", `{`+bucket+`,"cost":5,"requestId":"acl-1"}`, func(r checkapi.Response) bool { return r.Replayed && r.Remaining == 95 })
			res := call("reserve", `{`+bucket+`,"op":"reserve","cost":20}`, left(75))
			call("settle", `{`+bucket+`,"op":"settle","reservation":"`+res.Reservation+`","cost":10}`, left(85))
			lease := call("lease", `{`+streams+`,"ttlMs":60000}`, left(1))
			call("release", `{`+streams+`,"op":"release","lease":"`+lease.Lease+`"}`, func(r checkapi.Response) bool { return r.Released != nil && *r.Released })
			call("refund", `{`+bucket+`,"op":"refund","cost":3}`, left(88))
			call("reset", `{`+bucket+`,"op":"reset"}`, left(100))
			if out, err := check.invoke(t, []byte(`{"key":"acl-app","op":"usage"}`)); err != nil || !strings.Contains(string(out), `"total":{"allowed":3,`) {
				t.Fatalf("usage: %s, %v", out, err)
			}
			authorizer.stop()
			check.stop()
			for name, f := range map[string]*function{"authorizer": authorizer, "check": check} {
				if logs := f.stderr.String(); strings.Contains(logs, `"level":"WARN"`) || strings.Contains(logs, "NOPERM") {
					t.Errorf("%s warned:\n%s", name, logs)
				}
			}
		})
	}
}

// TestTemplateCacheUserGrantsNoMore: the template's cache user may run, besides the
// operations TestOperationsAsRestrictedUser runs, what the functions send on connecting
// (the cluster's topology, the eviction policy's INFO), and nothing they never send: no
// administrative command, no key but the limiter's. A function's role may sign tokens
// for this user: whatever runs with the role must not be able to wipe or reconfigure
// the cache.
func TestTemplateCacheUserGrantsNoMore(t *testing.T) {
	redis := redistest.Start(t, append([]string{"--user", "limiter"}, strings.Fields(templateAccessString(t))...)...)
	tests := []struct {
		name    string
		cmd     []string
		allowed bool
	}{
		{"a script call on a limiter key", []string{"EVALSHA", lua.BucketSHA1, "1", bucket.Key("acl-app")}, true},
		{"the shared secret", []string{"SET", bucket.SecretKey, "x", "NX"}, true},
		{"the eviction policy", []string{"INFO", "memory"}, true},
		{"the cluster's shards", []string{"CLUSTER", "SHARDS"}, true},
		{"the cluster's slots", []string{"CLUSTER", "SLOTS"}, true},
		{"wiping the cache", []string{"FLUSHALL"}, false},
		{"changing the eviction policy", []string{"CONFIG", "SET", "maxmemory-policy", "allkeys-lru"}, false},
		{"listing every key", []string{"KEYS", "*"}, false},
		{"a key not the limiter's", []string{"SET", "other-app", "x"}, false},
		{"another user", []string{"ACL", "SETUSER", "mallory", "on"}, false},
		{"watching every command", []string{"MONITOR"}, false},
		{"closing other connections", []string{"CLIENT", "KILL", "USER", "limiter"}, false},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got, err := redis.Command(context.Background(), append([]string{"ACL", "DRYRUN", "limiter"}, tc.cmd...)...)
			if err != nil {
				t.Fatal(err)
			}
			if allowed := got == "OK"; allowed != tc.allowed {
				t.Errorf("%s: %q, want allowed %v", strings.Join(tc.cmd, " "), got, tc.allowed)
			}
		})
	}
}
