package binaries_test

import (
	"context"
	"encoding/json"
	"os"
	"regexp"
	"slices"
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
// authorizer's check; the check function's check with a requestId and its replay, a
// peek, reserve and settle, reserve and cancel, lease and release, refund, reset, a
// batch of two checks of one key (a transaction: MULTI, EXEC) and usage; the script
// sent again as text after SCRIPT FLUSH), each answered by Redis and
// not by the failure policy, as a user whose ACL is exactly the cache user's of the
// template, or the one docs/deploy.md gives for a Redis of your own and the error of a
// refused command (redisconn.MinimalACL), on a standalone server, over TLS and on a
// cluster. The servers refused nothing (ACL LOG: not even a command whose refusal the
// client ignores) but, to MinimalACL, the INFO it leaves out (the eviction policy
// unknown), and every connection of the functions was the user's.
func TestOperationsAsRestrictedUser(t *testing.T) {
	access := []struct {
		name, acl string
		refused   []string // what the servers may refuse: ACL LOG's objects
	}{
		{"the template's cache user", templateAccessString(t), nil},
		{"deploy.md's user of your own cache", redisconn.MinimalACL, []string{"info"}},
	}
	deployments := []struct {
		name  string
		start func(t *testing.T) (nodes []*redistest.Server, env map[string]string)
	}{
		{"standalone", func(t *testing.T) ([]*redistest.Server, map[string]string) {
			s := redistest.Start(t)
			return []*redistest.Server{s}, map[string]string{}
		}},
		{"TLS", func(t *testing.T) ([]*redistest.Server, map[string]string) {
			s, ca := redistest.StartTLS(t)
			return []*redistest.Server{s}, map[string]string{"REDIS_TLS": "true", "SSL_CERT_FILE": ca.CAFile}
		}},
		{"cluster", func(t *testing.T) ([]*redistest.Server, map[string]string) {
			c := redistest.StartCluster(t, 3, 0)
			return c.Masters, map[string]string{"REDIS_ADDR": strings.Join(c.Seeds(), ",")}
		}},
	}
	for _, d := range deployments {
		for _, a := range access {
			t.Run(d.name+"/"+a.name, func(t *testing.T) {
				nodes, env := d.start(t)
				for _, n := range nodes { // the default user stays the test's, the functions' is limiter
					adminDo(t, n, append(append([]string{"ACL", "SETUSER", "limiter"}, strings.Fields(a.acl)...), ">pw")...)
				}
				env["REDIS_USERNAME"], env["REDIS_PASSWORD"] = "limiter", "pw"
				authorizer, check := binariesOn(t, nodes[0], slowFree, env)
				runEveryOperation(t, authorizer, check, func() {
					for _, n := range nodes {
						adminDo(t, n, "SCRIPT", "FLUSH")
					}
				})
				for _, n := range nodes {
					if clients := adminDo(t, n, "CLIENT", "LIST"); strings.Count(clients, "user=default") != 1 {
						t.Errorf("%s: a connection but this one is not limiter's:\n%s", n.Addr, clients)
					}
				}
				authorizer.stop()
				check.stop()
				loaded := 0 // the nodes that have the script again: its text was sent (EVAL)
				for _, n := range nodes {
					refusals, err := n.ACLRefused(context.Background())
					if err != nil {
						t.Fatal(err)
					}
					for _, refused := range refusals {
						if !slices.Contains(a.refused, refused) {
							t.Errorf("%s refused %s to the functions", n.Addr, refused)
						}
					}
					if adminDo(t, n, "SCRIPT", "EXISTS", lua.BucketSHA1) == "1" {
						loaded++
					}
				}
				if loaded == 0 {
					t.Error("no EVAL after SCRIPT FLUSH: the script's text was not sent again")
				}
				for name, f := range map[string]*function{"authorizer": authorizer, "check": check} {
					if logs := f.stderr.String(); strings.Contains(logs, `"level":"WARN"`) || strings.Contains(logs, "NOPERM") {
						t.Errorf("%s warned:\n%s", name, logs)
					}
				}
			})
		}
	}
}

// runEveryOperation runs every kind of call of both functions, each answered by Redis,
// and flush (the scripts forgotten) before the calls after the first replay and before
// the batch.
func runEveryOperation(t *testing.T, authorizer, check *function, flush func()) {
	t.Helper()
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
	flush()
	call("peek", `{`+bucket+`,"cost":0}`, left(95))
	res := call("reserve", `{`+bucket+`,"op":"reserve","cost":20}`, left(75))
	call("settle", `{`+bucket+`,"op":"settle","reservation":"`+res.Reservation+`","cost":10}`, left(85))
	res = call("reserve to cancel", `{`+bucket+`,"op":"reserve","cost":20}`, left(65))
	call("cancel", `{`+bucket+`,"op":"cancel","reservation":"`+res.Reservation+`"}`, left(85))
	lease := call("lease", `{`+streams+`,"ttlMs":60000}`, left(1))
	call("release", `{`+streams+`,"op":"release","lease":"`+lease.Lease+`"}`, func(r checkapi.Response) bool { return r.Released != nil && *r.Released })
	call("refund", `{`+bucket+`,"op":"refund","cost":3}`, left(88))
	call("reset", `{`+bucket+`,"op":"reset"}`, left(100))
	flush()
	var batch checkapi.BatchResult
	out, err := check.invoke(t, []byte(`{"checks":[{`+bucket+`},{`+bucket+`}]}`))
	if err != nil || json.Unmarshal(out, &batch) != nil || len(batch.Results) != 2 || !left(99)(batch.Results[0]) || !left(98)(batch.Results[1]) {
		t.Fatalf("a batch of two checks of one key: %s, %v", out, err)
	}
	if out, err := check.invoke(t, []byte(`{"key":"acl-app","op":"usage"}`)); err != nil || !strings.Contains(string(out), `"total":{"allowed":6,`) {
		t.Fatalf("usage: %s, %v", out, err)
	}
}

// adminDo sends a command to node as its default user, the test's, and returns the
// reply's text.
func adminDo(t *testing.T, node *redistest.Server, args ...string) string {
	t.Helper()
	got, err := node.Command(context.Background(), args...)
	if err != nil {
		t.Fatal(err)
	}
	return got
}

// TestTemplateCacheUserGrantsNoMore: the template's cache user may run what the
// functions send (their commands, those their script calls, the cluster's topology,
// the eviction policy's INFO) and nothing they never send: no administrative command,
// no key but the limiter's, no listing of keys, no pub/sub, no function or script
// management, no other data type on the limiter's keys. A function's role may sign
// tokens for this user: whatever runs with the role must not be able to wipe,
// reconfigure, watch or enumerate the cache. What the script needs cannot be refused
// to its user outside the script: EVAL of a script of its own (the script's text is
// sent again after NOSCRIPT), and the script's commands on the limiter's keys; nor,
// without naming CLUSTER's subcommands, its read ones.
func TestTemplateCacheUserGrantsNoMore(t *testing.T) {
	// As on a serverless cache, a user's channels are all channels unless it says not.
	redis := redistest.Start(t, append([]string{"--acl-pubsub-default", "allchannels", "--user", "limiter"}, strings.Fields(templateAccessString(t))...)...)
	key, leases := bucket.Key("acl-app"), bucket.LeaseKey("acl-app", "streams")
	tests := []struct {
		name    string
		cmd     []string
		allowed bool
	}{
		{"a script call on a limiter key", []string{"EVALSHA", lua.BucketSHA1, "1", key}, true},
		{"the script's text", []string{"EVAL", lua.BucketSource, "1", key}, true},
		{"a script not bucketgate's (EVAL must be allowed)", []string{"EVAL", "return 1", "0"}, true},
		{"a command the script calls, outside it", []string{"HSET", key, "f", "v"}, true},
		{"the idle connection check", []string{"EXISTS", key}, true},
		{"the idle connection check's write, never a change (a standalone replica refuses it)", []string{"PEXPIREAT", key, "1", "GT"}, true},
		{"the usage's transaction", []string{"MULTI"}, true},
		{"the usage's read", []string{"HMGET", bucket.UsageKey("acl-app"), "f"}, true},
		{"the script's clock", []string{"TIME"}, true},
		{"the usage's clock, on the identity's node", []string{"EVAL", "return redis.call('TIME')", "1", key}, true},
		{"the leases read", []string{"ZRANGE", leases, "0", "-1", "WITHSCORES"}, true},
		{"the leases reset", []string{"DEL", leases}, true},
		{"the shared secret", []string{"SET", bucket.SecretKey, "x", "NX"}, true},
		{"the secrets kept", []string{"ZADD", bucket.SecretsKeptKey, "GT", "1", "x"}, true},
		{"the secrets kept's expiry, never sooner", []string{"PEXPIRE", bucket.SecretsKeptKey, "1000", "GT"}, true},
		{"the secrets kept past their time", []string{"ZREMRANGEBYSCORE", bucket.SecretsKeptKey, "-inf", "1"}, true},
		{"the clock of the secrets kept, on their node", []string{"EVAL", "return redis.call('TIME')", "1", bucket.SecretsKeptKey}, true},
		{"the keepalive", []string{"PING"}, true},
		{"the eviction policy", []string{"INFO", "memory"}, true},
		{"the cluster's shards", []string{"CLUSTER", "SHARDS"}, true},
		{"the cluster's slots", []string{"CLUSTER", "SLOTS"}, true},
		{"a key of a slot moving", []string{"ASKING"}, true},
		{"a slot's key names (+cluster grants CLUSTER's read subcommands)", []string{"CLUSTER", "GETKEYSINSLOT", "0", "10"}, true},
		{"wiping the cache", []string{"FLUSHALL"}, false},
		{"changing the eviction policy", []string{"CONFIG", "SET", "maxmemory-policy", "allkeys-lru"}, false},
		{"listing every key", []string{"KEYS", "*"}, false},
		{"listing every key page by page", []string{"SCAN", "0"}, false},
		{"a key not the limiter's", []string{"SET", "other-app", "x"}, false},
		{"another user", []string{"ACL", "SETUSER", "mallory", "on"}, false},
		{"watching every command", []string{"MONITOR"}, false},
		{"closing other connections", []string{"CLIENT", "KILL", "USER", "limiter"}, false},
		{"naming its connection", []string{"CLIENT", "SETNAME", "x"}, false},
		{"moving a cluster's slot", []string{"CLUSTER", "SETSLOT", "0", "STABLE"}, false},
		{"publishing", []string{"PUBLISH", "channel", "x"}, false},
		{"subscribing", []string{"SUBSCRIBE", "channel"}, false},
		{"loading a function", []string{"FUNCTION", "LOAD", "#!lua name=x\nredis.register_function('x', function() return 1 end)"}, false},
		{"deleting every function", []string{"FUNCTION", "FLUSH"}, false},
		{"forgetting every script", []string{"SCRIPT", "FLUSH"}, false},
		{"loading a script", []string{"SCRIPT", "LOAD", "return 1"}, false},
		{"another type on a limiter key", []string{"XADD", "bg:x", "*", "f", "v"}, false},
		{"renaming a limiter key", []string{"RENAME", key, "bg:x"}, false},
		{"a limiter key's serialized value", []string{"DUMP", key}, false},
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
