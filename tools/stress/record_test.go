package stress

import (
	"bytes"
	"errors"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/bucketgate/bucketgate"
	"github.com/bucketgate/bucketgate/internal/guard"
)

func TestRecordsRoundTrip(t *testing.T) {
	path := filepath.Join(t.TempDir(), "records")
	rf, err := createRecordFile(path)
	if err != nil {
		t.Fatal(err)
	}
	start := time.UnixMicro(1_700_000_000_000_000)
	results := []struct {
		res guard.Result
		err error
	}{
		{guard.Result{Decision: bucketgate.Decision{Allowed: true, Reason: bucketgate.ReasonOK, Remaining: 7, At: start.Add(time.Millisecond)}}, nil},
		{guard.Result{Decision: bucketgate.Decision{Reason: bucketgate.ReasonLimited, RetryAfter: 1500 * time.Millisecond, At: start}, CacheHit: true}, nil},
		{guard.Result{Decision: bucketgate.Decision{Reason: bucketgate.ReasonUnavailable, RetryAfter: time.Second}, Failure: guard.FailureTimeout, CircuitOpen: true}, nil},
		{guard.Result{}, bucketgate.ErrInvalid},
	}
	var want []Record
	b := rf.batch()
	for i, r := range results {
		rec := newRecord(start, start.Add(2*time.Millisecond), r.res, r.err)
		rec.Identity, rec.Scenario, rec.Shape, rec.Cost, rec.Instance = uint32(1<<31+i), 2, 3, 4, 5
		b.add(rec)
		rec.Worker = 9
		want = append(want, rec)
	}
	b.flush()
	if err := rf.Close(); err != nil {
		t.Fatal(err)
	}
	got, err := readRecordsFile(path, 9)
	if err != nil {
		t.Fatal(err)
	}
	if len(got) != len(want) {
		t.Fatalf("%d records, want %d", len(got), len(want))
	}
	for i := range want {
		if got[i] != want[i] {
			t.Errorf("record %d: %+v, want %+v", i, got[i], want[i])
		}
	}
	tests := []struct {
		name                              string
		decided, sent, allowed, cache, co bool
		outcome                           Outcome
	}{
		{"allowed", true, false, true, false, false, OutcomeOK},
		{"cached denial", false, false, false, true, false, OutcomeLimited},
		{"circuit open", false, false, false, false, true, OutcomeUnavailable},
		{"invalid", false, false, false, false, false, OutcomeError},
	}
	for i, tc := range tests {
		r := got[i]
		if r.Decided() != tc.decided || r.Sent() != tc.sent || r.Allowed() != tc.allowed || r.CacheHit() != tc.cache || r.CircuitOpen() != tc.co || Outcome(r.Outcome) != tc.outcome {
			t.Errorf("%s: %+v", tc.name, r)
		}
	}
	if got[1].At != 0 || got[0].At != start.Add(time.Millisecond).UnixMicro() {
		t.Errorf("a cache hit keeps no Redis time; a decision keeps its own: %+v", got[:2])
	}
}

func TestReadRecordsRefusesATornFile(t *testing.T) {
	_, err := readRecords(bytes.NewReader(make([]byte, recordSize+1)), 0)
	if err == nil || !strings.Contains(err.Error(), "whole number") {
		t.Fatalf("error %v", err)
	}
}

func TestViolation(t *testing.T) {
	ok := allowed(0, 0, 0, 1, 10)
	limited := Record{At: 10, Outcome: uint8(OutcomeLimited), RetryAfter: 5}
	closed := Record{Outcome: uint8(OutcomeUnavailable), Failure: failureCode(guard.FailureTimeout), RetryAfter: guard.FailureRetryAfter.Milliseconds()}
	tests := []struct {
		name string
		rec  Record
		bad  bool
	}{
		{"allowed by Redis", ok, false},
		{"limited by Redis", limited, false},
		{"limited by the deny cache", Record{Outcome: uint8(OutcomeLimited), RetryAfter: 5, Flags: flagCacheHit}, false},
		{"fail closed", closed, false},
		{"fail closed by the breaker", Record{Outcome: closed.Outcome, Failure: closed.Failure, RetryAfter: closed.RetryAfter, Flags: flagCircuitOpen}, false},
		{"allowed without a Redis time", Record{Outcome: uint8(OutcomeOK), Flags: flagAllowed}, true},
		{"ok but not allowed", Record{At: 10, Outcome: uint8(OutcomeOK)}, true},
		{"limited without retry-after", Record{At: 10, Outcome: uint8(OutcomeLimited)}, true},
		{"limited and allowed", Record{At: 10, Outcome: uint8(OutcomeLimited), RetryAfter: 5, Flags: flagAllowed}, true},
		{"fail closed without a failure", Record{Outcome: closed.Outcome, RetryAfter: closed.RetryAfter}, true},
		{"fail closed with a short retry-after", Record{Outcome: closed.Outcome, Failure: closed.Failure, RetryAfter: 10}, true},
		{"fail closed but allowed", Record{Outcome: closed.Outcome, Failure: closed.Failure, RetryAfter: closed.RetryAfter, Flags: flagAllowed}, true},
		{"degraded", Record{Outcome: uint8(OutcomeDegraded), Flags: flagAllowed}, true},
		{"error", Record{Outcome: uint8(OutcomeError)}, true},
	}
	for _, tc := range tests {
		if got := violation(tc.rec) != ""; got != tc.bad {
			t.Errorf("%s: violation %q, want one: %v", tc.name, violation(tc.rec), tc.bad)
		}
	}
	if outcomeOf(guard.Result{}, errors.New("x")) != OutcomeError {
		t.Error("an error is OutcomeError")
	}
}
