package redistest

import (
	"context"
	"fmt"
	"strconv"
	"strings"
	"time"
)

// Cluster sizing and timing.
const (
	// ClusterSlots is the number of hash slots of a Redis cluster.
	ClusterSlots = 16384
	// NodeTimeout is the cluster-node-timeout of test clusters: how long a master may be
	// unreachable before its replica takes over.
	NodeTimeout = 2 * time.Second
	// clusterTimeout bounds how long a cluster may take to agree on its slots.
	clusterTimeout = 30 * time.Second
	// pollInterval is how often cluster state is polled while waiting.
	pollInterval = 50 * time.Millisecond
)

// Cluster is a Redis cluster of real redis-server processes on loopback, each master
// owning an equal range of slots.
type Cluster struct {
	// Masters own the slots, in slot order.
	Masters []*Server
	// Replicas replicate the masters: Replicas[i*perMaster+j] is the j-th replica of
	// Masters[i].
	Replicas []*Server
}

// NewCluster starts masters masters with replicasPerMaster replicas each, assigns the
// slots, joins the nodes and waits until every node reports cluster_state:ok and every
// replica's link to its master is up. Close stops every node.
func NewCluster(masters, replicasPerMaster int) (*Cluster, error) {
	if masters < 1 || replicasPerMaster < 0 {
		return nil, fmt.Errorf("redistest: cluster of %d masters with %d replicas each: want at least 1 master", masters, replicasPerMaster)
	}
	c := &Cluster{}
	for i := range masters * (1 + replicasPerMaster) {
		n, err := newNode()
		if err != nil {
			c.Close()
			return nil, err
		}
		if i < masters {
			c.Masters = append(c.Masters, n)
		} else {
			c.Replicas = append(c.Replicas, n)
		}
	}
	ctx, cancel := context.WithTimeout(context.Background(), clusterTimeout)
	defer cancel()
	if err := c.create(ctx, replicasPerMaster); err != nil {
		c.Close()
		return nil, fmt.Errorf("redistest: create cluster: %w", err)
	}
	if err := c.WaitOK(); err != nil {
		c.Close()
		return nil, err
	}
	return c, nil
}

// Close stops every node and removes their directories.
func (c *Cluster) Close() {
	for _, n := range c.Nodes() {
		n.Close()
	}
}

// newNode starts one cluster-enabled server with its cluster bus on a second free port.
func newNode() (*Server, error) {
	var bus int
	s, err := newServer(nil, func(port int) ([]string, error) {
		var err error
		if bus, err = FreePort(); err != nil {
			return nil, err
		}
		return []string{
			"--port", strconv.Itoa(port),
			"--cluster-enabled", "yes",
			"--cluster-config-file", "nodes.conf",
			"--cluster-node-timeout", strconv.FormatInt(NodeTimeout.Milliseconds(), 10),
			"--cluster-port", strconv.Itoa(bus),
			"--repl-diskless-sync-delay", "0", // a replica syncs at once, not after 5 s
		}, nil
	})
	if err != nil {
		return nil, err
	}
	s.BusPort = bus
	return s, nil
}

// Nodes returns every node: masters first, then replicas.
func (c *Cluster) Nodes() []*Server {
	return append(append([]*Server(nil), c.Masters...), c.Replicas...)
}

// Seeds returns the masters' addresses, the seeds a cluster client starts from.
func (c *Cluster) Seeds() []string {
	seeds := make([]string, len(c.Masters))
	for i, m := range c.Masters {
		seeds[i] = m.Addr
	}
	return seeds
}

// create does by hand what redis-cli --cluster create does: a distinct config epoch per
// node, a slot range per master, MEET, then REPLICATE.
func (c *Cluster) create(ctx context.Context, replicasPerMaster int) error {
	nodes := c.Nodes()
	for i, n := range nodes {
		if err := n.command(ctx, "CLUSTER", "SET-CONFIG-EPOCH", strconv.Itoa(i+1)); err != nil {
			return err
		}
	}
	for i, m := range c.Masters {
		lo, hi := i*ClusterSlots/len(c.Masters), (i+1)*ClusterSlots/len(c.Masters)-1
		if err := m.command(ctx, "CLUSTER", "ADDSLOTSRANGE", strconv.Itoa(lo), strconv.Itoa(hi)); err != nil {
			return err
		}
	}
	for _, n := range nodes[1:] {
		if err := nodes[0].command(ctx, "CLUSTER", "MEET", loopback, n.port(), strconv.Itoa(n.BusPort)); err != nil {
			return err
		}
	}
	if err := waitFor(ctx, "every node knows every other", func() error { return c.allKnown(ctx) }); err != nil {
		return err
	}
	for i, r := range c.Replicas {
		id, err := c.Masters[i/replicasPerMaster].Command(ctx, "CLUSTER", "MYID")
		if err != nil {
			return err
		}
		if err := r.command(ctx, "CLUSTER", "REPLICATE", id); err != nil {
			return err
		}
	}
	return nil
}

// allKnown checks that every node lists every node, none still in handshake.
func (c *Cluster) allKnown(ctx context.Context) error {
	nodes := c.Nodes()
	for _, n := range nodes {
		table, err := n.Command(ctx, "CLUSTER", "NODES")
		if err != nil {
			return err
		}
		lines := strings.Split(strings.TrimSpace(table), "\n")
		if len(lines) != len(nodes) || strings.Contains(table, "handshake") {
			return fmt.Errorf("%s knows %d of %d nodes", n.Addr, len(lines), len(nodes))
		}
	}
	return nil
}

// WaitOK waits until every running node reports cluster_state:ok with every slot served,
// and every running replica's link to its master is up.
func (c *Cluster) WaitOK() error {
	ctx, cancel := context.WithTimeout(context.Background(), clusterTimeout)
	defer cancel()
	if err := waitFor(ctx, "cluster state ok", func() error { return c.healthy(ctx) }); err != nil {
		return fmt.Errorf("redistest: %w", err)
	}
	return nil
}

func (c *Cluster) healthy(ctx context.Context) error {
	for _, n := range c.Nodes() {
		if !n.Running() {
			continue
		}
		info, err := n.Command(ctx, "CLUSTER", "INFO")
		if err != nil {
			return err
		}
		for _, want := range []string{"cluster_state:ok", "cluster_slots_ok:" + strconv.Itoa(ClusterSlots)} {
			if !strings.Contains(info, want) {
				return fmt.Errorf("%s: no %s in CLUSTER INFO", n.Addr, want)
			}
		}
	}
	for _, r := range c.Replicas {
		if !r.Running() {
			continue
		}
		info, err := r.Command(ctx, "INFO", "replication")
		if err != nil {
			return err
		}
		if strings.Contains(info, "role:slave") && !strings.Contains(info, "master_link_status:up") {
			return fmt.Errorf("replica %s: link to its master is not up", r.Addr)
		}
	}
	return nil
}

// waitFor polls check until it succeeds or ctx ends, and then returns its last error.
func waitFor(ctx context.Context, what string, check func() error) error {
	for {
		err := check()
		if err == nil {
			return nil
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("waiting for %s: %w (last: %w)", what, ctx.Err(), err)
		case <-time.After(pollInterval):
		}
	}
}
