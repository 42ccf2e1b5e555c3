package bucket_test

import (
	"context"
	"strings"
	"testing"

	"github.com/bucketgate/bucketgate/internal/bucket"
	"github.com/bucketgate/bucketgate/internal/testkit/redistest"
)

// TestSecretChangeUnderMinimalACL: a change of the secret, after which each instance
// writes the one it signed with to the kept ones (SecretsKeptKey), sends nothing a user
// of redisconn.MinimalACL (docs/deploy.md's, and the template's cache user's but INFO)
// may not run: ACL LOG stays empty (each refusal counts there, and in ElastiCache's
// CommandAuthorizationFailures), and an instance started since verifies the ids signed
// before the change. The write trimmed the kept secrets with ZREMRANGEBYRANK, which the
// ACL does not grant.
func TestSecretChangeUnderMinimalACL(t *testing.T) {
	srv := redistest.Start(t)
	ctx := context.Background()
	c := limiterUserClient(t, srv)
	f := &secretFleet{t: t, c: c, clock: new(clock)}
	a := f.instance()
	before := f.reserve(a)
	f.run(f.c.B().Set().Key(bucket.SecretKey).Value(strings.Repeat("7", 64)).Build()) // another instance's
	f.clock.advance(bucket.SecretRecheck)
	f.reserve(a) // signs with the new secret, and writes its own as kept
	f.settles("an instance started since, of the id signed before the change", f.instance(), before)
	refused, err := srv.ACLRefused(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if len(refused) > 0 {
		t.Errorf("the server refused %q to the limiter's user", refused)
	}
}
