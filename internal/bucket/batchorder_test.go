package bucket_test

import (
	"context"
	"strings"
	"sync"
	"testing"

	"github.com/redis/rueidis"

	"github.com/bucketgate/bucketgate"
	"github.com/bucketgate/bucketgate/internal/bucket"
	"github.com/bucketgate/bucketgate/internal/lua"
	"github.com/bucketgate/bucketgate/internal/testkit/redistest"
)

// TestDecideBatchInOrderWhileScriptReloads: a batch decides the requests of one identity
// in its order even when the server lost the script and another client loads it again
// while Redis is still reading the batch (longer than one 16 KB read of its query
// buffer): no later request runs before an earlier one was refused with NOSCRIPT.
func TestDecideBatchInOrderWhileScriptReloads(t *testing.T) {
	srv := redistest.Start(t)
	inOrderWhileReloading(t, redistest.Client(t, srv.Addr), []*redistest.Server{srv})
}

// inOrderWhileReloading decides batches of a reset and 99 checks of one long identity
// with three rules on c while a client of each of masters flushes the script cache and
// loads the script again, as fast as it can, and fails unless every check's Remaining
// follows the batch's order: the reset first, then one token less each.
func inOrderWhileReloading(t *testing.T, c rueidis.Client, masters []*redistest.Server) {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	var wg sync.WaitGroup
	defer wg.Wait()
	defer cancel()
	for _, m := range masters {
		other, err := rueidis.NewClient(rueidis.ClientOption{InitAddress: []string{m.Addr}, ForceSingleClient: true, DisableCache: true})
		if err != nil {
			t.Fatal(err)
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			defer other.Close()
			for ctx.Err() == nil {
				other.Do(ctx, other.B().ScriptFlush().Build())
				other.Do(ctx, other.B().ScriptLoad().Script(lua.BucketSource).Build())
			}
		}()
	}
	rules := []bucketgate.Rule{
		{Name: "burst", Capacity: 1000, RefillPerSecond: 0.001},
		{Name: "minute", Capacity: 2000, RefillPerSecond: 0.001},
		{Name: "hour", Capacity: 3000, RefillPerSecond: 0.001},
	}
	l := bucket.New(c)
	for batch := range 100 {
		qs := make([]bucketgate.Request, 100)
		for i := range qs {
			qs[i] = bucketgate.Request{Identity: strings.Repeat("long identity ", 70)[:900], Rules: rules, Cost: 1}
		}
		qs[0].Op, qs[0].Cost = bucketgate.OpReset, 0
		decisions, errs := l.DecideBatch(context.Background(), qs)
		for i, d := range decisions {
			if errs[i] != nil {
				t.Fatalf("batch %d, request %d: %v", batch, i, errs[i])
			}
			if want := rules[0].Capacity - int64(i); i > 0 && (!d.Allowed || d.Remaining != want) {
				t.Fatalf("batch %d, check %d after the reset: %+v, want Remaining %d (decided in the batch's order)", batch, i, d, want)
			}
		}
	}
}
