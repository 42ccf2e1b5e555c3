// Package eventbus sends bucketgate's events to Amazon EventBridge: a quota's threshold
// reached, an identity's first denial by a rule in a window. A decision is made first
// and never changes for an event: the events of an invocation go in one PutEvents call
// (more, ten entries each and ten at once, when there are more than ten), bounded by a deadline
// (EVENTS_TIMEOUT_MS); what is not sent by then, or is refused, is counted
// (telemetry.MetricEventsFailed by reason) and logged, at most once per period.
//
// An event's detail names an identity by its digest form, never a raw key.
package eventbus

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"maps"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/aws/retry"
	awsconfig "github.com/aws/aws-sdk-go-v2/config"
	"github.com/aws/aws-sdk-go-v2/service/eventbridge"
	"github.com/aws/aws-sdk-go-v2/service/eventbridge/types"

	"github.com/bucketgate/bucketgate"
	"github.com/bucketgate/bucketgate/internal/awsretry"
	"github.com/bucketgate/bucketgate/internal/madekey"
	"github.com/bucketgate/bucketgate/internal/telemetry"
)

// Source is the source of every event bucketgate sends.
const Source = "bucketgate"

// Detail types: what happened.
const (
	// TypeQuotaThreshold is a quota's count reaching a threshold of its limit (80 or
	// 100 percent) in its window, once per window and threshold.
	TypeQuotaThreshold = "Quota Threshold Reached"
	// TypeRateLimited is an identity's first denial by a rule in a window.
	TypeRateLimited = "Rate Limited"
)

// The kinds of a rule, a Detail's Kind. A concurrency rule sends no event.
const (
	// KindQuota is a quota, on the calendar.
	KindQuota = "quota"
	// KindBucket is a token bucket.
	KindBucket = "bucket"
)

// MaxEntries is the most entries one PutEvents call takes (EventBridge's limit).
const MaxEntries = 10

// MaxCalls is the most PutEvents calls of one Send that run at once; the others wait
// for one of them to end. A batch of the check function's can cross 1,600 thresholds
// (100 checks of 8 rules, each at 80 and 100 percent): 160 calls, which at once would
// open as many connections to EventBridge, in one instance, of which the SDK keeps ten
// open for the next invocation (its idle connections per host), and spend as many of the
// account's PutEvents requests per second in an instant.
const MaxCalls = 10

// Event is one event of a decision.
type Event struct {
	// Type is its detail type: TypeQuotaThreshold or TypeRateLimited.
	Type string
	// Time is when the decision was made.
	Time time.Time
	// Detail is what the event says.
	Detail Detail
}

// Detail is an event's detail, its JSON: who, under which plan and rule, how much of
// which limit, in which window. It holds no raw key.
type Detail struct {
	// Identity is the bucket identity in its digest form (bucketgate.LogForm):
	// "key:<digest>", "tenant:<digest>", "acct:<name>" or "ip:<address>".
	Identity string `json:"identity"`
	// Account is the identity's account (a registry item's account), if any.
	Account string `json:"account,omitempty"`
	// Owner is the registry item's owner, if any: text for people, with every API key
	// bucketgate made that it holds masked (madekey.Mask), as an item written by hand may.
	Owner string `json:"owner,omitempty"`
	// Plan is the plan decided under.
	Plan string `json:"plan"`
	// Rule is the rule whose threshold was reached, or that denied.
	Rule string `json:"rule"`
	// Kind is Rule's kind, KindQuota or KindBucket: a Rate Limited of a quota says it is
	// exhausted for that request (denied short of its limit when Usage is below Limit),
	// of a bucket that its tokens are, until it refills.
	Kind string `json:"kind"`
	// Threshold is the percent of Limit reached: 80 or 100 (TypeQuotaThreshold only).
	Threshold int `json:"threshold,omitempty"`
	// Usage is what the rule counted in its window when it crossed: a quota's count; a
	// bucket's tokens taken from it (its capacity less the floor of what it holds):
	// above Limit, by the debt, for a bucket a settle left below zero.
	Usage int64 `json:"usage"`
	// Limit is the rule's limit or capacity.
	Limit int64 `json:"limit"`
	// Window is the rule's window: a quota's calendar window; for a bucket, from the
	// denial until the bucket is full again.
	Window Window `json:"window"`
	// Stack is the stack of the function that sent it (STACK_NAME).
	Stack string `json:"stack"`
}

// Window is a span of time, its Start included and its End not.
type Window struct {
	Start time.Time `json:"start"`
	End   time.Time `json:"end"`
}

// Who is whose decision it was, for its events' detail.
type Who struct {
	// Identity is whose buckets were decided, in any form: the detail holds its
	// digest form (bucketgate.LogForm).
	Identity string
	// Account, Owner and Plan are the registry's account and owner of the identity
	// (empty when none) and the plan decided under.
	Account, Owner, Plan string
}

