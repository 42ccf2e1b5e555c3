package benchreport

import (
	"fmt"
	"strings"
	"testing"
)

// BenchmarkCacheEntryBytes's lines, as make bench appends them, give one row per kind
// of entry; output without them is an error naming the benchmark.
func TestEntryBytesFrom(t *testing.T) {
	out := goBenchOutput + `pkg: github.com/bucketgate/bucketgate/internal/registry
BenchmarkCacheEntryBytes/plan-2         	       1	  21219804 ns/op	       261.4 B/entry
BenchmarkCacheEntryBytes/own-rules-2    	       1	 372141482 ns/op	      1478 B/entry
`
	benches, err := parseGoBench(strings.NewReader(out))
	if err != nil {
		t.Fatal(err)
	}
	got, err := entryBytesFrom(benches)
	if err != nil || len(got) != 2 || got[0].Name != entryBytesPrefix+"own-rules" || got[1].Metrics[entryBytesUnit] != 261.4 {
		t.Fatalf("entryBytesFrom = %+v, %v", got, err)
	}
	var md strings.Builder
	Report{EntryBytes: got}.entryBytesSection(func(format string, args ...any) { fmt.Fprintf(&md, format, args...) })
	if !strings.Contains(md.String(), "| own-rules | 1478 |") || !strings.Contains(md.String(), "| plan | 261 |") {
		t.Errorf("section:\n%s", &md)
	}
	if _, err := entryBytesFrom(map[string]GoBench{}); err == nil || !strings.Contains(err.Error(), entryBytesPrefix) {
		t.Errorf("no lines: %v, want an error naming %s", err, entryBytesPrefix)
	}
}
