package bucket_test

import (
	"context"
	"fmt"
	"testing"

	"github.com/redis/rueidis"

	"github.com/bucketgate/bucketgate/internal/bucket"
	"github.com/bucketgate/bucketgate/internal/testkit/redistest"
)

// BenchmarkDecideBatchClusterRealRedis decides a batch of 100 checks on a 3-master
// cluster: each of its own identity; two each of 50 identities (50 transactions, each
// in a pipeline of its own); and all of one identity (one transaction). Its allocations
// say what a repeated identity costs on a cluster.
func BenchmarkDecideBatchClusterRealRedis(b *testing.B) {
	cluster := redistest.StartCluster(b, 3, 0)
	c, err := rueidis.NewClient(rueidis.ClientOption{InitAddress: cluster.Seeds(), DisableCache: true})
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(c.Close)
	l := bucket.New(c)
	ctx := context.Background()
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
			for b.Loop() {
				if _, errs := l.DecideBatch(ctx, qs); errs[0] != nil {
					b.Fatal(errs[0])
				}
			}
		})
	}
}