// Crossed returns the events of what d crossed (d.Crossings), one per crossing, for
// who (its Owner masked: see Detail.Owner); nil when d crossed nothing. Its detail's Stack is left to the Sender.
func Crossed(d bucketgate.Decision, who Who) []Event {
	if len(d.Crossings) == 0 {
		return nil
	}
	events := make([]Event, 0, len(d.Crossings))
	owner := madekey.Mask(who.Owner) // text for people, a key in it as written by hand
	for _, c := range d.Crossings {
		typ, kind := TypeRateLimited, KindBucket
		if c.Kind == bucketgate.CrossingThreshold {
			typ = TypeQuotaThreshold
		}
		if c.Quota {
			kind = KindQuota
		}
		events = append(events, Event{Type: typ, Time: d.At.UTC(), Detail: Detail{
			Identity: bucketgate.LogForm(who.Identity), Account: who.Account, Owner: owner, Plan: who.Plan,
			Rule: c.Rule, Kind: kind, Threshold: int(c.Percent), Usage: c.Usage, Limit: c.Limit,
			Window: Window{Start: c.WindowStart.UTC(), End: c.WindowEnd.UTC()}}})
	}
	return events
}

// DefaultLogEvery is how often, at most, a Sender logs its failures when
// Options.LogEvery is zero.
const DefaultLogEvery = time.Minute

// putter puts events on a bus; *eventbridge.Client is one.
type putter interface {
	PutEvents(ctx context.Context, in *eventbridge.PutEventsInput, opts ...func(*eventbridge.Options)) (*eventbridge.PutEventsOutput, error)
}

// NewClient returns an EventBridge client of the AWS SDK's default configuration (the
// region, the credentials, and AWS_ENDPOINT_URL_EVENTBRIDGE when set). It sends no
// request.
func NewClient(ctx context.Context) (*eventbridge.Client, error) {
	cfg, err := awsconfig.LoadDefaultConfig(ctx)
	if err != nil {
		return nil, fmt.Errorf("AWS configuration for EventBridge: %w", err)
	}
	return eventbridge.NewFromConfig(cfg), nil
}

// Options configure a Sender. Bus, Timeout and Log are required.
type Options struct {
	// Bus is the event bus, by name or ARN (EVENT_BUS_NAME).
	Bus string
	// Timeout bounds one Send (EVENTS_TIMEOUT_MS).
	Timeout time.Duration
	// Margin is how long before the deadline of Send's context (the invocation's) a
	// Send ends at the latest, so that the function still answers in time; zero ends it
	// at the deadline.
	Margin time.Duration
	// Stack fills the Stack of a detail that has none (STACK_NAME).
	Stack string
	// Log receives the failures, at warn, at most once per LogEvery.
	Log *slog.Logger
	// LogEvery is how often, at most, a failure is logged; zero is DefaultLogEvery.
	LogEvery time.Duration
	// Now reads the clock for LogEvery, by its wall clock: Go's monotonic clock may
	// stand still while a Lambda instance is frozen, and would take a failure after a
	// long freeze for one within LogEvery, unlogged; nil is time.Now.
	Now func() time.Time
}

// Sender sends the events of invocations to one bus. It is safe for concurrent use.
type Sender struct {
	client  putter
	opts    Options
	retryer aws.Retryer // every call's (awsretry.AtOnce): one retry quota for all of them

	mu     sync.Mutex
	logged time.Time // when a failure was last logged
	unsaid int       // events failed since, not logged
}

// NewSender returns a Sender putting events on opts.Bus through client.
func NewSender(client putter, opts Options) *Sender {
	if opts.LogEvery <= 0 {
		opts.LogEvery = DefaultLogEvery
	}
	if opts.Now == nil {
		opts.Now = time.Now
	}
	return &Sender{client: client, opts: opts, retryer: awsretry.AtOnce()}
}

