package telemetry

import "time"

// The key registry's metrics, written only when a registry table is set.
const (
	// MetricRegistryLookups counts registry lookups by Result: hit (from the cache),
	// miss (read from the table), stale (the table failed; an older entry answered),
	// error (the table failed; nothing cached).
	MetricRegistryLookups = "RegistryLookups"
	// MetricRegistryInvalid counts reads of registry items that could not be used
	// (unknown plan, invalid rules, wrong types): each is also an error log line naming
	// the item and the attribute.
	MetricRegistryInvalid = "RegistryInvalidItems"
	// DimResult is the dimension of MetricRegistryLookups.
	DimResult = "Result"
)

// lookupCount is how many lookups of an invocation had one result.
type lookupCount struct {
	result string
	n      int
}

// ObserveLookup adds one registry lookup answered as result (hit, miss, stale or error,
// registry.Result's values); invalid reports that it read an item that could not be used.
func (inv *Invocation) ObserveLookup(result string, invalid bool) {
	if invalid {
		inv.invalid++
	}
	for i := range inv.lookups {
		if inv.lookups[i].result == result {
			inv.lookups[i].n++
			return
		}
	}
	inv.lookups = append(inv.lookups, lookupCount{result: result, n: 1})
}

// withRegistry adds inv's registry metrics to docs, the decision documents: one lookup
// result per document, in order, with new documents for results beyond them, and the
// invalid items in the first.
func (e *Emitter) withRegistry(at time.Time, inv *Invocation, docs []map[string]any) []map[string]any {
	// directive adds metric (by dimension dim and its value, when dim is set) to the
	// i-th document, the first of a new one when i is past the last.
	directive := func(i int, metric string, n int, dim, value string) {
		if i == len(docs) {
			docs = append(docs, map[string]any{
				DimFunction: e.function,
				"_aws":      map[string]any{"Timestamp": at.UnixMilli(), "CloudWatchMetrics": []emfDirective(nil)},
			})
		}
		d := emfDirective{Namespace: e.namespace, Dimensions: [][]string{{DimFunction}}, Metrics: []emfMetric{{metric, "Count"}}}
		if dim != "" {
			d.Dimensions = [][]string{{dim}, {DimFunction, dim}}
			docs[i][dim] = value
		}
		docs[i][metric] = n
		aws := docs[i]["_aws"].(map[string]any)
		aws["CloudWatchMetrics"] = append(aws["CloudWatchMetrics"].([]emfDirective), d)
	}
	for i, l := range inv.lookups {
		directive(i, MetricRegistryLookups, l.n, DimResult, l.result)
	}
	if inv.invalid > 0 {
		directive(0, MetricRegistryInvalid, inv.invalid, "", "")
	}
	return docs
}
