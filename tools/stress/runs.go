package stress

import (
	"context"
	"fmt"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/redis/rueidis"

	"github.com/bucketgate/bucketgate"
	"github.com/bucketgate/bucketgate/internal/bucket"
	"github.com/bucketgate/bucketgate/internal/settings"
	"github.com/bucketgate/bucketgate/internal/testkit/redistest"
)

// Fault timing.
const (
	// faultHold is how long a fault lasts: longer than the circuit breaker's probe
	// interval, so that it opens, probes and fails again before Redis is back.
	faultHold = 2 * time.Second
	// flushEvery is how often the SCRIPT FLUSH fault empties the script cache.
	flushEvery = 50 * time.Millisecond
	// promotionTakeover is how long the failover waits for the cluster to promote the
	// dead master's replica by itself before it orders CLUSTER FAILOVER TAKEOVER.
	promotionTakeover = 10 * time.Second
	// promotionTimeout bounds the wait for the promotion.
	promotionTimeout = 30 * time.Second
	// failoverAllowance is how much longer the failover run lasts than the other fault
	// runs: about the time the cluster takes to notice the dead master and promote.
	failoverAllowance = 2 * redistest.NodeTimeout
	// hostileTimeout is the decision deadline of the hostile run, which checks what
	// identities do to keys, not latency: long enough that no stall of a loaded
	// machine fails a decision there.
	hostileTimeout = time.Second
	// pollEvery is how often the coordinator polls a server's state.
	pollEvery = 20 * time.Millisecond
	// commandTimeout bounds one command of the coordinator's.
	commandTimeout = 5 * time.Second
)

// Cluster shape: three masters with one replica each, for the failover.
const (
	clusterMasters    = 3
	replicasPerMaster = 1
)

// Soak shape.
const (
	soakWorkers     = 2
	soakSampleEvery = time.Second
	// soakWarmUp is how long the soak runs before its samples count: the first keys'
	// expiry, the connection pools and the heap settle.
	soakWarmUp = 15 * time.Second
)

// command sends one command to srv alone, within commandTimeout.
func command(ctx context.Context, srv *redistest.Server, args ...string) (string, error) {
	ctx, cancel := context.WithTimeout(ctx, commandTimeout)
	defer cancel()
	return srv.Command(ctx, args...)
}

// rule makes a bucketgate.Rule.
func rule(name string, capacity int64, perSecond float64) bucketgate.Rule {
	return bucketgate.Rule{Name: name, Capacity: capacity, RefillPerSecond: perSecond}
}

// dailyQuota makes a calendar quota of limit tokens a UTC day.
func dailyQuota(name string, limit int64) bucketgate.Rule {
	return bucketgate.Rule{Name: name, Limit: limit, Period: bucketgate.PeriodDay}
}

// loadScenarios are the workloads of the load and fault runs: a few hot identities
// every goroutine fights over; many identities each seen a few times; and chained
// rules (a burst and a daily quota, alone and together, sharing their buckets) with
// costs above one and peeks.
func loadScenarios() []Scenario {
	burst, daily := rule("burst", 20, 50), dailyQuota("daily", 500)
	return []Scenario{
		{Name: "hot", Weight: 30, Identities: 4, Shapes: [][]bucketgate.Rule{{rule("hot", 100, 200)}}, MaxCost: 1},
		{Name: "many", Weight: 40, Identities: 5000, Shapes: [][]bucketgate.Rule{{rule("burst", 5, 0.5)}}, MaxCost: 1},
		{Name: "chained", Weight: 30, Identities: 64, Shapes: [][]bucketgate.Rule{{burst}, {burst, daily}, {daily}}, MaxCost: 3, PeekPercent: 5},
	}
}

// soakScenarios are the soak's workloads: like loadScenarios, but the many identities
// keep changing, so that keys are created and expire all along, and the daily quota
// is small enough to run out within the warm-up: from then on the same requests are
// denied, and the deny cache holds the same entries, so that the heap can be flat.
func soakScenarios() []Scenario {
	s := loadScenarios()
	s[1].Identities = 1_000_000
	daily := dailyQuota("daily", 50)
	s[2].Shapes = [][]bucketgate.Rule{{s[2].Shapes[0][0]}, {s[2].Shapes[0][0], daily}, {daily}}
	return s
}

