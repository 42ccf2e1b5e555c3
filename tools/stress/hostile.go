package stress

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"math/rand/v2"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"

	"github.com/redis/rueidis"

	"github.com/bucketgate/bucketgate"
	"github.com/bucketgate/bucketgate/internal/bucket"
	"github.com/bucketgate/bucketgate/internal/guard"
	"github.com/bucketgate/bucketgate/internal/identity"
	"github.com/bucketgate/bucketgate/internal/settings"
	"github.com/bucketgate/bucketgate/internal/testkit/redistest"
)

// Hostile input sizes and rules.
const (
	// MaxHeaderBytes is the largest API key header a hostile case sends: API Gateway
	// accepts headers far larger than any identity, and the authorizer digests them.
	MaxHeaderBytes = 64 << 10
	// hugeKeyPercent is the share of hostile API keys that are MaxHeaderBytes long.
	hugeKeyPercent = 2
	// tenantPrefix is what the check function puts before a caller's key to make its
	// identity; the hostile raw identities travel that path.
	tenantPrefix = "tenant:"
	// hostileIPs is how many hostile cases identify by source address.
	hostileIPs = 256
)

// hostileRules are the two rules every hostile identity is decided with: first the
// first alone, then both. Their refill is slow enough that no token comes back during
// the run, so a bucket's remaining tokens count exactly the requests that spent it.
var hostileRules = []bucketgate.Rule{
	{Name: "hostile", Capacity: 1000, RefillPerSecond: 0.01},
	{Name: "hostile-2", Capacity: 500, RefillPerSecond: 0.01},
}

// wantRemaining is what the two decisions of a hostile identity must leave, when no
// other identity shares its buckets.
var wantRemaining = [2]int64{hostileRules[0].Capacity - 1, min(hostileRules[0].Capacity-2, hostileRules[1].Capacity-1)}

// hostileAlphabet is what random hostile identities are made of: the bytes that the
// key escaping treats specially and the bytes of their escapes, separators, NUL,
// bytes that are invalid UTF-8 on their own, and ordinary letters.
const hostileAlphabet = "{}{}%%%7BbDd25:: \x00\x00\xff\xfe\xc3\x28\x80a"

// craftedIdentities are raw identities chosen to collide if the escaping were wrong.
var craftedIdentities = []string{
	"{", "}", "{}", "}{", "{{}}", "%", "%%", "%7B", "%7b", "%7D", "%25", "%257B", "%7B%7D",
	"a{b}c", "{a}", "%7Ba%7D", "a%7Bb%7Dc", ":", "::", "bg:{x}", "x}:bg:{y", "\x00", "\x00{",
	"{\x00}", "\xff\xfe", "\xc3\x28", "\xed\xa0\x80", "é", "e\u0301", " ", "\t",
	strings.Repeat("{", bucketgate.MaxIdentity-len(tenantPrefix)),
	strings.Repeat("}", bucketgate.MaxIdentity-len(tenantPrefix)),
	strings.Repeat("%", bucketgate.MaxIdentity-len(tenantPrefix)),
}

// HostilePlan is a hostile-identity run: every worker makes the same cases from the
// plan's seed and decides its share of them.
type HostilePlan struct {
	// Identities is how many random raw identities (the check function's path) to make.
	Identities int `json:"identities"`
	// Keys is how many random API keys to send through the authorizer's identity
	// resolution.
	Keys int `json:"keys"`
}

// hostileCase is one hostile request: a raw identity, or the headers and source
// address of an authorizer request, and the identity it must come to.
type hostileCase struct {
	raw      bool              // the check function's path: want is used as is
	headers  map[string]string // the authorizer's path: resolved from these
	sourceIP string
	want     string // the identity; empty or too long for an invalid one
	valid    bool
}

