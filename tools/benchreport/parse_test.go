package benchreport

import (
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/bucketgate/bucketgate/internal/testkit/logbytes"
)

// wantedError checks err against want, a part of the message or "" for none, and
// reports whether an error was wanted (and so the case is done).
func wantedError(t *testing.T, err error, want string) bool {
	t.Helper()
	switch {
	case want == "" && err != nil:
		t.Fatalf("unexpected error: %v", err)
	case want != "" && (err == nil || !strings.Contains(err.Error(), want)):
		t.Fatalf("err = %v, want one containing %q", err, want)
	}
	return want != ""
}

func TestParseCommandStat(t *testing.T) {
	info := "# Commandstats\r\ncmdstat_hmget:calls=4,usec=8,usec_per_call=2.00,rejected_calls=0,failed_calls=0\r\n" +
		"cmdstat_evalsha:calls=40000,usec=271490,usec_per_call=6.79,rejected_calls=0,failed_calls=0\r\n"
	tests := []struct {
		name    string
		info    string
		command string
		want    CommandStat
		wantErr string
	}{
		{name: "found", info: info, command: "evalsha", want: CommandStat{Calls: 40000, UsecPerCall: 6.79}},
		{name: "not a prefix of another", info: info, command: "hmge", wantErr: "no line for hmge"},
		{name: "missing", info: info, command: "get", wantErr: "no line for get"},
		{name: "garbled", info: "cmdstat_evalsha:calls=x,usec_per_call=1\r\n", command: "evalsha", wantErr: "want calls and usec_per_call"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := parseCommandStat(tt.info, tt.command)
			if wantedError(t, err, tt.wantErr) {
				return
			}
			if got != tt.want {
				t.Fatalf("got %+v, %v; want %+v", got, err, tt.want)
			}
		})
	}
}

func TestParseRedisBenchmarkCSV(t *testing.T) {
	tests := []struct {
		name    string
		out     string
		want    float64
		wantErr string
	}{
		{
			name: "one result",
			out:  "\"test\",\"rps\",\"avg_latency_ms\"\n\"EVALSHA abc 1 k\",\"51652.89\",\"19.082\"\n",
			want: 51652.89,
		},
		{name: "no result", out: "\"test\",\"rps\"\n", wantErr: "1 rows"},
		{name: "no rps column", out: "\"test\",\"x\"\n\"a\",\"1\"\n", wantErr: "no rps column"},
		{name: "rps not a number", out: "\"test\",\"rps\"\n\"a\",\"fast\"\n", wantErr: "rps"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := parseRedisBenchmarkCSV([]byte(tt.out))
			if wantedError(t, err, tt.wantErr) {
				return
			}
			if got != tt.want {
				t.Fatalf("got %v, %v; want %v", got, err, tt.want)
			}
		})
	}
}

const goBenchOutput = `goos: linux
goarch: amd64
pkg: github.com/bucketgate/bucketgate/internal/bucket
BenchmarkClientCost/limiter-2         	   20000	     58143 ns/op	     422 B/op	       5 allocs/op
BenchmarkClientCost/bare-evalsha-2    	   20000	     63616 ns/op	     240 B/op	       1 allocs/op
BenchmarkClientCost/paired-2          	   20000	    150152 ns/op	     74528 bare-ns/op	     75396 limiter-ns/op	     582 B/op	       3 allocs/op
BenchmarkClientCost/limiter-2         	   20000	     50000 ns/op	     352 B/op	       2 allocs/op
BenchmarkClientCost/bare-evalsha-2    	   20000	     60000 ns/op	     240 B/op	       1 allocs/op
BenchmarkClientCost/paired-2          	   20000	    160000 ns/op	     80000 bare-ns/op	     80000 limiter-ns/op	     582 B/op	       3 allocs/op
BenchmarkClientCost/limiter-2         	   20000	     52000 ns/op	     352 B/op	       2 allocs/op
BenchmarkClientCost/bare-evalsha-2    	   20000	     61000 ns/op	     240 B/op	       1 allocs/op
BenchmarkClientCost/paired-2          	   20000	    150000 ns/op	     70000 bare-ns/op	     77000 limiter-ns/op	     582 B/op	       3 allocs/op
PASS
ok  	github.com/bucketgate/bucketgate/internal/bucket	7.017s
`

