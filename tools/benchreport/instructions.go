package benchreport

import (
	"bufio"
	"fmt"
	"io"
	"strconv"
	"strings"
)

// Instructions are make bench-instructions' figures (instructions/instructions.sh):
// Redis-side machine instructions per script call, counted by callgrind inside EVALSHA,
// a figure that a busy machine does not move.
type Instructions struct {
	// OneRule, TwoRules and RedisRate are per decision, over the same mix of allowed
	// and denied requests.
	OneRule, TwoRules, RedisRate int64
	// Admitted, Refund and Reset are per operation on one rule: a check that is always
	// admitted (so always writes), a refund, a reset.
	Admitted, Refund, Reset int64
	// Round3 is the round-3 line as instructions.sh prints it (a check without usage,
	// with usage, a bucket and a monthly quota, and the lease operations, "-" for a
	// figure not built), Check, Usage and Quota its first three figures, Reserve, Settle
	// and Acquire three more; empty and zeros from an output without it (a "-" is a
	// zero).
	Round3                                        string
	Check, Usage, Quota, Reserve, Settle, Acquire int64
	// SettlesUsage is the line of settles with usage kept 35 days as instructions.sh
	// prints it, SettleBelow and SettleAbove its figures: a settle below its estimate
	// (a refund) and above it (a debit), each correcting the day's cost; empty and zeros
	// from an output without it.
	SettlesUsage             string
	SettleBelow, SettleAbove int64
}

// instructionsPrefixes start instructions.sh's two lines of figures.
const (
	instructionsDecisionPrefix  = "redis-side instructions/decision:"
	instructionsOperationPrefix = "redis-side instructions/operation, 1 rule:"
	instructionsRound3Prefix    = "round-3 instructions/decision:"
	instructionsSettlesPrefix   = "round-3 settles with usage kept:"
)

// parseInstructions reads instructions.sh's output: both of its lines must be there.
func parseInstructions(r io.Reader) (Instructions, error) {
	var in Instructions
	var decision, operation bool
	sc := bufio.NewScanner(r)
	for sc.Scan() {
		line := sc.Text()
		var check int64
		var ratio1, ratio2 float64
		switch {
		case strings.HasPrefix(line, instructionsDecisionPrefix):
			if _, err := fmt.Sscanf(strings.TrimPrefix(line, instructionsDecisionPrefix), " bucketgate 1 rule %d, 2 rules %d, redis_rate %d, ratio X/Z %f, Y/X %f",
				&in.OneRule, &in.TwoRules, &in.RedisRate, &ratio1, &ratio2); err != nil {
				return Instructions{}, fmt.Errorf("instructions: %q: %w", line, err)
			}
			decision = true
		case strings.HasPrefix(line, instructionsOperationPrefix):
			if _, err := fmt.Sscanf(strings.TrimPrefix(line, instructionsOperationPrefix), " check %d (every one admitted: %d), refund %d (%fx an admitted check), reset %d (%fx a check)",
				&check, &in.Admitted, &in.Refund, &ratio1, &in.Reset, &ratio2); err != nil {
				return Instructions{}, fmt.Errorf("instructions: %q: %w", line, err)
			}
			operation = true
		case strings.HasPrefix(line, instructionsRound3Prefix):
			if _, err := fmt.Sscanf(strings.TrimPrefix(line, instructionsRound3Prefix), " check %d, check+usage %d, bucket+quota %d,",
				&in.Check, &in.Usage, &in.Quota); err != nil {
				return Instructions{}, fmt.Errorf("instructions: %q: %w", line, err)
			}
			for _, f := range strings.Split(line, ", ") {
				name, figure, _ := strings.Cut(f, " ")
				var into *int64
				switch name {
				case "reserve":
					into = &in.Reserve
				case "settle":
					into = &in.Settle
				case "acquire":
					into = &in.Acquire
				}
				if into == nil || figure == "-" {
					continue
				}
				n, err := strconv.ParseInt(figure, 10, 64)
				if err != nil {
					return Instructions{}, fmt.Errorf("instructions: %q: %s: %w", line, name, err)
				}
				*into = n
			}
			in.Round3 = line
		case strings.HasPrefix(line, instructionsSettlesPrefix):
			if _, err := fmt.Sscanf(strings.TrimPrefix(line, instructionsSettlesPrefix), " below the estimate %d (%fx the check), above it %d (%fx)",
				&in.SettleBelow, &ratio1, &in.SettleAbove, &ratio2); err != nil {
				return Instructions{}, fmt.Errorf("instructions: %q: %w", line, err)
			}
			in.SettlesUsage = line
		}
	}
	if err := sc.Err(); err != nil {
		return Instructions{}, fmt.Errorf("instructions: %w", err)
	}
	if !decision || !operation {
		return Instructions{}, fmt.Errorf("instructions: want the lines starting %q and %q (make bench-instructions' output)", instructionsDecisionPrefix, instructionsOperationPrefix)
	}
	if in.OneRule <= 0 || in.TwoRules <= 0 || in.RedisRate <= 0 {
		return Instructions{}, fmt.Errorf("instructions: a count is not positive: %+v", in)
	}
	return in, nil
}

// Round3Line is the round-3 line with its ratios to the check and their goals (issue
// 29); empty without the line.
func (in Instructions) Round3Line() string {
	if in.Round3 == "" {
		return ""
	}
	line := fmt.Sprintf("%s; check+usage / check %.2f (goal <= %.2f), bucket+quota / check %.2f (goal <= %.2f)",
		in.Round3, float64(in.Usage)/float64(in.Check), goalUsageOverCheck, float64(in.Quota)/float64(in.Check), goalQuotaOverCheck)
	if in.Reserve > 0 && in.Settle > 0 {
		line += fmt.Sprintf(", reserve / check %.2f (goal <= %.2f), settle / check %.2f (goal <= %.2f)",
			float64(in.Reserve)/float64(in.Check), goalLeaseOverCheck, float64(in.Settle)/float64(in.Check), goalLeaseOverCheck)
	}
	if in.Acquire > 0 {
		line += fmt.Sprintf(", acquire / check %.2f (goal <= %.2f)", float64(in.Acquire)/float64(in.Check), goalAcquireOverCheck)
	}
	return line
}

// Goals of issue 29 for the round-3 figures, over a check without usage.
const (
	goalUsageOverCheck = 1.12
	goalQuotaOverCheck = 1.45
	// round2Check is round 2's check of one rule (BENCHMARKS.md of 2026-11-22), which a
	// check without usage may exceed by goalCheckOverRound2 at most (issue 29).
	round2Check         = 53699
	goalCheckOverRound2 = 1.02
	// goalLeaseOverCheck bounds a reserve and a settle over a check (issue 31).
	goalLeaseOverCheck = 1.15
	// goalAcquireOverCheck bounds a check with a concurrency rule that acquires a lease
	// over a check (issue 31).
	goalAcquireOverCheck = 1.4
)

// Ratio is bucketgate's 1 rule over redis_rate.
func (in Instructions) Ratio() float64 { return float64(in.OneRule) / float64(in.RedisRate) }

// ChainedOverOne is 2 chained rules over 1 rule.
func (in Instructions) ChainedOverOne() float64 { return float64(in.TwoRules) / float64(in.OneRule) }
