package benchreport

import (
	"bytes"
	"context"
	"encoding/csv"
	"fmt"
	"os/exec"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/redis/rueidis"

	"github.com/bucketgate/bucketgate/internal/lua"
)

// Throughput compares decisions per second of one process against redis-benchmark
// running the same script with the same arguments on the same server.
type Throughput struct {
	// Go holds each contender's decisions per second.
	Go []Rate
	// RedisBenchmark is redis-benchmark's best requests per second over the runs.
	RedisBenchmark float64
	// Command is the redis-benchmark command line, with the script's SHA1.
	Command string
}

// Rate is one contender's decisions per second.
type Rate struct {
	// Name is the contender's.
	Name string
	// PerSecond is the best over the repetitions: other work on the machine only ever
	// takes from it.
	PerSecond float64
}

// Best returns the contender with the most decisions per second.
func (t Throughput) Best() Rate {
	var best Rate
	for _, r := range t.Go {
		if r.PerSecond > best.PerSecond {
			best = r
		}
	}
	return best
}

// Ratio is r's decisions per second over redis-benchmark's; goal >= 0.8.
func (t Throughput) Ratio(r Rate) float64 { return r.PerSecond / t.RedisBenchmark }

// ThroughputPlan says how both sides run: Requests decisions over Keyspace random
// identities, Go with Workers goroutines on one client, redis-benchmark with Clients
// connections each pipelining Pipeline requests.
type ThroughputPlan struct {
	// Requests is the number of decisions per run, on either side.
	Requests int
	// Keyspace is how many identities the decisions spread over.
	Keyspace int
	// Workers is the number of goroutines sharing one rueidis client.
	Workers int
	// Clients is redis-benchmark's -c.
	Clients int
	// Pipeline is redis-benchmark's -P.
	Pipeline int
	// Reps is how many runs each side gets, alternating.
	Reps int
}

// MeasureThroughput runs plan: each contender's decisions from this process (Workers
// goroutines) and redis-benchmark against the server at host:port take turns, each on
// an empty database, and the best run of each is returned.
func MeasureThroughput(ctx context.Context, admin rueidis.Client, host, port string, plan ThroughputPlan, cs ...Contender) (Throughput, error) {
	sha, err := scriptSHA1(ctx, admin)
	if err != nil {
		return Throughput{}, err
	}
	if err := checkScriptCommand(ctx, admin, scriptCommand(sha, "bg:{rb-check}")); err != nil {
		return Throughput{}, err
	}
	args := redisBenchmarkArgs(plan, host, port, sha)
	w := Workload{Identities: plan.Keyspace, Rounds: plan.Requests / plan.Keyspace, Workers: plan.Workers}
	goRates := make([][]float64, len(cs))
	var rbRates []float64
	for rep := range plan.Reps {
		for i, c := range cs {
			if err := flushAll(ctx, admin); err != nil {
				return Throughput{}, err
			}
			o, err := w.Run(ctx, "tp-", c.Decide)
			if err != nil {
				return Throughput{}, fmt.Errorf("%s, run %d: %w", c.Name, rep+1, err)
			}
			goRates[i] = append(goRates[i], o.PerSecond())
		}
		if err := flushAll(ctx, admin); err != nil {
			return Throughput{}, err
		}
		rps, err := runRedisBenchmark(ctx, args)
		if err != nil {
			return Throughput{}, fmt.Errorf("redis-benchmark, run %d: %w", rep+1, err)
		}
		rbRates = append(rbRates, rps)
	}
	t := Throughput{RedisBenchmark: slices.Max(rbRates), Command: "redis-benchmark " + strings.Join(args, " ")}
	for i, c := range cs {
		t.Go = append(t.Go, Rate{Name: c.Name, PerSecond: slices.Max(goRates[i])})
	}
	return t, nil
}

// redisBenchmarkArgs is redis-benchmark's command line for plan against addr (host,
// port): scriptCommand on a random identity.
func redisBenchmarkArgs(plan ThroughputPlan, host, port, sha string) []string {
	return append([]string{
		"-h", host, "-p", port, "-n", strconv.Itoa(plan.Requests), "-c", strconv.Itoa(plan.Clients),
		"-P", strconv.Itoa(plan.Pipeline), "-r", strconv.Itoa(plan.Keyspace), "--csv",
	}, scriptCommand(sha, "bg:{rb-__rand_int__}")...)
}

// scriptCommand is the EVALSHA of the bucket script (loaded as sha) that redis-benchmark
// times: one decision of cost 1 for the burst rule on key, the operation left out as the
// Limiter leaves it out.
func scriptCommand(sha, key string) []string {
	return []string{
		"EVALSHA", sha, "1", key, burstRule.Name + lua.TokensSuffix, burstRule.Name + lua.StampSuffix,
		strconv.FormatInt(burstRule.Capacity, 10), strconv.FormatFloat(burstRule.RefillPerSecond, 'g', -1, 64),
	}
}

// checkScriptCommand runs cmd once through admin and checks that the script answered
// a decision, so that a command the script refuses fails the run instead of timing
// error replies.
func checkScriptCommand(ctx context.Context, admin rueidis.Client, cmd []string) error {
	reply, err := admin.Do(ctx, admin.B().Arbitrary(cmd...).Build()).ToArray()
	if err != nil {
		return fmt.Errorf("redis-benchmark's command %q: %w", cmd, err)
	}
	if len(reply) != lua.ReplyLen {
		return fmt.Errorf("redis-benchmark's command %q: %d reply elements, want %d", cmd, len(reply), lua.ReplyLen)
	}
	return nil
}

// runRedisBenchmark runs redis-benchmark with args and returns its requests per second.
func runRedisBenchmark(ctx context.Context, args []string) (float64, error) {
	ctx, cancel := context.WithTimeout(ctx, redisBenchmarkTimeout)
	defer cancel()
	var stderr bytes.Buffer
	cmd := exec.CommandContext(ctx, "redis-benchmark", args...)
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		return 0, fmt.Errorf("redis-benchmark: %w: %s", err, bytes.TrimSpace(stderr.Bytes()))
	}
	return parseRedisBenchmarkCSV(out)
}

// redisBenchmarkTimeout bounds one redis-benchmark run: it waits forever for a server
// that does not answer.
const redisBenchmarkTimeout = 2 * time.Minute

// parseRedisBenchmarkCSV reads the "rps" column of redis-benchmark --csv output.
func parseRedisBenchmarkCSV(out []byte) (float64, error) {
	rows, err := csv.NewReader(bytes.NewReader(out)).ReadAll()
	if err != nil {
		return 0, fmt.Errorf("redis-benchmark csv: %w", err)
	}
	if len(rows) != 2 {
		return 0, fmt.Errorf("redis-benchmark csv: %d rows, want a header and one result", len(rows))
	}
	for i, name := range rows[0] {
		if name == "rps" && i < len(rows[1]) {
			rps, err := strconv.ParseFloat(rows[1][i], 64)
			if err != nil {
				return 0, fmt.Errorf("redis-benchmark csv: rps: %w", err)
			}
			return rps, nil
		}
	}
	return 0, fmt.Errorf("redis-benchmark csv: no rps column in %q", rows[0])
}

// scriptSHA1 loads the bucket script and returns its SHA1, for redis-benchmark.
func scriptSHA1(ctx context.Context, admin rueidis.Client) (string, error) {
	sha, err := admin.Do(ctx, admin.B().ScriptLoad().Script(lua.BucketSource).Build()).ToString()
	if err != nil {
		return "", fmt.Errorf("script load: %w", err)
	}
	return sha, nil
}
