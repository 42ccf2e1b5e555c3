package benchreport

import (
	"bufio"
	"fmt"
	"io"
	"strconv"
	"strings"
)

// GoBench is one benchmark's figures from `go test -bench -benchmem` output: the
// median over its runs of every unit it reported.
type GoBench struct {
	// Name is the benchmark's name without the -GOMAXPROCS suffix.
	Name string
	// Metrics maps a unit ("ns/op", "allocs/op", a custom one) to its median.
	Metrics map[string]float64
	// Runs is how many result lines there were.
	Runs int
}

// ClientCost compares a decision through internal/bucket's Limiter with a bare rueidis
// EVALSHA of the same script and arguments (BenchmarkClientCost).
type ClientCost struct {
	// Limiter and Bare are each side on its own; Paired alternates them call by call.
	Limiter, Bare, Paired GoBench
}

// LimiterNs and BareNs are the paired run's mean time per call of each side.
func (c ClientCost) LimiterNs() float64 { return c.Paired.Metrics[pairedLimiterUnit] }

// BareNs is the paired run's mean time per bare EVALSHA.
func (c ClientCost) BareNs() float64 { return c.Paired.Metrics[pairedBareUnit] }

// Ratio is the Limiter's time per decision over the bare EVALSHA's, call by call;
// goal <= 1.2.
func (c ClientCost) Ratio() float64 { return c.LimiterNs() / c.BareNs() }

// The sub-benchmarks of internal/bucket's BenchmarkClientCost and the paired one's units.
const (
	clientCostLimiter = "BenchmarkClientCost/limiter"
	clientCostBare    = "BenchmarkClientCost/bare-evalsha"
	clientCostPaired  = "BenchmarkClientCost/paired"
	pairedLimiterUnit = "limiter-ns/op"
	pairedBareUnit    = "bare-ns/op"
)

// clientCostFrom picks BenchmarkClientCost's sub-benchmarks out of parsed output.
func clientCostFrom(benches map[string]GoBench) (ClientCost, error) {
	var c ClientCost
	for _, want := range []struct {
		name string
		dst  *GoBench
	}{{clientCostLimiter, &c.Limiter}, {clientCostBare, &c.Bare}, {clientCostPaired, &c.Paired}} {
		g, ok := benches[want.name]
		if !ok {
			return ClientCost{}, fmt.Errorf("go test output lacks %s", want.name)
		}
		*want.dst = g
	}
	if c.LimiterNs() <= 0 || c.BareNs() <= 0 {
		return ClientCost{}, fmt.Errorf("%s lacks %s or %s", clientCostPaired, pairedLimiterUnit, pairedBareUnit)
	}
	return c, nil
}

// parseGoBench reads `go test -bench` output and returns every benchmark's medians by
// name. Lines that are not results are skipped.
func parseGoBench(r io.Reader) (map[string]GoBench, error) {
	samples := map[string]map[string][]float64{}
	runs := map[string]int{}
	sc := bufio.NewScanner(r)
	for sc.Scan() {
		f := strings.Fields(sc.Text())
		if len(f) < 4 || !strings.HasPrefix(f[0], "Benchmark") || len(f)%2 != 0 {
			continue
		}
		if _, err := strconv.Atoi(f[1]); err != nil {
			continue
		}
		name := f[0]
		if i := strings.LastIndexByte(name, '-'); i > 0 {
			if _, err := strconv.Atoi(name[i+1:]); err == nil {
				name = name[:i]
			}
		}
		if samples[name] == nil {
			samples[name] = map[string][]float64{}
		}
		runs[name]++
		for i := 2; i+1 < len(f); i += 2 {
			v, err := strconv.ParseFloat(f[i], 64)
			if err != nil {
				return nil, fmt.Errorf("benchmark line %q: %s: %w", sc.Text(), f[i+1], err)
			}
			samples[name][f[i+1]] = append(samples[name][f[i+1]], v)
		}
	}
	if err := sc.Err(); err != nil {
		return nil, fmt.Errorf("read benchmark output: %w", err)
	}
	out := make(map[string]GoBench, len(samples))
	for name, units := range samples {
		g := GoBench{Name: name, Metrics: map[string]float64{}, Runs: runs[name]}
		for unit, vs := range units {
			g.Metrics[unit] = median(vs)
		}
		out[name] = g
	}
	return out, nil
}