// hostileCases makes the cases of p from seed, in the same order in every process,
// each identity once, and counts the API keys whose digests collided (there must be
// none: two distinct keys sharing a digest would share buckets).
func hostileCases(seed uint64, p HostilePlan) (cases []hostileCase, digestCollisions int) {
	rng := rand.New(rand.NewPCG(seed, 0x6057113))
	seen := map[string]bool{}
	add := func(c hostileCase) {
		if !seen[c.want] {
			seen[c.want] = true
			cases = append(cases, c)
		}
	}
	for _, id := range craftedIdentities {
		add(hostileCase{raw: true, want: tenantPrefix + id, valid: true})
	}
	for range p.Identities {
		add(hostileCase{raw: true, want: tenantPrefix + randomBytes(rng, 1+rng.IntN(bucketgate.MaxIdentity-len(tenantPrefix))), valid: true})
	}
	for _, n := range []int{bucketgate.MaxIdentity + 1, 4 << 10, MaxHeaderBytes} {
		add(hostileCase{raw: true, want: randomBytes(rng, n)})
	}
	add(hostileCase{raw: true, want: ""})

	headers := []string{settings.DefaultAPIKeyHeader, strings.ToLower(settings.DefaultAPIKeyHeader), strings.ToUpper(settings.DefaultAPIKeyHeader)}
	digests := map[string]string{}
	for i := range p.Keys {
		n := 1 + rng.IntN(bucketgate.MaxIdentity)
		if rng.IntN(100) < hugeKeyPercent {
			n = MaxHeaderBytes
		}
		prefix := "k" + strconv.Itoa(i) + "-" // distinct ("-" is not in the alphabet), never blank
		key := prefix + randomBytes(rng, max(n-len(prefix), 0))
		trimmed := strings.Trim(key, " \t")
		want := string(bucketgate.KindKey) + ":" + bucketgate.KeyDigest(trimmed)
		if other, ok := digests[want]; ok && other != trimmed {
			digestCollisions++
		}
		digests[want] = trimmed
		add(hostileCase{headers: map[string]string{headers[i%len(headers)]: key}, sourceIP: randomBytes(rng, 16), want: want, valid: true})
	}
	for i := range hostileIPs {
		// IPv4-mapped IPv6 and zoned addresses: each comes to one canonical address.
		ip, canonical := fmt.Sprintf("::ffff:10.66.%d.%d", i/256, i%256), fmt.Sprintf("10.66.%d.%d", i/256, i%256)
		if i%2 == 1 {
			ip, canonical = fmt.Sprintf("fe80::%x%%eth{0}", i), fmt.Sprintf("fe80::%x", i)
		}
		add(hostileCase{headers: map[string]string{settings.DefaultAPIKeyHeader: " \t "}, sourceIP: ip, want: string(bucketgate.KindIP) + ":" + canonical, valid: true})
	}
	add(hostileCase{sourceIP: "{not an address}\x00", want: string(bucketgate.KindIP) + ":" + identity.UnknownAddr, valid: true})
	return cases, digestCollisions
}

// resolve returns the identity the authorizer gives case c with every key registered:
// the key's, else the source address's.
func resolve(r identity.Resolver, c hostileCase) string {
	caller := r.Resolve(c.headers, nil, c.sourceIP)
	if caller.Key != (bucketgate.Identity{}) {
		return caller.Key.String()
	}
	return caller.IP.String()
}

// randomBytes returns n bytes drawn from hostileAlphabet.
func randomBytes(rng *rand.Rand, n int) string {
	b := make([]byte, n)
	for i := range b {
		b[i] = hostileAlphabet[rng.IntN(len(hostileAlphabet))]
	}
	return string(b)
}

// HostileReport is what a worker found deciding its share of the hostile cases.
type HostileReport struct {
	// Decisions counts every Decide call; Identities the valid identities decided.
	Decisions, Identities int64
	// Refused counts invalid identities refused with bucketgate.ErrInvalid.
	Refused int64
	// Collisions counts decisions whose remaining tokens show that another identity
	// spent from the same bucket.
	Collisions int64
	// ResolveMismatches counts authorizer requests that did not resolve to the
	// identity they must (the digest of the trimmed key, or the canonical address).
	ResolveMismatches int64
	// FailClosed counts decisions Redis did not make, by failure (a cross-slot error
	// is a redis_error).
	FailClosed map[guard.Failure]int64
	// Unexpected counts anything else: a denial, an error for a valid identity, no
	// error for an invalid one. Examples quotes the first few problems.
	Unexpected int64
	Examples   []string
}

