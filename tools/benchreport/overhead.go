package benchreport

import (
	"fmt"
	"slices"
	"strings"
)

// handlerOverheadPrefix starts the names of internal/authorizer's BenchmarkHandlerOverhead
// sub-benchmarks, one per event format.
const handlerOverheadPrefix = "BenchmarkHandlerOverhead/"

// handlerOverheadFrom picks BenchmarkHandlerOverhead's sub-benchmarks out of parsed
// output, in name order; each must have reported ns/op, B/op and allocs/op.
func handlerOverheadFrom(benches map[string]GoBench) ([]GoBench, error) {
	return subBenchmarks(benches, handlerOverheadPrefix, "ns/op", "B/op", "allocs/op")
}

// subBenchmarks picks the benchmarks whose names start with prefix out of parsed
// output, in name order; each must have reported every unit of units, and there must be
// one at least.
func subBenchmarks(benches map[string]GoBench, prefix string, units ...string) ([]GoBench, error) {
	var out []GoBench
	for name, g := range benches {
		if !strings.HasPrefix(name, prefix) {
			continue
		}
		for _, unit := range units {
			if _, ok := g.Metrics[unit]; !ok {
				return nil, fmt.Errorf("%s lacks %s (B/op and allocs/op need -benchmem)", name, unit)
			}
		}
		out = append(out, g)
	}
	if len(out) == 0 {
		return nil, fmt.Errorf("go test output lacks %s*", prefix)
	}
	slices.SortFunc(out, func(a, b GoBench) int { return strings.Compare(a.Name, b.Name) })
	return out, nil
}

// overheadCase is the event format a BenchmarkHandlerOverhead sub-benchmark measured.
func overheadCase(g GoBench) string { return strings.TrimPrefix(g.Name, handlerOverheadPrefix) }