// standalone runs the load and fault runs against one standalone redis-server.
func (r *runner) standalone(ctx context.Context) error {
	names := []string{"standalone", "pause", "kill-restart", "script-flush", "latency-below-deadline", "latency-beyond-deadline", "leases", "rule-change"}
	if !r.anySelected(names) {
		return nil
	}
	srv, err := redistest.NewServer()
	if err != nil {
		return err
	}
	defer srv.Close()
	env := r.chainEnv(srv.Addr, false)
	proxy, err := StartProxy(srv.Addr)
	if err != nil {
		return err
	}
	defer proxy.Close()
	proxied := r.chainEnv(proxy.Addr, false)
	deadline := settings.DefaultTimeout
	if r.opts.TimeoutMS > 0 {
		deadline = time.Duration(r.opts.TimeoutMS) * time.Millisecond
	}
	latency := func(d time.Duration) *fault {
		return &fault{
			inject:    func() ([]reset, error) { proxy.SetLatency(d); return nil, nil },
			hold:      faultHold,
			heal:      func() error { proxy.SetLatency(0); return nil },
			errorless: true, // slow answers time out, never error
		}
	}
	runs := []struct {
		name  string
		env   map[string]string
		fault *fault
	}{
		{"standalone", env, nil},
		{"pause", env, &fault{
			inject:    func() ([]reset, error) { srv.Pause(); return nil, nil },
			hold:      faultHold,
			heal:      func() error { srv.Resume(); return nil },
			errorless: true, // a stopped process answers late, never with an error
		}},
		{"kill-restart", env, &fault{
			inject: func() ([]reset, error) {
				srv.Stop()
				return []reset{{at: time.Now().UnixMicro(), emptied: true}}, nil
			},
			hold: faultHold,
			heal: srv.Restart,
		}},
		{"script-flush", env, flushFault(srv)},
		// The latency holds each chunk in each direction: a round trip gains twice it.
		{"latency-below-deadline", proxied, latency(deadline / 10)},
		{"latency-beyond-deadline", proxied, latency(deadline)},
	}
	for _, run := range runs {
		if !r.selected(run.name) {
			continue
		}
		lr := loadRun{name: run.name, target: "standalone", env: run.env, scenarios: loadScenarios(), duration: r.opts.Load, rate: r.opts.LoadRate / float64(r.opts.Workers), workers: r.opts.Workers, fault: run.fault}
		if run.fault != nil {
			lr.duration, lr.rate = r.opts.Fault, r.opts.FaultRate/float64(r.opts.Workers)
		}
		if strings.HasPrefix(run.name, "latency") {
			lr.target = "standalone via proxy"
		}
		if _, err := r.load(ctx, lr); err != nil {
			return err
		}
	}
	if r.selected("leases") {
		if err := r.leases(ctx, srv, r.opts.Load, r.opts.Workers*r.opts.Goroutines); err != nil {
			return err
		}
	}
	if r.selected("rule-change") {
		return r.ruleChange(ctx, srv, r.opts.Fault, r.opts.Workers*r.opts.Goroutines)
	}
	return nil
}

// anySelected reports whether any of names is to run.
func (r *runner) anySelected(names []string) bool {
	for _, n := range names {
		if r.selected(n) {
			return true
		}
	}
	return false
}

// flushFault empties srv's script cache every flushEvery while it lasts.
func flushFault(srv *redistest.Server) *fault {
	var stop chan struct{}
	var wg sync.WaitGroup
	return &fault{
		inject: func() ([]reset, error) {
			stop = make(chan struct{})
			wg.Go(func() {
				t := time.NewTicker(flushEvery)
				defer t.Stop()
				for {
					_, _ = command(context.Background(), srv, "SCRIPT", "FLUSH")
					select {
					case <-stop:
						return
					case <-t.C:
					}
				}
			})
			return nil, nil
		},
		hold:      faultHold,
		heal:      func() error { close(stop); wg.Wait(); return nil },
		errorless: true, // the engine loads its script again on NOSCRIPT
	}
}