func TestParseGoBench(t *testing.T) {
	benches, err := parseGoBench(strings.NewReader(goBenchOutput))
	if err != nil {
		t.Fatal(err)
	}
	c, err := clientCostFrom(benches)
	if err != nil {
		t.Fatal(err)
	}
	checks := []struct {
		name      string
		got, want float64
	}{
		{"limiter ns/op median", c.Limiter.Metrics["ns/op"], 52000},
		{"limiter allocs median", c.Limiter.Metrics["allocs/op"], 2},
		{"bare B/op", c.Bare.Metrics["B/op"], 240},
		{"paired limiter", c.LimiterNs(), 77000},
		{"paired bare", c.BareNs(), 74528},
		{"runs", float64(c.Paired.Runs), 3},
	}
	for _, ch := range checks {
		if ch.got != ch.want {
			t.Errorf("%s = %v, want %v", ch.name, ch.got, ch.want)
		}
	}
	if _, err := clientCostFrom(map[string]GoBench{}); err == nil {
		t.Error("clientCostFrom of nothing: want an error")
	}
}

func TestMedianAndNiceStep(t *testing.T) {
	medians := []struct {
		in   []float64
		want float64
	}{{nil, 0}, {[]float64{3}, 3}, {[]float64{5, 1, 3}, 3}, {[]float64{4, 1, 3, 2}, 2.5}}
	for _, m := range medians {
		if got := median(m.in); got != m.want {
			t.Errorf("median(%v) = %v, want %v", m.in, got, m.want)
		}
	}
	steps := []struct{ in, want float64 }{{0.3, 1}, {1.5, 2}, {3, 5}, {7, 10}, {18.3, 20}, {120, 200}}
	for _, s := range steps {
		if got := niceStep(s.in); got != s.want {
			t.Errorf("niceStep(%v) = %v, want %v", s.in, got, s.want)
		}
	}
}

func TestBuiltFunctions(t *testing.T) {
	root := t.TempDir()
	if built, err := BuiltFunctions(root); err != nil || len(built) != 0 {
		t.Errorf("BuiltFunctions of an empty tree = %v, %v", built, err)
	}
	if err := os.MkdirAll(filepath.Join(root, "functions", "authorizer"), 0o755); err != nil {
		t.Fatal(err)
	}
	if built, err := BuiltFunctions(root); err != nil || len(built) != 1 || built[0] != "functions/authorizer" {
		t.Errorf("BuiltFunctions = %v, %v; want functions/authorizer", built, err)
	}
}