// Send puts events on the bus, MaxEntries to a call, MaxCalls calls at once, and returns
// when all have answered or Timeout has passed (or ctx's deadline less Margin), whichever
// is first; ctx canceled does not stop it (a caller that stopped waiting once its
// decision was made, such as a client of the middleware that hung up: the script
// reported the crossing to that decision alone, and its event would be lost). It counts
// the events not sent in inv, by reason, and logs them in one line, its totals by
// reason (at most once per LogEvery, saying how many failed since the last line; a Send
// that fails nothing says them too, once LogEvery has passed).
// Nothing it meets is an error to its caller: a decision never changes for its events.
func (s *Sender) Send(ctx context.Context, inv *telemetry.Invocation, events []Event) {
	if len(events) == 0 {
		return
	}
	end := time.Now().Add(s.opts.Timeout)
	bound := fmt.Sprintf("within %v", s.opts.Timeout) // what a timeout's line says cut it short
	if deadline, ok := ctx.Deadline(); ok && deadline.Add(-s.opts.Margin).Before(end) {
		end = deadline.Add(-s.opts.Margin)
		bound = fmt.Sprintf("by the invocation's deadline less %v", s.opts.Margin)
	}
	ctx, cancel := context.WithDeadline(context.WithoutCancel(ctx), end)
	defer cancel()
	calls := (len(events) + MaxEntries - 1) / MaxEntries
	results := make([][]failure, calls)
	var wg sync.WaitGroup
	slots := make(chan struct{}, MaxCalls)
	for i := range calls {
		batch := events[i*MaxEntries : min(len(events), (i+1)*MaxEntries)]
		slots <- struct{}{} // a running call ends by the deadline: so does this wait
		wg.Go(func() {
			defer func() { <-slots }()
			results[i] = s.put(ctx, batch, bound)
		})
	}
	wg.Wait()
	lost := slices.Concat(results...)
	for _, f := range lost {
		inv.ObserveEventsFailed(f.reason, f.n)
	}
	s.logFailures(ctx, lost, false)
}

// Flush logs at once, whatever LogEvery, the failures counted since the last line and
// not logged yet, if any, in a line with failed 0: what an instance that ends (at
// SIGTERM) would otherwise never say.
func (s *Sender) Flush(ctx context.Context) {
	s.logFailures(ctx, nil, true)
}

// failure is what one PutEvents call did not send: n events, for reason, with err.
type failure struct {
	n      int
	reason string
	err    error
}

// put sends events in one PutEvents call, and the entries EventBridge refused for a
// reason worth another try (retryableEntryErrors) again at once, retry.DefaultMaxAttempts
// calls in all, each retry a token of s's retry quota (none left: no retry), and returns what it did not send: the entries refused for good along
// the way, then what the last call left (as a timeout when ctx's deadline passed
// before it could be tried again); bound says what ctx's deadline is, for a timeout's
// error.
func (s *Sender) put(ctx context.Context, events []Event, bound string) []failure {
	entries := make([]types.PutEventsRequestEntry, len(events))
	for i, e := range events {
		if e.Detail.Stack == "" {
			e.Detail.Stack = s.opts.Stack
		}
		detail, err := json.Marshal(e.Detail)
		if err != nil { // a struct of strings, numbers and times: never
			return []failure{{n: len(events), reason: telemetry.EventsError, err: fmt.Errorf("event detail: %w", err)}}
		}
		entries[i] = types.PutEventsRequestEntry{
			EventBusName: aws.String(s.opts.Bus),
			Source:       aws.String(Source),
			DetailType:   aws.String(e.Type),
			Detail:       aws.String(string(detail)),
			Time:         aws.Time(e.Time),
		}
	}
	var lost []failure
	var refused error                           // why the entries left were refused by the last call, if they were
	release := func(error) error { return nil } // gives back the retry quota's token of a retry that put its entries
	for call := 1; ; call++ {
		if err := ctx.Err(); err != nil { // passed while the call waited for its turn (MaxCalls), or before a retry
			if refused != nil {
				err = fmt.Errorf("%w, before trying again what was %w", err, refused)
			}
			return append(lost, failure{n: len(entries), reason: telemetry.EventsTimeout, err: fmt.Errorf("not sent %s: %w", bound, err)})
		}
		out, err := s.client.PutEvents(ctx, &eventbridge.PutEventsInput{Entries: entries}, s.retryAtOnce)
		switch {
		case err != nil && ctx.Err() != nil:
			return append(lost, failure{n: len(entries), reason: telemetry.EventsTimeout, err: fmt.Errorf("not sent %s: %w", bound, err)})
		case err != nil:
			return append(lost, failure{n: len(entries), reason: telemetry.EventsError, err: err})
		case out.FailedEntryCount == 0:
			_ = release(nil)
			return lost
		}
		again, ok := refusedRetryable(entries, out)
		if ok && len(again) > 0 && call < retry.DefaultMaxAttempts {
			if take, err := s.retryer.GetRetryToken(ctx, rejection(out.Entries, retryable)); err == nil {
				release = take
			} else if ctx.Err() == nil { // the quota spent: the entries refused stay refused
				ok = false
			} // else the deadline passed: a timeout, as the next turn says
		}
		if !ok || len(again) == 0 || call == retry.DefaultMaxAttempts {
			return append(lost, failure{n: int(out.FailedEntryCount), reason: telemetry.EventsRejected, err: rejection(out.Entries, anyCode)})
		}
		if n := int(out.FailedEntryCount) - len(again); n > 0 {
			lost = append(lost, failure{n: n, reason: telemetry.EventsRejected, err: rejection(out.Entries, forGood)})
		}
		entries, refused = again, rejection(out.Entries, retryable)
	}
}