// cluster runs the load run, the hostile identities, the batch run and the failover against a
// cluster of three masters with a replica each.
func (r *runner) cluster(ctx context.Context) error {
	if !r.anySelected([]string{"cluster", "hostile", "batch", "failover"}) {
		return nil
	}
	c, err := redistest.NewCluster(clusterMasters, replicasPerMaster)
	if err != nil {
		return err
	}
	defer c.Close()
	env := r.chainEnv(strings.Join(c.Seeds(), ","), true)
	// The coordinator's own client reaches the cluster through a master that survives
	// the failover.
	admin, err := rueidis.NewClient(rueidis.ClientOption{InitAddress: []string{c.Masters[len(c.Masters)-1].Addr}, DisableCache: true})
	if err != nil {
		return fmt.Errorf("stress: connect to the cluster: %w", err)
	}
	defer admin.Close()
	if r.selected("cluster") {
		if _, err := r.load(ctx, loadRun{name: "cluster", target: "cluster", env: env, scenarios: loadScenarios(), duration: r.opts.Load, rate: r.opts.LoadRate / float64(r.opts.Workers), workers: r.opts.Workers}); err != nil {
			return err
		}
	}
	if r.selected("hostile") {
		if err := r.hostile(ctx, c, admin, env); err != nil {
			return err
		}
	}
	if r.selected("batch") {
		if err := r.batch(ctx, c, r.opts.Fault, r.opts.Instances, r.opts.Goroutines); err != nil {
			return err
		}
	}
	if !r.selected("failover") {
		return nil
	}
	// The cluster notices a dead master after its node timeout and then elects the
	// replica: the run lasts that much longer than the other fault runs.
	lr := loadRun{name: "failover", target: "cluster", env: env, scenarios: loadScenarios(), duration: r.opts.Fault + failoverAllowance, rate: r.opts.FaultRate / float64(r.opts.Workers), workers: r.opts.Workers}
	victim, heir := c.Masters[0], c.Replicas[0]
	affected, err := identitiesOn(ctx, admin, victim, lr.name, lr.scenarios)
	if err != nil {
		return err
	}
	lr.fault = &fault{
		inject: func() ([]reset, error) {
			victim.Stop()
			return []reset{{at: time.Now().UnixMicro(), affects: affected}}, nil
		},
		// Redis is back when the replica serves as master and every node agrees.
		heal: func() error {
			if err := awaitPromotion(heir); err != nil {
				return err
			}
			return c.WaitOK()
		},
	}
	_, err = r.load(ctx, lr)
	return err
}

// identitiesOn returns the identities of a run whose keys live in the slots master
// serves, asking the cluster through admin.
func identitiesOn(ctx context.Context, admin rueidis.Client, master *redistest.Server, phase string, scenarios []Scenario) (map[idKey]bool, error) {
	nodes, err := command(ctx, master, "CLUSTER", "NODES")
	if err != nil {
		return nil, err
	}
	owns, err := ownSlots(nodes)
	if err != nil {
		return nil, err
	}
	var ids []idKey
	var keys []string
	for si, s := range scenarios {
		for i := range s.Identities {
			ids = append(ids, idKey{uint8(si), uint32(i)})
			keys = append(keys, bucket.Key(IdentityName(phase, s.Name, uint32(i))))
		}
	}
	slots, err := keySlots(ctx, admin, keys)
	if err != nil {
		return nil, err
	}
	out := map[idKey]bool{}
	for i, slot := range slots {
		if owns(slot) {
			out[ids[i]] = true
		}
	}
	return out, nil
}

// keySlotBatch is how many CLUSTER KEYSLOT commands keySlots pipelines at once.
const keySlotBatch = 1000

// keySlotBatchOf asks the cluster behind admin for the hash slots of chunk, in one
// pipeline.
func keySlotBatchOf(ctx context.Context, admin rueidis.Client, chunk []string) ([]int, error) {
	ctx, cancel := context.WithTimeout(ctx, commandTimeout)
	defer cancel()
	cmds := make(rueidis.Commands, len(chunk))
	for i, k := range chunk {
		cmds[i] = admin.B().ClusterKeyslot().Key(k).Build()
	}
	out := make([]int, len(chunk))
	for i, rep := range admin.DoMulti(ctx, cmds...) {
		n, err := rep.AsInt64()
		if err != nil {
			return nil, fmt.Errorf("CLUSTER KEYSLOT %.40q: %w", chunk[i], err)
		}
		out[i] = int(n)
	}
	return out, nil
}

// keySlots asks the cluster behind admin for the hash slot of every key.
func keySlots(ctx context.Context, admin rueidis.Client, keys []string) ([]int, error) {
	out := make([]int, 0, len(keys))
	for lo := 0; lo < len(keys); lo += keySlotBatch {
		chunk := keys[lo:min(lo+keySlotBatch, len(keys))]
		slots, err := keySlotBatchOf(ctx, admin, chunk)
		if err != nil {
			return nil, err
		}
		out = append(out, slots...)
	}
	return out, nil
}

