package bucket_test

import (
	"context"
	"fmt"
	"testing"

	"github.com/redis/rueidis"

	"github.com/bucketgate/bucketgate"
	"github.com/bucketgate/bucketgate/internal/bucket"
	"github.com/bucketgate/bucketgate/internal/testkit/redistest"
)

// BenchmarkDecideBatchClusterRealRedis decides a batch of 100 checks on a 3-master
// cluster: each of its own identity; two each of 50 identities (50 transactions, each
// in a pipeline of its own); and all of one identity (one transaction). Its allocations
// say what a repeated identity costs on a cluster.
func BenchmarkDecideBatchClusterRealRedis(b *testing.B) {
	_, c := benchCluster(b)
	l := bucket.New(c)
	ctx := context.Background()
	spreadBatches(b, func(b *testing.B, qs []bucketgate.Request) {
		for b.Loop() {
			if _, errs := l.DecideBatch(ctx, qs); errs[0] != nil {
				b.Fatal(errs[0])
			}
		}
	})
}

// BenchmarkDecideBatchAfterFlushClusterRealRedis decides the batches of
// BenchmarkDecideBatchClusterRealRedis on a 3-master cluster whose every master has
// just lost the script (SCRIPT FLUSH, untimed), and reports the calls with the script's
// text (EVAL) each batch sent, one a round of load's: a round more, and a text, for each
// master that lacks the script (3), and one more for each round in which a transaction
// reached a master before the text sent to it at the same time (see doMulti), refused
// again.
func BenchmarkDecideBatchAfterFlushClusterRealRedis(b *testing.B) {
	cluster, c := benchCluster(b)
	counted := &counting{Client: c}
	l := bucket.New(counted)
	ctx := context.Background()
	spreadBatches(b, func(b *testing.B, qs []bucketgate.Request) {
		var batches, texts int
		for b.Loop() {
			b.StopTimer()
			for _, m := range cluster.Masters {
				if _, err := m.Command(ctx, "SCRIPT", "FLUSH"); err != nil {
					b.Fatal(err)
				}
			}
			counted.mu.Lock()
			counted.texts = 0
			counted.mu.Unlock()
			b.StartTimer()
			if _, errs := l.DecideBatch(ctx, qs); errs[0] != nil {
				b.Fatal(errs[0])
			}
			counted.mu.Lock()
			batches, texts = batches+1, texts+counted.texts
			counted.mu.Unlock()
		}
		b.ReportMetric(float64(texts)/float64(batches), "texts/op")
	})
}

// benchCluster starts a 3-master cluster and returns it with a client of it, closed when
// b ends.
func benchCluster(b *testing.B) (*redistest.Cluster, rueidis.Client) {
	cluster := redistest.StartCluster(b, 3, 0)
	c, err := rueidis.NewClient(rueidis.ClientOption{InitAddress: cluster.Seeds(), DisableCache: true})
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(c.Close)
	return cluster, c
}

// spreadBatches runs run, with allocations reported, as a sub-benchmark for each of the
// cluster benchmarks' batches: benchBatch's 100 checks, each of its own identity; two
// each of 50 identities (50 transactions); all of one identity (one transaction).
func spreadBatches(b *testing.B, run func(b *testing.B, qs []bucketgate.Request)) {
	for _, bc := range []struct {
		name       string
		identities int // the batch's, each sent as often as the others
	}{
		{"each-its-own-identity", 100},
		{"two-each-of-50-identities", 50},
		{"all-of-one-identity", 1},
	} {
		b.Run(bc.name, func(b *testing.B) {
			qs := benchBatch(benchBurst)
			for i := range qs {
				qs[i].Identity = fmt.Sprintf("bench-%d", i%bc.identities)
			}
			b.ReportAllocs()
			run(b, qs)
		})
	}
}
