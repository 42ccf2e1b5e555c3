package benchreport

import (
	"context"
	"flag"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
	"github.com/go-redis/redis_rate/v10"
	goredis "github.com/redis/go-redis/v9"
	"github.com/redis/rueidis"

	"github.com/bucketgate/bucketgate"
	"github.com/bucketgate/bucketgate/checkapi"
	"github.com/bucketgate/bucketgate/internal/app"
	"github.com/bucketgate/bucketgate/internal/bucket"
	"github.com/bucketgate/bucketgate/internal/config"
	"github.com/bucketgate/bucketgate/internal/guard"
	"github.com/bucketgate/bucketgate/internal/registry"
	"github.com/bucketgate/bucketgate/internal/settings"
	"github.com/bucketgate/bucketgate/internal/testkit/dynalite"
	"github.com/bucketgate/bucketgate/internal/testkit/redistest"
	"github.com/bucketgate/bucketgate/tools/internal/repo"
)

var (
	reportPath    = flag.String("report", "", "write the benchmark report (BENCHMARKS.md) here; TestReport skips without it")
	goBenchPath   = flag.String("gobench", "", "output of go test -bench -benchmem: ClientCost on internal/bucket, HandlerOverhead on internal/authorizer, CacheEntryBytes on internal/registry")
	insnPath      = flag.String("instructions", "", "output of make bench-instructions (instructions/instructions.sh)")
	registryOnly  = flag.Bool("registry", false, "TestRegistryReport: measure item 8 alone and print it")
	logBytesOnly  = flag.Bool("logbytes", false, "TestLogBytes: measure item 11 alone and print its line and section")
	coldStartOnly = flag.Bool("coldstart", false, "TestColdStart: measure item 5 alone and print its rows (without -coldstart-registry, not its registry table's column)")
	coldStartReg  = flag.Bool("coldstart-registry", false, "TestColdStart: start the authorizer with a registry table on a dynalite too, item 5's last column")
)

// reportCommands are what make bench runs; keep them in step with the Makefile.
var reportCommands = []string{
	"npm ci --ignore-scripts --prefix internal/testkit/dynalite  # dynalite for items 5, 8 and 10, when its lock is newer",
	"bash tools/benchreport/instructions/instructions.sh > instructions.txt  # item 1: make bench-instructions",
	"for i in 1 2 3 4 5; do go test -run '^$' -bench ClientCost -benchmem -benchtime 20000x -count 1 ./internal/bucket; done > gobench.txt",
	"go test -run '^$' -bench HandlerOverhead -benchmem -count 5 ./internal/authorizer >> gobench.txt",
	"go test -run '^$' -bench CacheEntryBytes -benchtime 1x -count 1 ./internal/registry >> gobench.txt",
	"cd tools && go test -count=1 -timeout 15m -run '^TestReport$' -v ./benchreport -args -report=$PWD/../BENCHMARKS.md -gobench=../gobench.txt -instructions=../instructions.txt",
}

