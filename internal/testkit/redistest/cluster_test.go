package redistest_test

import (
	"context"
	"strconv"
	"strings"
	"testing"

	"github.com/bucketgate/bucketgate/internal/testkit/redistest"
)

func TestClusterWithReplicas(t *testing.T) {
	const masters, perMaster = 3, 1
	c := redistest.StartCluster(t, masters, perMaster)
	if len(c.Masters) != masters || len(c.Replicas) != masters*perMaster {
		t.Fatalf("%d masters, %d replicas", len(c.Masters), len(c.Replicas))
	}
	ctx := context.Background()
	for i, r := range c.Replicas {
		info, err := r.Command(ctx, "INFO", "replication")
		if err != nil {
			t.Fatal(err)
		}
		master := c.Masters[i/perMaster]
		if !strings.Contains(info, "role:slave") || !strings.Contains(info, "master_port:"+master.Addr[strings.LastIndexByte(master.Addr, ':')+1:]) {
			t.Fatalf("replica %d (%s) does not replicate %s:\n%s", i, r.Addr, master.Addr, info)
		}
	}
	info, err := c.Replicas[0].Command(ctx, "CLUSTER", "INFO")
	if err != nil || !strings.Contains(info, "cluster_known_nodes:"+strconv.Itoa(masters*(1+perMaster))) {
		t.Fatalf("replica's CLUSTER INFO: %v\n%s", err, info)
	}
}