// hostileWorker is the state a hostile run's goroutines share.
type hostileWorker struct {
	resolver  identity.Resolver
	instances []*guard.Guard
	mu        sync.Mutex
	rep       HostileReport
}

// workHostile decides this worker's share of the hostile cases.
func workHostile(p Plan, instances []*guard.Guard) (HostileReport, error) {
	// Addresses one by one: the cases' zoned IPv6 addresses share a /64.
	resolver, err := identity.NewResolver(settings.DefaultAPIKeyHeader, identity.MaxIPv6Prefix)
	if err != nil {
		return HostileReport{}, err
	}
	all, _ := hostileCases(p.Seed, *p.Hostile)
	var mine []hostileCase
	for i, c := range all {
		if i%p.Workers == p.Worker {
			mine = append(mine, c)
		}
	}
	w := &hostileWorker{resolver: resolver, instances: instances, rep: HostileReport{FailClosed: map[guard.Failure]int64{}}}
	var next atomic.Int64
	var wg sync.WaitGroup
	for g := range p.Goroutines {
		wg.Go(func() {
			for i := next.Add(1) - 1; i < int64(len(mine)); i = next.Add(1) - 1 {
				w.decide(instances[g%len(instances)], mine[i])
			}
		})
	}
	wg.Wait()
	return w.rep, nil
}

// decide runs one case: an invalid identity must be refused; a valid one, resolved as
// the authorizer would, must be allowed twice with exactly its own spending left.
func (w *hostileWorker) decide(chain *guard.Guard, c hostileCase) {
	id := c.want
	if !c.raw {
		id = resolve(w.resolver, c)
		if id != c.want {
			w.note(func(r *HostileReport) { r.ResolveMismatches++ }, fmt.Sprintf("resolved %.40q, want %.40q", id, c.want))
			return
		}
	}
	ctx := context.Background()
	for i, rules := range [][]bucketgate.Rule{hostileRules[:1], hostileRules} {
		res, err := chain.Decide(ctx, bucketgate.Request{Identity: id, Rules: rules, Cost: 1})
		w.note(func(r *HostileReport) { r.Decisions++ }, "")
		switch {
		case !c.valid && errors.Is(err, bucketgate.ErrInvalid):
			w.note(func(r *HostileReport) { r.Refused++ }, "")
			return
		case !c.valid || err != nil:
			w.note(func(r *HostileReport) { r.Unexpected++ }, fmt.Sprintf("identity %.40q (%d bytes): error %v", id, len(id), err))
			return
		case res.Failure != guard.FailureNone:
			w.note(func(r *HostileReport) { r.FailClosed[res.Failure]++ }, fmt.Sprintf("identity %.40q: %s: %v", id, res.Failure, res.Err))
			return
		case !res.Allowed:
			w.note(func(r *HostileReport) { r.Unexpected++ }, fmt.Sprintf("identity %.40q: %s", id, res.Reason))
			return
		case res.Remaining != wantRemaining[i]:
			w.note(func(r *HostileReport) { r.Collisions++ }, fmt.Sprintf("identity %.40q: decision %d left %d, want %d", id, i+1, res.Remaining, wantRemaining[i]))
			return
		}
	}
	w.note(func(r *HostileReport) { r.Identities++ }, "")
}

// note updates the report and keeps example, if any, among the first few.
func (w *hostileWorker) note(update func(*HostileReport), example string) {
	w.mu.Lock()
	defer w.mu.Unlock()
	update(&w.rep)
	if example != "" && len(w.rep.Examples) < maxSamples {
		w.rep.Examples = append(w.rep.Examples, example)
	}
}