// The plans of make bench: a few seconds each on a 2-CPU machine.
var (
	redisSideWorkload = Workload{Identities: 2000, Rounds: 20, Workers: 8}
	redisSideReps     = 7
	throughputPlan    = ThroughputPlan{Requests: 150_000, Keyspace: 10_000, Workers: 64, Clients: 64, Pipeline: 16, Reps: 3}
	floodPlan         = FloodPlan{Rule: bucketgate.Rule{Name: "flood", Capacity: 50, RefillPerSecond: 10}, Offered: 100, Duration: 10 * time.Second, Bin: time.Second / 2}
	// denyCachePlan is item 6: 1,100 requests, 10 times what the rule admits over the
	// flood (capacity 10 + 10/s × 10 s = 110).
	denyCachePlan = FloodPlan{Rule: bucketgate.Rule{Name: "flood", Capacity: 10, RefillPerSecond: 10}, Offered: 110, Duration: 10 * time.Second, Bin: time.Second}
	// batchPlan is item 9 (issue 14): a batch of 100 against one check, 5 ms each way.
	batchPlan = BatchPlan{Latency: 5 * time.Millisecond, Checks: checkapi.MaxBatch, Reps: 21}
	// registryPlan is item 8: 1,000 keys of Zipf(1.1) popularity, half of them in
	// accounts of 5, 10 environments, 60 s at 1,000 requests/s, the default cache period;
	// pairReps reads of a key and its account each way.
	registryPlan = RegistryPlan{Keys: 1000, Zipf: 1.1, Environments: 10, Duration: time.Minute, Rate: 1000, CachePeriod: settings.DefaultRegistryCacheTTL, KeysPerAccount: 5, Seed: 1}
	pairReps     = 200
	// endToEndPlan is item 10 (issue 17): 10,000 invocations after 200 that warm up.
	endToEndPlan = EndToEndPlan{Invocations: 10_000, Warm: 200}
	// logBytesPlan is item 11 (issue 30): an instance at 1 to 1,000 requests a second,
	// 10 s each; the headline at 100 a second, a busy instance.
	logBytesPlan = LogBytesPlan{Rates: []int{1, 10, 100, 1000}, Headline: 100, Seconds: 10}
	plotFile     = "benchmarks-flood.png"
	// throughputFlushDelay is rueidis's MaxFlushDelay for the batching client: it lets
	// the pipeline gather commands between writes, trading microseconds of latency for
	// far fewer system calls on both sides.
	throughputFlushDelay = 20 * time.Microsecond
)

