package bucketgate_test

import (
	"fmt"
	"time"

	"github.com/bucketgate/bucketgate"
)

// A request for one token of an API key's buckets under two rules decided together: a
// burst of 10 tokens refilled at 1 a second, and a monthly quota of 1,000 tokens that
// begins on the 15th. The identity is the key's digest, never the key. A cost above a
// rule's capacity could never be allowed: Validate refuses it, naming the rule.
func Example() {
	req := bucketgate.Request{
		Identity: bucketgate.KeyIdentity("sk_example_key").String(),
		Rules: []bucketgate.Rule{
			{Name: "burst", Capacity: 10, RefillPerSecond: 1},
			{Name: "monthly", Limit: 1000, Period: bucketgate.PeriodMonth, Anchor: 15},
		},
		Cost: 1,
	}
	fmt.Println(req.Identity)
	fmt.Println("valid:", req.Validate() == nil)
	fmt.Println("burst fills in", req.Rules[0].FillTime())
	start, end := req.Rules[1].Window(time.Date(2026, time.November, 26, 9, 30, 0, 0, time.UTC))
	fmt.Println("monthly window", start.Format(time.DateOnly), "to", end.Format(time.DateOnly))

	req.Cost = 11
	fmt.Println(req.Validate())
	// Output:
	// key:3b285279bd1ba851e42f16d5ba693f34
	// valid: true
	// burst fills in 10s
	// monthly window 2026-11-15 to 2026-12-15
	// invalid: cost 11 exceeds capacity 10 of rule burst: it could never be allowed
}
