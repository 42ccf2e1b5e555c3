package telemetry

// The key registry's metrics, written only when a registry table is set.
const (
	// MetricRegistryLookups counts registry lookups by Result: hit (from the cache),
	// miss (read from the table), stale (the table failed; an older entry answered),
	// error (the table failed; nothing cached), abandoned (the invocation's time ran out
	// before the table answered: no failure of the table).
	MetricRegistryLookups = "RegistryLookups"
	// MetricRegistryInvalid counts reads of registry items that could not be used
	// (unknown plan, invalid rules, wrong types): each is also an error log line naming
	// the item and the attribute.
	MetricRegistryInvalid = "RegistryInvalidItems"
	// MetricConfigInvalid counts reads of a configuration document in the registry
	// table that does not load (never applied: the document in force stays): each is
	// also an error log line naming the version and the field.
	MetricConfigInvalid = "ConfigInvalid"
	// DimResult is the dimension of MetricRegistryLookups.
	DimResult = "Result"
)

// lookupCount is how many lookups of an invocation had one result.
type lookupCount struct {
	result string
	n      int
}

// ObserveLookup adds one registry lookup answered as result (hit, miss, stale, error or
// abandoned, registry.Result's values); invalid reports that it read an item that could not be used.
func (inv *Invocation) ObserveLookup(result string, invalid bool) {
	if invalid {
		inv.invalid++
	}
	inv.countLookup(result, 1)
}

// countLookup adds n lookups answered as result.
func (inv *Invocation) countLookup(result string, n int) {
	for i := range inv.lookups {
		if inv.lookups[i].result == result {
			inv.lookups[i].n += n
			return
		}
	}
	inv.lookups = append(inv.lookups, lookupCount{result: result, n: n})
}

// ObserveConfig adds what getting the invocation's configuration read: nothing (result
// ""), the registry table's configuration item (a lookup answered result: miss, or
// error when the read failed and the document in force stayed); invalid reports that
// the document read does not load.
func (inv *Invocation) ObserveConfig(result string, invalid bool) {
	if result != "" {
		inv.ObserveLookup(result, false)
	}
	if invalid {
		inv.configInvalid++
	}
}
