package authorizer

import (
	"math"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/bucketgate/bucketgate"
	"github.com/bucketgate/bucketgate/internal/guard"
)

// The RateLimit and RateLimit-Policy header values follow
// draft-ietf-httpapi-ratelimit-headers-11 (May 2026), sections 3 and 4: each field is a
// Structured Fields List (RFC 9651) of Items whose value is a String naming the policy,
// with Integer parameters.
//
//	RateLimit-Policy: "burst";q=10;w=10, "daily";q=1000;w=86400
//	RateLimit: "burst";r=0;t=1
//
// RateLimit-Policy has one item per enforced rule of the request (plan and route; a
// shadow rule limits nothing, so it is not a policy): q is the rule's capacity, w its
// fill time (capacity / refill per second) in seconds, rounded up; for a quota, q is its
// limit and w the length of its window that holds the decision, in seconds (a month's
// is 28 to 31 days): "monthly";q=100000;w=2592000; for a concurrency rule, q is its most
// in flight, its quota unit qu "concurrency" (the draft's unit of concurrent requests) and
// no w, since it limits requests at once, not over a window: "streams";q=5;qu="concurrency".
// RateLimit has one item, the binding rule: r is the whole tokens remaining and t
// the effective window in seconds, rounded up: the retry-after when denied (so that
// Retry-After never points before the end of the window, section 6), and the time until
// the binding rule is full again when allowed (see resetAfter: a quota's window's end,
// with a concurrency rule binding, when the admission's lease expires).
const (
	sfListSep  = ", "
	paramQuota = ";q="
	paramWin   = ";w="
	unitConc   = `;qu="concurrency"`
	paramLeft  = ";r="
	paramTime  = ";t="
)

// rateLimitPolicy returns the RateLimit-Policy value of rules, their enforced ones, for
// a decision at at.
func rateLimitPolicy(rules []bucketgate.Rule, at time.Time) string {
	var b strings.Builder
	for _, r := range rules {
		if r.Shadow {
			continue
		}
		if b.Len() > 0 {
			b.WriteString(sfListSep)
		}
		writeSFString(&b, r.Name)
		b.WriteString(paramQuota)
		b.WriteString(strconv.FormatInt(r.Max(), 10))
		if r.IsConcurrency() {
			b.WriteString(unitConc)
			continue
		}
		b.WriteString(paramWin)
		window := r.FillTime()
		if r.IsQuota() {
			start, end := r.Window(at)
			window = end.Sub(start)
		}
		b.WriteString(strconv.FormatInt(max(1, ceilSeconds(window)), 10))
	}
	return b.String()
}

// resetAfter returns how long after o's decision its binding rule is full again, as the
// headers tell it: the reset that goes with the Remaining they show, not the
// decision's ResetAfter (every rule full, a month away beside a monthly quota that
// counted something). A quota's is its window's end: a denying quota's wait, an
// admitting one's window that holds the decision (at most the decision's ResetAfter: a
// window stored under another anchor ends there). A bucket's is when it is full again:
// the decision tells its whole tokens alone, so it is the time to refill them to its
// capacity from its wait when it lacks the cost (its tokens to within a millisecond),
// else from the whole tokens shown: never earlier than the bucket is full, later by
// less than one token's refill, and at most the decision's ResetAfter. A concurrency
// rule's is, admitting, when the admission's lease expires (a slot frees by then at the
// latest: sooner when a lease is released or an earlier one expires, which the
// admission does not know), denying, the decision's ResetAfter, its latest lease's
// expiry. Without a binding rule, or a decision of Redis's, it is the decision's
// ResetAfter.
func resetAfter(o Outcome) time.Duration {
	d := o.Result.Decision
	i := slices.IndexFunc(o.Limits.Rules, func(r bucketgate.Rule) bool { return r.Name == d.Rule })
	if i < 0 || d.At.IsZero() {
		return d.ResetAfter
	}
	r := o.Limits.Rules[i]
	switch {
	case r.IsConcurrency() && d.Allowed && d.Lease != "" && !d.Expires.IsZero():
		return d.Expires.Sub(d.At)
	case r.IsConcurrency():
		return d.ResetAfter
	case r.IsQuota() && !d.Allowed:
		return d.RetryAfter
	case r.IsQuota():
		_, end := r.Window(d.At)
		return min(d.ResetAfter, (end.Sub(d.At) + time.Millisecond - 1).Truncate(time.Millisecond))
	}
	full := fillTime(r, r.Capacity-d.Remaining)
	cost := o.Limits.Request("").Cost
	switch {
	case !d.Allowed:
		full = d.RetryAfter + fillTime(r, r.Capacity-cost)
	case d.Shortfall.Rule == r.Name:
		full = min(full, d.Shortfall.Wait+fillTime(r, r.Capacity-cost))
	}
	return min(d.ResetAfter, full)
}

// fillTime returns how long bucket r takes to refill tokens, rounded up to whole
// milliseconds as bucket.lua rounds a bucket's time until full.
func fillTime(r bucketgate.Rule, tokens int64) time.Duration {
	return time.Duration(math.Ceil(float64(tokens)*1000/r.RefillPerSecond)) * time.Millisecond
}

// rateLimit returns the RateLimit value of r, or "" when Redis did not decide or no
// rule is enforced.
func rateLimit(r guard.Result) string {
	if r.Failure != guard.FailureNone || r.Reason == bucketgate.ReasonDegraded || r.Rule == "" {
		return ""
	}
	window := r.ResetAfter
	if !r.Allowed {
		window = r.RetryAfter
	}
	var b strings.Builder
	writeSFString(&b, r.Rule)
	b.WriteString(paramLeft)
	b.WriteString(strconv.FormatInt(r.Remaining, 10))
	b.WriteString(paramTime)
	b.WriteString(strconv.FormatInt(ceilSeconds(window), 10))
	return b.String()
}

// writeSFString writes s as a Structured Fields String: quoted, with '"' and '\'
// escaped. Rule names are letters, digits, '_', '-' and '.', all allowed as they are.
func writeSFString(b *strings.Builder, s string) {
	b.WriteByte('"')
	for i := 0; i < len(s); i++ {
		if c := s[i]; c == '"' || c == '\\' {
			b.WriteByte('\\')
		}
		b.WriteByte(s[i])
	}
	b.WriteByte('"')
}
