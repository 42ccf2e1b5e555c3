package checkapi_test

import (
	"encoding/json"
	"fmt"
	"log"

	"github.com/bucketgate/bucketgate/checkapi"
)

// A caller asks whether tenant-42 may spend 5 tokens on the pro plan, and reads the
// check function's answer: a denial, with how long to wait.
func Example() {
	payload, err := json.Marshal(checkapi.Request{Key: "tenant-42", Plan: "pro", Cost: checkapi.Cost(5)})
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println(string(payload))

	answer := `{"allowed": false, "reason": "limited", "limit": 100, "remaining": 2,
		"retryAfterMs": 1500, "resetAfterMs": 58500, "rule": "per-minute", "plan": "pro"}`
	var res checkapi.Response
	if err := json.Unmarshal([]byte(answer), &res); err != nil {
		log.Fatal(err)
	}
	if !res.Allowed {
		fmt.Printf("%s by rule %s: %d of %d tokens left, retry in %v\n", res.Reason, res.Rule, res.Remaining, res.Limit, res.RetryAfter())
	}
	// Output:
	// {"key":"tenant-42","plan":"pro","cost":5}
	// limited by rule per-minute: 2 of 100 tokens left, retry in 1.5s
}
