package redistest

import (
	"testing"

	"github.com/alicebob/miniredis/v2"
	"github.com/redis/rueidis"
)

// Mini starts an in-process miniredis for a fast unit test and returns it with a
// rueidis client for it; both close when t ends. miniredis answers TIME from SetTime,
// so a test controls the buckets' clock with m.SetTime.
func Mini(t testing.TB) (*miniredis.Miniredis, rueidis.Client) {
	t.Helper()
	m := miniredis.RunT(t)
	return m, Client(t, m.Addr())
}
