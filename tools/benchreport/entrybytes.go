package benchreport

import "strings"

// entryBytesPrefix starts the names of internal/registry's BenchmarkCacheEntryBytes
// sub-benchmarks: the heap of one registry cache entry, by kind of entry.
const entryBytesPrefix = "BenchmarkCacheEntryBytes/"

// entryBytesUnit is the unit BenchmarkCacheEntryBytes reports.
const entryBytesUnit = "B/entry"

// entryBytesFrom picks BenchmarkCacheEntryBytes's sub-benchmarks out of parsed output,
// in name order; each must have reported entryBytesUnit.
func entryBytesFrom(benches map[string]GoBench) ([]GoBench, error) {
	return subBenchmarks(benches, entryBytesPrefix, entryBytesUnit)
}

// entryBytesSection writes the registry cache's bytes per entry, one row per kind.
func (r Report) entryBytesSection(p func(format string, args ...any)) {
	p("Bytes per registry cache entry (`BenchmarkCacheEntryBytes` in internal/registry: the heap after a\n")
	p("collection, over 2,000 API keys, under a plan of 7 rules and 100 routes that each add one; an entry\n")
	p("with rules of its own shares the document's route table):\n\n")
	p("| entry | bytes |\n|---|---|\n")
	for _, g := range r.EntryBytes {
		p("| %s | %.0f |\n", strings.TrimPrefix(g.Name, entryBytesPrefix), g.Metrics[entryBytesUnit])
	}
	p("\n")
}