// TestReport is make bench: it measures everything against its own redis-server and
// writes the report. Without -report it skips, so make test never runs it.
func TestReport(t *testing.T) {
	if *reportPath == "" {
		t.Skip("the benchmark report runs with make bench (-report FILE)")
	}
	began := time.Now()
	ctx := context.Background()
	srv := redistest.Start(t)
	client := redistest.Client(t, srv.Addr)
	admin := redistest.Client(t, srv.Addr)
	peer := goredis.NewClient(&goredis.Options{Addr: srv.Addr})
	t.Cleanup(func() { _ = peer.Close() })
	lim := bucket.New(client)
	say := func(line string) { fmt.Println(line) }

	r := Report{Commands: reportCommands, Workload: redisSideWorkload, Reps: redisSideReps, ThroughputPlan: throughputPlan, PlotFile: plotFile}
	var err error
	if r.Machine, err = DescribeMachine(ctx, admin, began); err != nil {
		t.Fatal(err)
	}

	procs := runtime.GOMAXPROCS(1)
	sides, err := MeasureRedisSide(ctx, admin, redisSideWorkload, redisSideReps,
		Contender{Name: "bucketgate 1 rule", Decide: BucketgateDecide(lim, burstRule)},
		Contender{Name: "bucketgate 2 rules", Decide: BucketgateDecide(lim, burstRule, dailyRule)},
		Contender{Name: "redis_rate", Decide: RedisRateDecide(redis_rate.NewLimiter(peer), peerLimit)},
	)
	runtime.GOMAXPROCS(procs)
	if err != nil {
		t.Fatal(err)
	}
	r.OneRule, r.TwoRules, r.RedisRate = sides[0], sides[1], sides[2]
	if *insnPath == "" {
		t.Fatal("-instructions is required with -report: the output of make bench-instructions")
	}
	insn, err := os.ReadFile(*insnPath)
	if err != nil {
		t.Fatal(err)
	}
	if r.Instructions, err = parseInstructions(strings.NewReader(string(insn))); err != nil {
		t.Fatal(err)
	}

	host, port, err := net.SplitHostPort(srv.Addr)
	if err != nil {
		t.Fatal(err)
	}
	batching, err := rueidis.NewClient(rueidis.ClientOption{InitAddress: []string{srv.Addr}, DisableCache: true, MaxFlushDelay: throughputFlushDelay})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(batching.Close)
	runtime.GOMAXPROCS(1)
	r.Throughput, err = MeasureThroughput(ctx, admin, host, port, throughputPlan,
		Contender{Name: "default client options", Decide: BucketgateDecide(lim, burstRule)},
		Contender{Name: fmt.Sprintf("MaxFlushDelay %v", throughputFlushDelay), Decide: BucketgateDecide(bucket.New(batching), burstRule)},
	)
	runtime.GOMAXPROCS(procs)
	if err != nil {
		t.Fatal(err)
	}

	if *goBenchPath == "" {
		t.Fatal("-gobench is required with -report: the output of BenchmarkClientCost, BenchmarkHandlerOverhead and BenchmarkCacheEntryBytes")
	}
	out, err := os.Open(*goBenchPath)
	if err != nil {
		t.Fatal(err)
	}
	defer out.Close()
	benches, err := parseGoBench(out)
	if err != nil {
		t.Fatal(err)
	}
	if r.ClientCost, err = clientCostFrom(benches); err != nil {
		t.Fatal(err)
	}
	if r.Authorizer, err = handlerOverheadFrom(benches); err != nil {
		t.Fatal(err)
	}
	if r.EntryBytes, err = entryBytesFrom(benches); err != nil {
		t.Fatal(err)
	}

	root, err := repo.Root()
	if err != nil {
		t.Fatal(err)
	}
	dyn := dynalite.Start(t)
	dynClient := dyn.Client(t)
	e2eEnv, err := endToEndTable(ctx, dyn, dynClient)
	if err != nil {
		t.Fatal(err)
	}
	built, err := BuiltFunctions(root)
	if err != nil {
		t.Fatal(err)
	}
	if len(built) == 0 {
		r.ColdStart = Pending{Reason: fmt.Sprintf("not built yet: none of %v exists", LambdaFunctions)}
	}
	lambdaEnv := append(LambdaEnv(os.Environ()), "REDIS_ADDR="+srv.Addr)
	if r.Bootstraps, err = measureBootstraps(ctx, root, built, lambdaEnv, e2eEnv); err != nil {
		t.Fatal(err)
	}

	s, err := settings.Load(func(name string) string {
		if name == settings.EnvRedisAddr {
			return srv.Addr
		}
		return ""
	})
	if err != nil {
		t.Fatal(err)
	}
	cached := app.GuardOptions(s)
	uncached := cached
	uncached.DenyCacheSize = 0
	if r.DenyCache, err = MeasureDenyCache(ctx, admin, fmt.Sprintf("deny cache on (%d entries)", cached.DenyCacheSize), guard.New(lim, cached), denyCachePlan); err != nil {
		t.Fatal(err)
	}
	if r.NoDenyCache, err = MeasureDenyCache(ctx, admin, "deny cache off", guard.New(lim, uncached), denyCachePlan); err != nil {
		t.Fatal(err)
	}

	if err := flushAll(ctx, admin); err != nil {
		t.Fatal(err)
	}
	if r.Flood, err = RunFlood(ctx, BucketgateDecide(lim, floodPlan.Rule), "flooder", floodPlan); err != nil {
		t.Fatal(err)
	}
	png, err := os.Create(filepath.Join(filepath.Dir(*reportPath), plotFile))
	if err != nil {
		t.Fatal(err)
	}
	if err := PlotFlood(png, r.Flood); err != nil {
		t.Fatal(err)
	}
	if err := png.Close(); err != nil {
		t.Fatal(err)
	}

	if r.Registry, r.PairReads, err = measureRegistry(ctx, dynClient); err != nil {
		t.Fatal(err)
	}
	if r.Batch, err = MeasureBatch(ctx, srv.Addr, batchPlan); err != nil {
		t.Fatal(err)
	}
	settlePlan := batchPlan
	settlePlan.Settle = true
	if r.SettleBatch, err = MeasureBatch(ctx, srv.Addr, settlePlan); err != nil {
		t.Fatal(err)
	}

	e2eEnv = append(append(slices.Clone(lambdaEnv), e2eEnv...), settings.EnvConfigInline+"="+endToEndConfig)
	if r.EndToEnd, err = MeasureEndToEnd(ctx, root, e2eEnv, endToEndEvent(t, root), client, endToEndRule, endToEndPlan); err != nil {
		t.Fatal(err)
	}

	r.LogBytes = MeasureLogBytes(t, dynClient, logBytesPlan)

	r.Elapsed = time.Since(began)
	for _, line := range r.Lines() {
		say(line)
	}
	if err := os.WriteFile(*reportPath, []byte(r.Markdown()), 0o644); err != nil {
		t.Fatal(err)
	}
	say("wrote " + *reportPath)
}