func TestMarkdown(t *testing.T) {
	r := Report{
		Machine:  Machine{Date: time.Date(2026, 1, 2, 3, 4, 0, 0, time.UTC), CPUs: 2, CPUModel: "cpu", GoVersion: "go1.26", Platform: "linux/amd64", RedisVersion: "7.0.15"},
		Workload: Workload{Identities: 10, Rounds: 2, Workers: 1},
		Instructions: Instructions{OneRule: 50000, TwoRules: 70000, RedisRate: 56000, Admitted: 60000, Refund: 55000, Reset: 40000,
			Round3: "round-3 instructions/decision: check 50000, check+usage 60000, bucket+quota 70000, reserve 50000, settle 90000, acquire 75000", Check: 50000, Usage: 60000, Quota: 70000, Reserve: 50000, Settle: 90000, Acquire: 75000,
			SettlesUsage: "round-3 settles with usage kept: below the estimate 110000 (2.20x the check), above it 105000 (2.10x)", SettleBelow: 110000, SettleAbove: 105000},
		EndToEnd:    EndToEnd{Plan: EndToEndPlan{Invocations: 4, Warm: 1}, Invoke: []time.Duration{300 * time.Microsecond, 310 * time.Microsecond, 320 * time.Microsecond, 900 * time.Microsecond}, Bare: []time.Duration{50 * time.Microsecond, 60 * time.Microsecond, 70 * time.Microsecond, 80 * time.Microsecond}, Answer: `{"principalId":"key:x"}`},
		OneRule:     RedisSide{Name: "bucketgate 1 rule", UsecPerCall: 6, Runs: []float64{6, 8, 9}},
		TwoRules:    RedisSide{Name: "bucketgate 2 rules", UsecPerCall: 9},
		RedisRate:   RedisSide{Name: "redis_rate", UsecPerCall: 5, Runs: []float64{5, 8, 6}},
		Throughput:  Throughput{RedisBenchmark: 100, Go: []Rate{{Name: "a", PerSecond: 70}, {Name: "b", PerSecond: 90}}},
		ClientCost:  ClientCost{Paired: GoBench{Metrics: map[string]float64{pairedLimiterUnit: 110, pairedBareUnit: 100}}},
		Authorizer:  []GoBench{{Name: handlerOverheadPrefix + "rest", Runs: 5, Metrics: map[string]float64{"ns/op": 12345, "B/op": 2000, "allocs/op": 30}}},
		DenyCache:   syntheticDenyCacheRun("on", 210),
		NoDenyCache: syntheticDenyCacheRun("off", 1000),
		Flood:       syntheticFlood(),
		PlotFile:    "plot.png",
		Batch: BatchRun{Plan: BatchPlan{Latency: 5 * time.Millisecond, Checks: 100, Reps: 3},
			One: []time.Duration{11 * time.Millisecond, 10 * time.Millisecond, 12 * time.Millisecond}, Batch: []time.Duration{14 * time.Millisecond, 13 * time.Millisecond, 30 * time.Millisecond}},
		SettleBatch: BatchRun{Plan: BatchPlan{Latency: 5 * time.Millisecond, Checks: 100, Reps: 1, Settle: true},
			One: []time.Duration{10 * time.Millisecond}, Batch: []time.Duration{25 * time.Millisecond}},
		Registry: RegistryReads{Plan: RegistryPlan{Keys: 1000, Zipf: 1.1, Environments: 10, Duration: time.Minute, Rate: 1000, CachePeriod: 30 * time.Second, KeysPerAccount: 5},
			Reads: 9000, AccountReads: 500, Distinct: 5500, DistinctAccounts: 500, Pairs: 40, Known: 10, Wall: 9 * time.Second},
		PairReads: PairReads{GetItems: []time.Duration{2 * time.Millisecond}, Batch: []time.Duration{time.Millisecond}},
		LogBytes: LogBytes{Plan: LogBytesPlan{Rates: []int{1, 100}, Headline: 100, Seconds: 2}, Results: []logbytes.Result{
			logBytesResult(logbytes.Defaults, false, 100, 11, 0), logBytesResult(logbytes.Defaults, true, 100, 5, 333),
			logBytesResult(logbytes.Debug, false, 100, 11, 340), logBytesResult(logbytes.Debug, true, 100, 5, 333),
			logBytesResult(logbytes.Defaults, false, 1, 530, 0)}},
	}
	md := r.Markdown()
	for _, want := range []string{
		"redis-side instructions/decision: bucketgate 1 rule 50000, 2 rules 70000, redis_rate 56000, ratio X/Z 0.893 (goal <= 0.90), 2 rules / 1 rule 1.40 (goal <= 1.3)",
		"redis-side us/decision (noisy second opinion): bucketgate 1 rule 6.00, 2 rules 9.00, redis_rate 5.00, ratio X/Z 1.20, 2 rules / 1 rule 1.50",
		"| 1 | Redis-side instructions per decision, bucketgate 1 rule / redis_rate | 50000 / 56000 = 0.893 | <= 0.90 | met |",
		"| 1 | Redis-side instructions per decision, 2 chained rules / 1 rule | 70000 / 50000 = 1.40 | <= 1.3 | **not met** |",
		"| 1 | second opinion: Redis-side µs per decision, 1 rule / redis_rate; 2 rules / 1 rule | 6.00 / 5.00 = 1.20; 1.50 | none: a busy machine moves it | measured |",
		"| bucketgate, a refund | 55000 |",
		"| 1 | round 3: a check (usage off) / round 2's 53699 | 0.931 | <= 1.02 | met |",
		"| 1 | round 3, over a check: check+usage; bucket+quota | 1.20; 1.40 | <= 1.12; <= 1.45 | **not met** |",
		"| 1 | round 3, over a check: reserve; settle | 1.00; 1.80 | <= 1.15; <= 1.15 | **not met** |",
		"A settle is 1.80x (goal 1.15)",
		"The goal is below what an admitted check costs (60000, 1.20x a check",
		"| 1 | round 3, over a check: a settle with usage kept, below; above its estimate | 2.20; 2.10 | none of its own (settle's goal is usage off) | measured |",
		"round-3 settles with usage kept: below the estimate 110000 (2.20x the check), above it 105000 (2.10x)\n```",
		"| 1 | round 3, over a check: acquire (a bucket and a concurrency rule) | 1.50 | <= 1.40 | **not met** |",
		"An acquire (a bucket and a concurrency rule, half of them admitted as the check's) is 1.50x a check (goal\n1.40)",
		"| 10 | an authorizer invocation through the built binary, p50 / p99, beside a bare EVALSHA | 0.310 / 0.900 ms (EVALSHA 0.060 / 0.080 ms) | reported beside the floor | measured |",
		"| authorizer invocation | 0.310 ms | 0.900 ms |",
		"bucketgate (b) / redis-benchmark -P 0 | 90 / 100 = 0.90 | >= 0.8 | met |",
		"| 110 / 100 = 1.10 | <= 1.2 | met |",
		"| 4 | authorizer handler overhead per invocation, Redis stubbed | rest 12.3 µs, 2000 B, 30 allocs | <= 20 µs and <= 60 allocs per event | met |",
		"| rest | 12345 | 2000 | 30 |",
		"| 6 | deny cache: Redis calls per 1,000 requests at 10x the limit | 210 (1000 without the cache), 110 admitted (floor 108), 0 over-admitted, 0 decided without Redis | <= 100, none over the ceiling or under the floor, all by Redis | **not met** |",
		"| on | 210 | 210 | 110 | 108 | 110 | 0 | 0 |",
		"![admitted vs offered requests per second during a flood](plot.png)",
		"Redis 7.0.15",
		"| 9 | wall time, a batch of 100 checks / one check, through a link of 5ms each way | 14.0 / 11.0 ms = 1.27 | <= 2.0 | met |",
		"| 9 | wall time, a batch of 100 settles / one settle, through the same link | 25.0 / 10.0 ms = 2.50 | <= 2.0 | **not met** |",
		"| a batch of 100 settles | 25.00 ms | 25.00 |",
		"| a batch of 100 | 14.00 ms | 14.00 13.00 30.00 |",
		"X/Z repetition by repetition (each pair from the same turn): 1.20 1.00 1.50; median 1.20.",
		"| 8 | key registry: DynamoDB reads per 1,000 authorizer requests, half the keys in accounts | 150.0 (bound 200.0) | <= the bound, every key found | met |",
		"| 9000 | 500 | 150.0 | 12000 | 200.0 | 0 |",
		"in 10 of\nthem the environment had read the key before",
		"take 2ms (median of 1), one BatchGetItem of both\n1ms.",
		"save no read and one round trip on 0.2 of every 1,000 requests",
		"log bytes/invocation: allowed 11, limited 338 (defaults); allowed 351, limited 338 (DEBUG)",
		"| 11 | log bytes per authorizer invocation at 100/s, allowed and limited: defaults; LogLevel DEBUG | 11, 338; 351, 338 | allowed at the defaults <= 250 | met |",
		"| allowed, defaults | 530.0 (530.0 + 0.0) | 11.0 (11.0 + 0.0) |",
		"| limited, DEBUG | 0.0 (0.0 + 0.0) | 338.0 (5.0 + 333.0) |",
	} {
		if !strings.Contains(md, want) {
			t.Errorf("Markdown lacks %q", want)
		}
	}
	if lines := r.Lines(); lines[0] != r.InstructionsLine() {
		t.Errorf("first line %q, want the instructions line", lines[0])
	}

	goals := "| authorizer <= 12 MiB and ready in < 10ms (with a registry table too); others <= 15 MiB |"
	r.Bootstraps = []Bootstrap{{Function: "functions/authorizer", Bytes: 10 << 20, Ready: 6 * time.Millisecond, ReadyRegistry: 7 * time.Millisecond},
		{Function: "functions/check", Bytes: 14 << 20, Ready: 5 * time.Millisecond}}
	if md := r.Markdown(); !strings.Contains(md, "| functions/authorizer 10.00 MiB, ready in 6ms (7ms with a registry table); functions/check 14.00 MiB, ready in 5ms "+goals+" met |") {
		t.Errorf("Markdown with bootstraps lacks their summary row:\n%s", md)
	}
	for name, tweak := range map[string]func(b []Bootstrap){
		"authorizer 13 MiB": func(b []Bootstrap) { b[0].Bytes = 13 << 20 },
		"slow with a table": func(b []Bootstrap) { b[0].ReadyRegistry = 11 * time.Millisecond },
		"check 16 MiB":      func(b []Bootstrap) { b[1].Bytes = 16 << 20 },
	} {
		bs := slices.Clone(r.Bootstraps)
		tweak(bs)
		r2 := r
		r2.Bootstraps = bs
		if md := r2.Markdown(); !strings.Contains(md, goals+" **not met** |") {
			t.Errorf("Markdown with %s does not say the goal is not met", name)
		}
	}
}

