package checkclient_test

import (
	"context"
	"encoding/json"
	"errors"
	"testing"

	"github.com/bucketgate/bucketgate/checkapi"
	"github.com/bucketgate/bucketgate/checkclient"
)

// FuzzDecodeAnswer: whatever the function answers, Check returns either a decision
// that the answer states once, in checkapi's spelling (its allowed and reason members
// are the ones returned, and they agree), or a *FunctionError; never a panic, and never
// a decision read from a member the contract does not name.
func FuzzDecodeAnswer(f *testing.F) {
	for _, seed := range []string{
		`{"allowed":true,"reason":"ok","limit":10,"remaining":9,"retryAfterMs":0,"resetAfterMs":100,"rule":"burst","plan":"free"}`,
		`{"allowed":false,"reason":"limited","retryAfterMs":1500,"addedLater":{"x":[1,2]}}`,
		`{"allowed":false,"reason":"unavailable","retryAfterMs":1000}`,
		`{"allowed":true,"reason":"degraded"}`,
		`{"allowed":false,"Allowed":true,"reason":"ok"}`,
		`{"allowed":true,"reason":"ok","allowed":false}`,
		`{"allowed":null,"reason":"limited"}`,
		`{"allowed":true,"reason":"ok","limit":1.5}`,
		`{"errorType":"Boom","errorMessage":"x"}`,
		`null`, `[]`, `"ok"`, `{}`, `{"allowed":true,"reason":"ok"} {}`,
		`{"allowed":true,"reason":"ok","limit":10,"remaining":7,"rules":[{"name":"burst","limit":10,"remaining":7,"resetAfterMs":3000},` +
			`{"name":"monthly","period":"month","limit":1000,"remaining":990,"resetAfterMs":86400000,"windowEnd":"2026-12-01T00:00:00Z"}]}`,
		`{"allowed":true,"reason":"ok","rules":[{"name":"m","period":"fortnight","limit":1,"remaining":2}]}`,
	} {
		f.Add([]byte(seed))
	}
	var payload []byte
	c := serve(f, func([]byte) ([]byte, error) { return payload, nil })
	f.Fuzz(func(t *testing.T, answer []byte) {
		payload = answer
		res, err := c.Check(context.Background(), checkapi.Request{Key: "k"})
		if err != nil {
			var fe *checkclient.FunctionError
			var ie *checkclient.InvalidRequestError
			if !errors.As(err, &fe) && !errors.As(err, &ie) {
				t.Fatalf("answer %q: error %v (%T), want a *FunctionError or an *InvalidRequestError", answer, err, err)
			}
			return
		}
		var stated struct { // the members by their exact names; a name repeated keeps its last
			Allowed *bool            `json:"allowed"`
			Reason  *checkapi.Reason `json:"reason"`
		}
		var members map[string]json.RawMessage
		if json.Unmarshal(answer, &members) != nil || json.Unmarshal(members["allowed"], &stated.Allowed) != nil ||
			json.Unmarshal(members["reason"], &stated.Reason) != nil || stated.Allowed == nil || stated.Reason == nil {
			t.Fatalf("answer %q read as %+v, but it does not state allowed and reason", answer, res)
		}
		if *stated.Allowed != res.Allowed || *stated.Reason != res.Reason {
			t.Fatalf("answer %q read as %+v: it states allowed %v, reason %q", answer, res, *stated.Allowed, *stated.Reason)
		}
		if res.Limit < 0 || res.Remaining < 0 || res.RetryAfterMS < 0 || res.ResetAfterMS < 0 {
			t.Fatalf("answer %q read as %+v: a figure below zero", answer, res)
		}
	})
}
