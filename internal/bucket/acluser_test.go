package bucket_test

import (
	"context"
	"strings"
	"testing"

	"github.com/redis/rueidis"

	"github.com/bucketgate/bucketgate/internal/redisconn"
	"github.com/bucketgate/bucketgate/internal/testkit/redistest"
)

// addLimiterUser gives node the user "limiter", password "pw", allowed what
// redisconn.MinimalACL allows: the functions' user on a cache of your own.
func addLimiterUser(t *testing.T, node *redistest.Server) {
	t.Helper()
	args := append(append([]string{"ACL", "SETUSER", "limiter"}, strings.Fields(redisconn.MinimalACL)...), ">pw")
	if _, err := node.Command(context.Background(), args...); err != nil {
		t.Fatal(err)
	}
}

// limiterUserClient adds the user of addLimiterUser to srv and is a client of srv as
// that user, set up as redisconn's, closed when the test ends.
func limiterUserClient(t *testing.T, srv *redistest.Server) rueidis.Client {
	t.Helper()
	addLimiterUser(t, srv)
	c, err := rueidis.NewClient(rueidis.ClientOption{InitAddress: []string{srv.Addr}, DisableCache: true,
		Username: "limiter", Password: "pw", ClientSetInfo: rueidis.DisableClientSetInfo})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(c.Close)
	return c
}
