package bucket_test

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/bucketgate/bucketgate"
	"github.com/bucketgate/bucketgate/internal/bucket"
	"github.com/bucketgate/bucketgate/internal/testkit/redistest"
)

// TestSecretRecheckWhileItsMasterStalls: in a cluster whose master of the secrets
// (bucket.SecretSlot, bucket.SecretsKeptSlot) stalls, an instance that holds them goes
// on reserving for the identities of the other masters: its read of them again
// (SecretRecheck), which that master does not answer, leaves the reserve half its time,
// as the idle check of a connection does. It took all of it, and the reserve failed
// at its deadline once a minute on each instance.
func TestSecretRecheckWhileItsMasterStalls(t *testing.T) {
	const masters = 3
	cluster := redistest.StartCluster(t, masters, 0)
	c := connect(t, map[string]string{"REDIS_ADDR": strings.Join(cluster.Seeds(), ",")})
	master := func(slot int) int { return slot * masters / bucket.Slots } // redistest gives each master an equal range
	stalled := master(bucket.SecretSlot)
	identity := ""
	for k := 0; identity == ""; k++ {
		if id := fmt.Sprintf("elsewhere-%d", k); master(bucket.Slot(id)) != stalled && master(bucket.Slot(id)) != master(bucket.SecretsKeptSlot) {
			identity = id
		}
	}
	k := new(clock)
	l := bucket.New(c, bucket.Clock(k.now))
	reserve := bucketgate.Request{Identity: identity, Rules: slowRules, Op: bucketgate.OpReserve, Cost: 1}
	if _, err := l.Decide(context.Background(), reserve); err != nil { // the secrets read
		t.Fatal(err)
	}
	cluster.Masters[stalled].Pause()
	defer cluster.Masters[stalled].Resume()
	k.advance(bucket.SecretRecheck)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second) // no timing: half of it is ample for one reserve
	defer cancel()
	if d, err := l.Decide(ctx, reserve); err != nil || !d.Allowed {
		t.Errorf("a reserve of %s, on a healthy master, while the secrets' master stalls: %+v, %v", identity, d, err)
	}
}