// TestLogBytes is item 11 alone (make bench-logbytes): it prints the line and the
// section of BENCHMARKS.md that make bench writes, from a run of its own. Without
// -logbytes it skips, so make test never runs it.
func TestLogBytes(t *testing.T) {
	if !*logBytesOnly {
		t.Skip("item 11 alone runs with make bench-logbytes (-logbytes)")
	}
	lb := MeasureLogBytes(t, dynalite.Start(t).Client(t), logBytesPlan)
	var b strings.Builder
	lb.Section(func(format string, args ...any) { fmt.Fprintf(&b, format, args...) })
	fmt.Println(lb.Line())
	fmt.Print(b.String())
	if !lb.Met() {
		t.Errorf("the goal (allowed at the defaults <= %d bytes, every decision counted) is not met", goalLogBytes)
	}
}

// TestColdStart is make bench's item 5 alone (make bench-coldstart): each function's
// size and start-to-ready time, as TestReport measures them, printed as the rows of its
// table; with -coldstart-registry (make bench-coldstart-registry) the authorizer's
// start with a registry table on a dynalite too, the table's last column.
func TestColdStart(t *testing.T) {
	if !*coldStartOnly {
		t.Skip("item 5 alone runs with make bench-coldstart (-coldstart)")
	}
	ctx := context.Background()
	root, err := repo.Root()
	if err != nil {
		t.Fatal(err)
	}
	built, err := BuiltFunctions(root)
	if err != nil || len(built) == 0 {
		t.Fatalf("functions built: %v, %v", built, err)
	}
	var tableEnv []string
	if *coldStartReg {
		dyn := dynalite.Start(t)
		if tableEnv, err = endToEndTable(ctx, dyn, dyn.Client(t)); err != nil {
			t.Fatal(err)
		}
	}
	bs, err := measureBootstraps(ctx, root, built, append(LambdaEnv(os.Environ()), "REDIS_ADDR="+redistest.Start(t).Addr), tableEnv)
	if err != nil {
		t.Fatal(err)
	}
	fmt.Print(bootstrapHeader)
	for _, b := range bs {
		fmt.Print(b.row())
	}
}

// measureBootstraps measures item 5 of the functions built at root: each started with
// env, and the authorizer with env and tableEnv (a registry table's) too, unless
// tableEnv is nil.
func measureBootstraps(ctx context.Context, root string, built, env, tableEnv []string) ([]Bootstrap, error) {
	var bs []Bootstrap
	for _, pkg := range built {
		var registryEnv []string
		if pkg == authorizerFunction && tableEnv != nil {
			registryEnv = append(slices.Clone(env), tableEnv...)
		}
		b, err := MeasureBootstrap(ctx, root, pkg, env, registryEnv, bootstrapStarts)
		if err != nil {
			return nil, err
		}
		bs = append(bs, b)
	}
	return bs, nil
}

// registryTable is the table item 8 reads.
const registryTable = "bucketgate-bench-keys"

