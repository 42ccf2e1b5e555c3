package bucket_test

import (
	"context"
	"crypto/sha1"
	"encoding/hex"
	"os"
	"slices"
	"strings"
	"testing"

	"github.com/redis/rueidis"

	"github.com/bucketgate/bucketgate"
	"github.com/bucketgate/bucketgate/internal/testkit/redistest"
)

// A Redis of your own whose user is narrowed to redisconn.MinimalACL (docs/deploy.md's
// string) before the previous release's functions are updated serves them: their
// script's calls (EVALSHA, then EVAL on NOSCRIPT; a check, a refund, a reset) are all
// answered, as a user of that ACL, by a client set up as that release's was (rueidis's
// default handshake). The server refuses nothing but the CLIENT SETINFO of each
// connection (Redis 7.2 and later, Valkey), which the client ignores and ACL LOG counts;
// CHANGELOG.md's upgrade notes say so.
func TestPreviousReleaseUnderMinimalACL(t *testing.T) {
	srv := redistest.Start(t)
	ctx := context.Background()
	addLimiterUser(t, srv)
	c, err := rueidis.NewClient(rueidis.ClientOption{InitAddress: []string{srv.Addr}, DisableCache: true, ForceSingleClient: true,
		Username: "limiter", Password: "pw", PipelineMultiplex: -1}) // the previous release's options but the address and the user
	if err != nil {
		t.Fatalf("the previous release's client as a user of MinimalACL: %v", err)
	}
	defer c.Close()
	sum := sha1.Sum([]byte(previousScript))
	err = c.Do(ctx, c.B().Evalsha().Sha1(hex.EncodeToString(sum[:])).Numkeys(1).Key("bg:{key:acl}").Build()).Error()
	if e, ok := rueidis.IsRedisErr(err); !ok || !e.IsNoScript() {
		t.Fatalf("EVALSHA of the previous script before it is loaded: %v, want NOSCRIPT", err)
	}
	burst := bucketgate.Rule{Name: "burst", Capacity: 8, RefillPerSecond: 2}
	cases := []struct {
		name string
		q    bucketgate.Request
	}{
		{"check", bucketgate.Request{Cost: 3}},
		{"refund", bucketgate.Request{Op: bucketgate.OpRefund, Cost: 1}},
		{"reset", bucketgate.Request{Op: bucketgate.OpReset}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			q := tc.q
			q.Identity, q.Rules = "key:0123456789abcdef0123456789abcdef", []bucketgate.Rule{burst}
			oldCall(t, c, q) // fails t on any error
		})
	}
	refusals, err := srv.ACLRefused(ctx)
	if err != nil {
		t.Fatal(err)
	}
	for _, refused := range refusals {
		if refused != "client|setinfo" {
			t.Errorf("the server refused %s to the previous release (ACL LOG's objects: %v)", refused, refusals)
		}
	}
	_, err = srv.Command(ctx, "CLIENT", "SETINFO", "LIB-NAME", "probe") // as the default user: known to this server?
	if known := err == nil; known != slices.Contains(refusals, "client|setinfo") {
		t.Errorf("CLIENT SETINFO known to the server: %v (%v); refused to the previous release: %v", known, err, refusals)
	}
	changelog, err := os.ReadFile("../../CHANGELOG.md")
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(changelog), "Upgrading from 0.2 with a Redis of your own whose user you narrow to this string") ||
		!strings.Contains(string(changelog), "`CLIENT SETINFO` of each connection") {
		t.Error("CHANGELOG.md does not say what the previous release's functions meet under the narrowed ACL")
	}
}