// retryableEntryErrors are the error codes of an entry that EventBridge may take when
// put again (its PutEventsResultEntry's retryable errors).
var retryableEntryErrors = []string{"ThrottlingException", "InternalFailure"}

// retryable reports whether an entry refused with code is worth another try (one of
// retryableEntryErrors); forGood, that it is not; anyCode takes every code.
func retryable(code string) bool { return slices.Contains(retryableEntryErrors, code) }

func forGood(code string) bool { return !retryable(code) }

func anyCode(string) bool { return true }

// refusedRetryable returns the entries out refused for a reason worth another try
// (retryableEntryErrors); false when out's entries do not answer entries one for one,
// or its refused entries are not out.FailedEntryCount.
func refusedRetryable(entries []types.PutEventsRequestEntry, out *eventbridge.PutEventsOutput) ([]types.PutEventsRequestEntry, bool) {
	if len(out.Entries) != len(entries) {
		return nil, false
	}
	var again []types.PutEventsRequestEntry
	refused := 0
	for i, r := range out.Entries {
		if r.ErrorCode != nil {
			refused++
			if retryable(*r.ErrorCode) {
				again = append(again, entries[i])
			}
		}
	}
	return again, refused == int(out.FailedEntryCount)
}

// retryAtOnce makes a PutEvents call that failed for a reason worth another try (a
// throttle, a 5xx, a connection reset) try again at once, retry.DefaultMaxAttempts
// attempts in all, within the retry quota of s's calls together (awsretry.AtOnce): a
// throttled bus gets at most the quota's retries of an instance, not two more calls for
// each of its own.
func (s *Sender) retryAtOnce(o *eventbridge.Options) { o.Retryer = s.retryer }

// rejection describes the first entry EventBridge refused with a code that which takes
// (anyCode, retryable or forGood).
func rejection(entries []types.PutEventsResultEntry, which func(code string) bool) error {
	for _, e := range entries {
		if e.ErrorCode != nil && which(*e.ErrorCode) {
			return fmt.Errorf("refused: %s: %s", aws.ToString(e.ErrorCode), aws.ToString(e.ErrorMessage))
		}
	}
	return errors.New("refused, no entry saying why")
}

// Message and attributes of the line a Send's failures log.
const (
	MsgFailed          = "events not sent"
	AttrBus            = "bus"
	AttrFailed         = "failed"
	AttrFailedByReason = "failedByReason"
	AttrUnlogged       = "failedUnlogged"
)

// logFailures logs what one Send did not send (lost, from its calls) in one line at
// warn: the events failed in all and by reason, the reasons (comma-separated) and the
// first error of each; unless a line was logged less than LogEvery ago, in which case
// it only counts them for the next line. A Send that lost nothing logs the failures
// counted so, if any, once LogEvery has passed (at once with atOnce): a line with failed 0.
func (s *Sender) logFailures(ctx context.Context, lost []failure, atOnce bool) {
	failed, byReason, firstErr := 0, map[string]int{}, map[string]error{}
	for _, f := range lost {
		failed += f.n
		byReason[f.reason] += f.n
		if firstErr[f.reason] == nil {
			firstErr[f.reason] = f.err
		}
	}
	s.mu.Lock()
	if failed == 0 && s.unsaid == 0 {
		s.mu.Unlock()
		return
	}
	now := s.opts.Now().Round(0) // the wall clock (see Options.Now)
	if !atOnce && !s.logged.IsZero() && now.Sub(s.logged) < s.opts.LogEvery && now.Sub(s.logged) >= 0 {
		s.unsaid += failed
		s.mu.Unlock()
		return
	}
	unsaid := s.unsaid
	s.logged, s.unsaid = now, 0
	s.mu.Unlock()
	reasons := slices.Sorted(maps.Keys(byReason))
	counts := make([]slog.Attr, len(reasons))
	errs := make([]string, len(reasons))
	for i, r := range reasons {
		counts[i] = slog.Int(r, byReason[r])
		errs[i] = firstErr[r].Error()
		if len(reasons) > 1 {
			errs[i] = r + ": " + errs[i]
		}
	}
	s.opts.Log.LogAttrs(ctx, slog.LevelWarn, MsgFailed, slog.String(AttrBus, s.opts.Bus),
		slog.String(telemetry.AttrReason, strings.Join(reasons, ",")), slog.Int(AttrFailed, failed),
		slog.Attr{Key: AttrFailedByReason, Value: slog.GroupValue(counts...)}, slog.Int(AttrUnlogged, unsaid),
		slog.String(telemetry.AttrError, strings.Join(errs, "; ")))
}