// measureRegistry runs item 8 against the run's dynalite: registryPlan's keys and
// accounts on pro, read through the registry's Table, and a key and its account read
// both ways.
func measureRegistry(ctx context.Context, client *dynamodb.Client) (RegistryReads, PairReads, error) {
	if err := registry.CreateTable(ctx, client, registryTable); err != nil {
		return RegistryReads{}, PairReads{}, err
	}
	const batch = 25 // BatchWriteItem's most
	records := registryPlan.Records()
	for first := 0; first < len(records); first += batch {
		var puts []types.WriteRequest
		for _, rec := range records[first:min(first+batch, len(records))] {
			puts = append(puts, types.WriteRequest{PutRequest: &types.PutRequest{Item: rec.Item()}})
		}
		out, err := client.BatchWriteItem(ctx, &dynamodb.BatchWriteItemInput{RequestItems: map[string][]types.WriteRequest{registryTable: puts}})
		if err != nil {
			return RegistryReads{}, PairReads{}, err
		}
		if n := len(out.UnprocessedItems[registryTable]); n > 0 {
			return RegistryReads{}, PairReads{}, fmt.Errorf("dynalite left %d of %d items unwritten", n, len(puts))
		}
	}
	reads, err := MeasureRegistryReads(ctx, registryPlan, registry.NewTable(client, registryTable), config.Default())
	if err != nil {
		return reads, PairReads{}, err
	}
	pairs, err := MeasurePairReads(ctx, client, registryTable, RegistryKeyID(1), registry.ItemID(bucketgate.AccountPrefix+registryPlan.Account(1)), pairReps)
	return reads, pairs, err
}

// TestRegistryReport runs item 8 alone against a dynalite of its own and prints its
// line, writing no report: go test -run '^TestRegistryReport$' -v ./benchreport -args -registry
func TestRegistryReport(t *testing.T) {
	if !*registryOnly {
		t.Skip("item 8 alone runs with -registry")
	}
	var r Report
	var err error
	if r.Registry, r.PairReads, err = measureRegistry(context.Background(), dynalite.Start(t).Client(t)); err != nil {
		t.Fatal(err)
	}
	t.Log(r.registrySummary())
	var md strings.Builder
	r.registrySection(func(format string, args ...any) { fmt.Fprintf(&md, format, args...) })
	t.Log("\n" + md.String())
}

// The table, configuration and rule of item 10 (and of item 5's start with a table): the
// sample pro key registered on a plan whose one rule admits every request of the run.
const (
	endToEndTableName = "bucketgate-bench-e2e"
	endToEndKey       = "bg-sample-pro-key" // the X-API-Key of events/authorizer-rest-pro.json
	endToEndEventFile = "events/authorizer-rest-pro.json"
	endToEndConfig    = `{defaultPlan: free, plans: {free: [{name: burst, capacity: 10, refillPerSecond: 1}], pro: [{name: burst, capacity: 1000000000, refillPerSecond: 1000000}]}}`
)

// endToEndRule is the pro plan's rule of endToEndConfig.
var endToEndRule = bucketgate.Rule{Name: "burst", Capacity: 1_000_000_000, RefillPerSecond: 1_000_000}

// endToEndTable creates item 10's table on dyn with the sample key on pro, and returns
// the environment that points a function at it.
func endToEndTable(ctx context.Context, dyn *dynalite.Server, client *dynamodb.Client) ([]string, error) {
	if err := registry.CreateTable(ctx, client, endToEndTableName); err != nil {
		return nil, err
	}
	rec := registry.Record{ID: "key:" + bucketgate.KeyDigest(endToEndKey), Plan: "pro"}
	if _, err := client.PutItem(ctx, &dynamodb.PutItemInput{TableName: aws.String(endToEndTableName), Item: rec.Item()}); err != nil {
		return nil, err
	}
	env := []string{settings.EnvRegistryTable + "=" + endToEndTableName}
	for k, v := range dyn.Env() {
		env = append(env, k+"="+v)
	}
	return env, nil
}

// endToEndEvent is the sample event item 10 sends.
func endToEndEvent(t *testing.T, root string) []byte {
	raw, err := os.ReadFile(filepath.Join(root, endToEndEventFile))
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(raw), endToEndKey) {
		t.Fatalf("%s does not carry the key %q", endToEndEventFile, endToEndKey)
	}
	return raw
}