// HostileResult is what the hostile-identity run found, over every worker.
type HostileResult struct {
	HostileReport
	// Cases is how many hostile requests were made; Valid of them had a valid identity.
	Cases, Valid int
	// DigestCollisions counts distinct API keys that came to the same digest.
	DigestCollisions int
	// Keys is the number of keys in the cluster afterwards: one per valid identity,
	// or identities shared a key.
	Keys int64
	// SlotMismatches counts identities whose key does not hash to the slot of the
	// whole escaped identity: the hash tag would not be the identity.
	SlotMismatches int
	// LongestKey is the longest Redis key written, in bytes.
	LongestKey int
}

// hostile decides the hostile cases against the cluster, then counts its keys and
// checks every key's slot.
func (r *runner) hostile(ctx context.Context, c *redistest.Cluster, admin rueidis.Client, env map[string]string) error {
	r.logf("run hostile (cluster): %d workers x %d goroutines", r.opts.Workers, r.opts.Goroutines)
	for _, m := range c.Masters {
		if _, err := command(ctx, m, "FLUSHALL"); err != nil {
			return err
		}
	}
	hp := HostilePlan{Identities: r.opts.HostileIdentities, Keys: r.opts.HostileKeys}
	env = maps.Clone(env)
	env[settings.EnvTimeoutMS] = strconv.FormatInt(hostileTimeout.Milliseconds(), 10)
	procs, err := r.startWorkers(Plan{Phase: "hostile", Env: env, Instances: r.opts.Instances, Goroutines: r.opts.Goroutines, Hostile: &hp, Seed: r.opts.Seed}, r.opts.Workers)
	if err != nil {
		return err
	}
	reports, err := waitWorkers(procs)
	if err != nil {
		return fmt.Errorf("run hostile: %w", err)
	}
	res := &HostileResult{HostileReport: HostileReport{FailClosed: map[guard.Failure]int64{}}}
	for _, rep := range reports {
		h := rep.Hostile
		res.Decisions += h.Decisions
		res.Identities += h.Identities
		res.Refused += h.Refused
		res.Collisions += h.Collisions
		res.ResolveMismatches += h.ResolveMismatches
		res.Unexpected += h.Unexpected
		for f, n := range h.FailClosed {
			res.FailClosed[f] += n
		}
		for _, e := range h.Examples {
			if len(res.Examples) < maxSamples {
				res.Examples = append(res.Examples, e)
			}
		}
	}
	cases, collisions := hostileCases(r.opts.Seed, hp)
	res.Cases, res.DigestCollisions = len(cases), collisions
	var keys, tags []string
	for _, hc := range cases {
		if !hc.valid {
			continue
		}
		res.Valid++
		key := bucket.Key(hc.want)
		res.LongestKey = max(res.LongestKey, len(key))
		tag := key[len(bucket.KeyPrefix)+1 : len(key)-1]
		if strings.ContainsAny(tag, "{}") {
			res.SlotMismatches++
			continue
		}
		keys, tags = append(keys, key), append(tags, tag)
	}
	keySlotsOf, err := keySlots(ctx, admin, keys)
	if err != nil {
		return err
	}
	tagSlots, err := keySlots(ctx, admin, tags)
	if err != nil {
		return err
	}
	for i := range keySlotsOf {
		if keySlotsOf[i] != tagSlots[i] {
			res.SlotMismatches++
		}
	}
	for _, m := range c.Masters {
		n, err := command(ctx, m, "DBSIZE")
		if err != nil {
			return err
		}
		k, err := strconv.ParseInt(n, 10, 64)
		if err != nil {
			return fmt.Errorf("DBSIZE answered %q", n)
		}
		res.Keys += k
	}
	r.sum.Hostile = res
	r.logf("hostile: %d cases, %d identities decided, %d refused, %d keys, %d collisions, %d slot mismatches", res.Cases, res.Identities, res.Refused, res.Keys, res.Collisions, res.SlotMismatches)
	return nil
}