// ownSlots parses the "myself" line of CLUSTER NODES into a test of the slots it serves.
func ownSlots(nodes string) (func(slot int) bool, error) {
	for line := range strings.SplitSeq(nodes, "\n") {
		f := strings.Fields(line)
		if len(f) < 8 || !strings.Contains(f[2], "myself") {
			continue
		}
		var ranges [][2]int
		for _, rg := range f[8:] {
			lo, hi, found := strings.Cut(rg, "-")
			if !found {
				hi = lo
			}
			a, err1 := strconv.Atoi(lo)
			b, err2 := strconv.Atoi(hi)
			if err1 != nil || err2 != nil {
				continue // a slot being migrated: "[slot->-node]"
			}
			ranges = append(ranges, [2]int{a, b})
		}
		return func(slot int) bool {
			for _, rg := range ranges {
				if rg[0] <= slot && slot <= rg[1] {
					return true
				}
			}
			return false
		}, nil
	}
	return nil, fmt.Errorf("no myself line in CLUSTER NODES:\n%s", nodes)
}

// awaitPromotion waits until heir, the replica of a dead master, serves as master:
// promoted by the cluster itself, or by CLUSTER FAILOVER TAKEOVER after
// promotionTakeover.
func awaitPromotion(heir *redistest.Server) error {
	start := time.Now()
	ordered := false
	for time.Since(start) < promotionTimeout {
		role, err := command(context.Background(), heir, "ROLE")
		if err == nil && strings.HasPrefix(role, "master") {
			return nil
		}
		if !ordered && time.Since(start) > promotionTakeover {
			ordered = true
			_, _ = command(context.Background(), heir, "CLUSTER", "FAILOVER", "TAKEOVER")
		}
		time.Sleep(pollEvery)
	}
	return fmt.Errorf("replica %s not promoted within %v", heir.Addr, promotionTimeout)
}

// soak runs a fixed rate against a fresh standalone redis-server while the workers
// sample their memory and goroutines and the coordinator samples Redis's memory.
func (r *runner) soak(ctx context.Context) error {
	if !r.selected("soak") {
		return nil
	}
	srv, err := redistest.NewServer()
	if err != nil {
		return err
	}
	defer srv.Close()
	// Usage off: with it, each of the soak's one-off identities keeps its hash for the
	// days usage is kept (docs/design.md: 1.5 KB each for 35 days), which grows Redis by
	// design and would hide a leak; TestMemoryPerIdentity measures that cost.
	env := r.chainEnv(srv.Addr, false)
	env[settings.EnvUsageDays] = "0"
	lr := loadRun{
		name: "soak", target: "standalone", env: env, scenarios: soakScenarios(),
		duration: r.opts.Soak, rate: r.opts.SoakRate / soakWorkers, workers: soakWorkers, sampleEvery: soakSampleEvery,
		beside: func(ctx context.Context, start, end time.Time) {
			r.sum.RedisSamples = sampleRedis(ctx, srv, start, end)
		},
	}
	res, err := r.load(ctx, lr)
	if err != nil {
		return err
	}
	r.sum.Soak = soakOf(res, r.sum.RedisSamples, r.opts.SoakRate)
	return nil
}

// RedisSample is one reading of a Redis server's memory and key count.
type RedisSample struct {
	Elapsed    time.Duration
	UsedMemory uint64
	Keys       uint64
}

// sampleRedis reads srv's used_memory and DBSIZE every soakSampleEvery from start to end.
func sampleRedis(ctx context.Context, srv *redistest.Server, start, end time.Time) []RedisSample {
	time.Sleep(time.Until(start))
	var out []RedisSample
	t := time.NewTicker(soakSampleEvery)
	defer t.Stop()
	for now := time.Now(); now.Before(end); now = <-t.C {
		info, err1 := command(ctx, srv, "INFO", "memory")
		keys, err2 := command(ctx, srv, "DBSIZE")
		if err1 != nil || err2 != nil {
			continue
		}
		s := RedisSample{Elapsed: now.Sub(start)}
		s.Keys, _ = strconv.ParseUint(keys, 10, 64)
		for line := range strings.SplitSeq(info, "\n") {
			if v, ok := strings.CutPrefix(strings.TrimSpace(line), "used_memory:"); ok {
				s.UsedMemory, _ = strconv.ParseUint(v, 10, 64)
			}
		}
		out = append(out, s)
	}
	return out
}

// fuzz runs every fuzz target for FuzzTime.
func (r *runner) fuzz(ctx context.Context) error {
	if r.opts.FuzzTime <= 0 || !r.selected("fuzz") {
		return nil
	}
	results, err := runFuzz(ctx, r.opts.GoTool, r.opts.Root, r.opts.FuzzTime, func(f FuzzResult) {
		r.logf("fuzz %s %s: %d execs, failed %v", f.Package, f.Target, f.Execs, f.Failed)
	})
	r.sum.Fuzz = results
	return err
}
