package checkclient_test

import (
	"context"
	"encoding/json"
	"errors"
	"reflect"
	"strings"
	"testing"

	"github.com/bucketgate/bucketgate/checkapi"
	"github.com/bucketgate/bucketgate/checkclient"
)

// Usage sends op usage with its days, and reads the report strictly: an answer whose
// days or total do not add up is unreadable, never a report.
func TestUsage(t *testing.T) {
	report := `{"identity":"tenant:acme","from":"2026-11-24","to":"2026-11-25","days":[
		{"date":"2026-11-24","allowed":3,"limited":1,"cost":9},
		{"date":"2026-11-25","allowed":0,"limited":0,"cost":0}],
		"total":{"allowed":3,"limited":1,"cost":9}}`
	var sent []byte
	answer := report
	c := serve(t, func(p []byte) ([]byte, error) {
		sent = p
		return []byte(answer), nil
	})
	u, err := c.Usage(context.Background(), checkapi.Request{Key: "acme", From: "2026-11-24", To: "2026-11-25"})
	if err != nil {
		t.Fatal(err)
	}
	if string(sent) != `{"key":"acme","op":"usage","from":"2026-11-24","to":"2026-11-25"}` {
		t.Errorf("sent %s", sent)
	}
	var want checkapi.Usage
	if err := json.Unmarshal([]byte(report), &want); err != nil || !reflect.DeepEqual(u, want) {
		t.Fatalf("Usage = %+v, want %+v (%v)", u, want, err)
	}
	for name, bad := range map[string]string{
		"a day missing":     strings.Replace(report, `{"date":"2026-11-25","allowed":0,"limited":0,"cost":0}`, `{"date":"2026-11-26","allowed":0,"limited":0,"cost":0}`, 1),
		"a total not added": strings.Replace(report, `"total":{"allowed":3`, `"total":{"allowed":4`, 1),
		"a negative count":  strings.Replace(report, `"limited":1,"cost":9},`, `"limited":-1,"cost":9},`, 1),
		"a negative count of checks allowed": strings.Replace(strings.Replace(report, `"allowed":3,"limited":1,"cost":9},`, `"allowed":-3,"limited":1,"cost":9},`, 1),
			`"total":{"allowed":3`, `"total":{"allowed":-3`, 1),
		"no identity":                     strings.Replace(report, `"identity":"tenant:acme"`, `"identity":""`, 1),
		"a decision":                      `{"allowed":true,"reason":"ok"}`,
		"identity twice":                  strings.Replace(report, `"identity":"tenant:acme"`, `"identity":"tenant:acme","identity":"tenant:other"`, 1),
		"identity in another case":        strings.Replace(report, `"identity":"tenant:acme"`, `"identity":"tenant:acme","Identity":"tenant:other"`, 1),
		"a day's count null":              strings.Replace(report, `"limited":0,"cost":0}`, `"limited":0,"cost":null}`, 1),
		"a day's count twice":             strings.Replace(report, `"limited":0,"cost":0}`, `"limited":0,"limited":0,"cost":0}`, 1),
		"a total's count in another case": strings.Replace(report, `"total":{"allowed":3,`, `"total":{"allowed":3,"ALLOWED":3,`, 1),
		"days twice":                      strings.Replace(report, `"total":`, `"days":[],"total":`, 1),
	} {
		answer = bad
		var fe *checkclient.FunctionError
		if _, err := c.Usage(context.Background(), checkapi.Request{Key: "acme"}); !errors.As(err, &fe) || fe.Type != checkclient.ErrorTypeUnreadable {
			t.Errorf("%s: %v, want an unreadable answer", name, err)
		}
	}
	// A settle corrects the cost of the day it is made on: below the checks, or below
	// zero for a day that settled reserves of the day before.
	answer = strings.Replace(strings.Replace(report, `"allowed":0,"limited":0,"cost":0}`, `"allowed":0,"limited":0,"cost":-7}`, 1),
		`"total":{"allowed":3,"limited":1,"cost":9}`, `"total":{"allowed":3,"limited":1,"cost":2}`, 1)
	if u, err := c.Usage(context.Background(), checkapi.Request{Key: "acme"}); err != nil || u.Days[1].Cost != -7 || u.Total.Cost != 2 {
		t.Errorf("a day's cost below zero: %+v, %v", u, err)
	}
	var ire *checkclient.InvalidRequestError
	if _, err := c.Usage(context.Background(), checkapi.Request{Key: "acme", Op: checkapi.OpReset}); !errors.As(err, &ire) || !ire.Local {
		t.Errorf("a reset sent as usage: %v", err)
	}
}

// A peek's rules are read as strictly as the rest of a decision.
func TestPeekRulesDecoding(t *testing.T) {
	answer := ""
	c := serve(t, func([]byte) ([]byte, error) { return []byte(answer), nil })
	good := `{"allowed":true,"reason":"ok","limit":10,"remaining":7,"retryAfterMs":0,"resetAfterMs":3000,"rule":"burst","plan":"free","rules":[` +
		`{"name":"burst","limit":10,"remaining":7,"resetAfterMs":3000},{"name":"monthly","period":"month","limit":1000,"remaining":990,"resetAfterMs":86400000,"windowEnd":"2026-12-01T00:00:00Z"}]}`
	answer = good
	res, err := c.Check(context.Background(), checkapi.Request{Key: "k", Cost: checkapi.Cost(0)})
	if err != nil || len(res.Rules) != 2 || res.Rules[1].WindowEnd != "2026-12-01T00:00:00Z" {
		t.Fatalf("Check = %+v, %v", res, err)
	}
	for name, bad := range map[string]string{
		"more left than the limit": strings.Replace(good, `"remaining":990`, `"remaining":1001`, 1),
		"a quota without its end":  strings.Replace(good, `,"windowEnd":"2026-12-01T00:00:00Z"`, ``, 1),
		"a bucket with an end":     strings.Replace(good, `"resetAfterMs":3000}`, `"resetAfterMs":3000,"windowEnd":"2026-12-01T00:00:00Z"}`, 1),
		"an end that is no time":   strings.Replace(good, `2026-12-01T00:00:00Z`, `December`, 1),
		"an unknown period":        strings.Replace(good, `"period":"month"`, `"period":"year"`, 1),
	} {
		answer = bad
		var fe *checkclient.FunctionError
		if _, err := c.Check(context.Background(), checkapi.Request{Key: "k", Cost: checkapi.Cost(0)}); !errors.As(err, &fe) || fe.Type != checkclient.ErrorTypeUnreadable {
			t.Errorf("%s: %v, want an unreadable answer", name, err)
		}
	}
}