// logBytesResult is a measurement of 100 invocations that wrote emf and logs bytes each.
func logBytesResult(levels logbytes.Levels, limited bool, rate, emf, logs int) logbytes.Result {
	return logbytes.Result{Case: logbytes.Case{Levels: levels, Limited: limited, Rate: rate, Seconds: 1}, Invocations: 100, Written: 100, EMF: 100 * emf, Logs: 100 * logs}
}

func TestParseInstructions(t *testing.T) {
	out := "bash tools/benchreport/instructions/instructions.sh\n" +
		"redis-side instructions/decision: bucketgate 1 rule 53542, 2 rules 73242, redis_rate 56321, ratio X/Z 0.951, Y/X 1.37\n" +
		"redis-side instructions/operation, 1 rule: check 53542 (every one admitted: 64000), refund 60000 (0.94x an admitted check), reset 40000 (0.75x a check)\n"
	in, err := parseInstructions(strings.NewReader(out))
	if err != nil {
		t.Fatal(err)
	}
	want := Instructions{OneRule: 53542, TwoRules: 73242, RedisRate: 56321, Admitted: 64000, Refund: 60000, Reset: 40000}
	if in != want {
		t.Fatalf("got %+v, want %+v", in, want)
	}
	if _, err := parseInstructions(strings.NewReader(out[:120])); err == nil {
		t.Fatal("parsed output without its second line")
	}
	round3 := "round-3 instructions/decision: check 54161, check+usage 66631, bucket+quota 87187, reserve -, settle -, acquire -"
	in, err = parseInstructions(strings.NewReader(out + round3 + "\n"))
	if err != nil || in.Check != 54161 || in.Usage != 66631 || in.Quota != 87187 || in.Round3 != round3 {
		t.Fatalf("with the round-3 line: %+v, %v", in, err)
	}
	if want := round3 + "; check+usage / check 1.23 (goal <= 1.12), bucket+quota / check 1.61 (goal <= 1.45)"; in.Round3Line() != want {
		t.Fatalf("Round3Line = %q, want %q", in.Round3Line(), want)
	}
	leases := "round-3 instructions/decision: check 50000, check+usage 60000, bucket+quota 70000, reserve 50000, settle 90000, acquire -"
	in, err = parseInstructions(strings.NewReader(out + leases + "\n"))
	if err != nil || in.Reserve != 50000 || in.Settle != 90000 || in.Acquire != 0 {
		t.Fatalf("with the lease figures: %+v, %v", in, err)
	}
	if want := leases + "; check+usage / check 1.20 (goal <= 1.12), bucket+quota / check 1.40 (goal <= 1.45), reserve / check 1.00 (goal <= 1.15), settle / check 1.80 (goal <= 1.15)"; in.Round3Line() != want {
		t.Fatalf("Round3Line = %q, want %q", in.Round3Line(), want)
	}
	acquire := strings.Replace(leases, "acquire -", "acquire 65000", 1)
	in, err = parseInstructions(strings.NewReader(out + acquire + "\n"))
	if err != nil || in.Acquire != 65000 {
		t.Fatalf("with the acquire figure: %+v, %v", in, err)
	}
	if want := acquire + "; check+usage / check 1.20 (goal <= 1.12), bucket+quota / check 1.40 (goal <= 1.45), reserve / check 1.00 (goal <= 1.15), settle / check 1.80 (goal <= 1.15), acquire / check 1.30 (goal <= 1.40)"; in.Round3Line() != want {
		t.Fatalf("Round3Line = %q, want %q", in.Round3Line(), want)
	}
	if _, err := parseInstructions(strings.NewReader(out + strings.Replace(acquire, "acquire 65000", "acquire 6.5e4", 1) + "\n")); err == nil {
		t.Fatal("an acquire figure that is no whole number: no error")
	}
	if _, err := parseInstructions(strings.NewReader(out + strings.Replace(leases, "settle 90000", "settle x", 1) + "\n")); err == nil {
		t.Fatal("a settle figure that is no number: no error")
	}
	settles := "round-3 settles with usage kept: below the estimate 121244 (2.17x the check), above it 120271 (2.15x)"
	in, err = parseInstructions(strings.NewReader(out + acquire + "\n" + settles + "\n"))
	if err != nil || in.SettleBelow != 121244 || in.SettleAbove != 120271 || in.SettlesUsage != settles || in.Acquire != 65000 {
		t.Fatalf("with the settles' line: %+v, %v", in, err)
	}
	if _, err := parseInstructions(strings.NewReader(out + strings.Replace(settles, "120271", "many", 1) + "\n")); err == nil {
		t.Fatal("a settle with usage that is no number: no error")
	}
}
