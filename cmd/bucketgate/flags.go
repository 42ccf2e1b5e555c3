package main

import (
	"errors"
	"flag"
	"fmt"
	"math"
	"slices"
	"strconv"
	"strings"
	"time"
	"unicode"

	"github.com/bucketgate/bucketgate"
	"github.com/bucketgate/bucketgate/internal/config"
	"github.com/bucketgate/bucketgate/internal/madekey"
	"github.com/bucketgate/bucketgate/internal/registry"
)

// ruleList is a repeatable -rule flag: NAME:CAPACITY:RATE (a bucket, RATE in tokens per
// second or N/PERIOD), NAME:LIMIT:PERIOD[@DAY] (a quota: PERIOD day, week or month, a
// month from DAY) or NAME:N:concurrent (a concurrency rule of N in flight).
type ruleList []bucketgate.Rule

func (l *ruleList) String() string { return fmt.Sprint(*l) }

func (l *ruleList) repeatable() {}

// ruleForms is how a -rule flag is written, for an error.
const ruleForms = "want NAME:CAPACITY:RATE (a bucket), NAME:LIMIT:PERIOD[@DAY] (a quota) or NAME:N:concurrent (a concurrency rule), such as burst:100:50, daily:1000:1000/day, monthly:100000:month@15 or streams:5:concurrent"

// ruleFlagForms are the forms of a --rule of an item's own, for the flag's usage.
const ruleFlagForms = "NAME:CAPACITY:RATE, NAME:LIMIT:PERIOD[@DAY] or NAME:N:concurrent"

// concurrent is the third part of a -rule flag of a concurrency rule.
const concurrent = "concurrent"

// Set parses one rule, its numbers read and the rule checked as the configuration
// document reads and checks its rules; a name given before is refused.
func (l *ruleList) Set(v string) error {
	parts := strings.Split(v, ":")
	if len(parts) != 3 {
		return fmt.Errorf("%q: %s", v, ruleForms)
	}
	if what := keyShown(parts[0]); what != "" { // it would rest in Redis and the metrics
		return fmt.Errorf("rule name: %s: name the rule otherwise", what)
	}
	n, err := config.ParseCount(parts[1]) // numbers as the document writes them
	period, day, anchored := strings.Cut(parts[2], "@")
	_, quota := bucketgate.ParsePeriod(period)
	var spec config.RuleSpec
	switch {
	case parts[2] == concurrent:
		if err != nil {
			return fmt.Errorf("%q: concurrency %w", v, err)
		}
		spec = config.RuleSpec{Name: parts[0], Concurrency: (*config.Count)(&n)}
	case quota || anchored:
		if err != nil {
			return fmt.Errorf("%q: limit %w", v, err)
		}
		spec = config.RuleSpec{Name: parts[0], Limit: (*config.Count)(&n), Period: period}
		if anchored {
			a, err := config.ParseCount(day)
			if err != nil {
				return fmt.Errorf("%q: anchor %q: want a day of the month from 1 to %d", v, day, bucketgate.MaxAnchor)
			}
			spec.Anchor = (*config.Count)(&a)
		}
	case err != nil:
		return fmt.Errorf("%q: capacity %w", v, err)
	default:
		spec = config.RuleSpec{Name: parts[0], Capacity: config.Count(n)}
		if n, per, ok := strings.Cut(parts[2], "/"); ok {
			spec.Per = per
			if spec.Refill, err = config.ParseNumber(n); err != nil {
				return fmt.Errorf("%q: refill %q: want a number of tokens", v, n)
			}
			if config.RoundsToZero(n, spec.Refill) {
				return fmt.Errorf("%q: refill %q: too close to 0, which it would round to", v, n)
			}
		} else if rate, err := config.ParseNumber(parts[2]); err == nil && config.RoundsToZero(parts[2], rate) {
			return fmt.Errorf("%q: rate %q: too close to 0, which it would round to", v, parts[2])
		} else if err != nil || rate == 0 {
			return fmt.Errorf("%q: rate %q: want tokens per second > 0, N/PERIOD, or day, week or month for a quota", v, parts[2])
		} else {
			spec.RefillPerSecond = &rate
		}
	}
	r, err := spec.Rule()
	if err != nil {
		return fmt.Errorf("%q: %w", v, err)
	}
	if slices.ContainsFunc(*l, func(x bucketgate.Rule) bool { return x.Name == r.Name }) { // not the last silently: override would keep it
		return fmt.Errorf("%q: name %q given twice: give each rule once", v, r.Name)
	}
	*l = append(*l, r)
	return nil
}

// count is a flag of a whole number (--cost, --version), read as the configuration
// document and --rule read theirs (config.ParseCount): decimal, so that 010 is refused,
// not read as 8 (octal), nor 0x10 as 16, as the flag package's Int64 read them.
type count int64

func (c *count) String() string { return strconv.FormatInt(int64(*c), 10) }

// Set takes v, a whole decimal number (config.ParseCount).
func (c *count) Set(v string) error {
	n, err := config.ParseCount(v)
	if err != nil {
		return err
	}
	*c = count(n)
	return nil
}

// countFlag defines a count flag of fs called name, 0 by default.
func countFlag(fs *flag.FlagSet, name, usage string) *int64 {
	n := new(int64)
	fs.Var((*count)(n), name, usage)
	return n
}

// text is a flag of free text (--owner, --note, a tenant's --tenant): on one line,
// without a control character, which would break the lines of keys list and the other
// tables.
type text string

func (t *text) String() string { return string(*t) }

// Set takes v unless it holds a control character (a line break, a tab, an escape).
func (t *text) Set(v string) error {
	if i := strings.IndexFunc(v, unicode.IsControl); i >= 0 {
		return fmt.Errorf("control character %U at byte %d: want text on one line", []rune(v[i:])[0], i)
	}
	*t = text(v)
	return nil
}

// textFlag defines a text flag of fs called name, empty by default.
func textFlag(fs *flag.FlagSet, name, usage string) *text {
	t := new(text)
	fs.Var(t, name, usage)
	return t
}

// prose is a text flag for people (--owner, --note): text that holds no API key
// bucketgate made, which the table would hold as it is (an owner goes in the crossing
// events too).
type prose struct{ text }

// Set takes v as text does, unless it holds an API key bucketgate made, or what may be
// one or part of one, which the CLI would print masked (keyShown); the error never
// quotes it.
func (p *prose) Set(v string) error {
	if what := keyShown(v); what != "" {
		return fmt.Errorf("holds %s, which the table would hold as it is: give no key (its digest names it: printf %%s \"$KEY\" | sha256sum | cut -c1-%d)", what, bucketgate.DigestLen)
	}
	return p.text.Set(v)
}

// keyShown says what s shows of an API key bucketgate made, for an error that never
// quotes it: a key (madekey.Holds), or what may be one or part of one, which the CLI
// prints masked (madekey.Shows: a key glued to other characters, or cut short); "" for
// neither.
func keyShown(s string) string {
	switch {
	case madekey.Holds(s):
		return "an API key bucketgate made (" + madekey.Prefix + "...)"
	case madekey.Shows(s):
		return fmt.Sprintf("what may be an API key bucketgate made, or part of one (%s and %d or more base64url characters: %s...)", madekey.Prefix, madekey.MinShown, madekey.Prefix)
	}
	return ""
}

// proseFlag defines a prose flag of fs called name, empty by default, and returns its text.
func proseFlag(fs *flag.FlagSet, name, usage string) *text {
	p := new(prose)
	fs.Var(p, name, usage)
	return &p.text
}

// nameValue is the value of a flag that names what a variable, the stack or the item
// names when the flag is not given (--table, --function, --stack, buckets' --plan):
// given, it names something. Empty or
// blank (a script's unset variable: --function "$FN") it is refused, where taken as not
// given it named the variable's table or function, or the default, perhaps another
// deployment's. One holding an API key bucketgate made (a key pasted in the wrong
// place) is refused too: the name would leave the terminal in a request.
type nameValue string

func (n *nameValue) String() string { return string(*n) }

// Set takes v unless it is empty or blank, or holds an API key bucketgate made
// (madekey.Holds).
func (n *nameValue) Set(v string) error {
	if strings.TrimSpace(v) == "" {
		return errors.New("empty: name one, or leave the flag out for the default")
	}
	if madekey.Holds(v) {
		return errKeyForName
	}
	*n = nameValue(v)
	return nil
}

// errKeyForName refuses a name (a flag's, or REGISTRY_TABLE's, CHECK_FUNCTION's or
// BUCKETGATE_STACK's: namedByEnv) that holds an API key bucketgate made.
var errKeyForName = errors.New("an API key bucketgate made (" + madekey.Prefix + "...), which no table, function, stack or plan is named by: name one")

// nameFlag defines a nameValue flag of fs called name, not given by default.
func nameFlag(fs *flag.FlagSet, name, usage string) *nameValue {
	n := new(nameValue)
	fs.Var(n, name, usage)
	return n
}

// never is the WHEN of no expiry: keys expire's and accounts expire's, --expires's (its
// default), and what keys show and keys list print for it.
const never = "never"

// maxDays is the most days from now that parseWhen takes: the longest Duration, in
// whole days (n days past it would wrap around to an earlier time).
const maxDays = int(math.MaxInt64 / int64(24*time.Hour))

// parseWhen reads a time: RFC 3339, a date (midnight UTC), both from 1970-01-01T00:00:01Z
// to registry.MaxExpiresAt, or a duration from now (Go's, or whole days as 30d). Empty is
// none of them, not never: a script's unset variable.
func parseWhen(v string, now time.Time) (time.Time, error) {
	t, err := time.Parse(time.RFC3339, v)
	if err != nil {
		t, err = time.Parse(time.DateOnly, v)
	}
	if err == nil {
		// The zero Time is never, and 1970-01-01T00:00:00Z an expiresAt of 0, which
		// the table leaves out: never too. An earlier or later time is no item's.
		if t.Unix() < 1 || t.Unix() > registry.MaxExpiresAt {
			return time.Time{}, fmt.Errorf("%q: want a time from %s to %s", v,
				time.Unix(1, 0).UTC().Format(time.RFC3339), time.Unix(registry.MaxExpiresAt, 0).UTC().Format(time.RFC3339))
		}
		return t, nil
	}
	d, err := time.ParseDuration(v)
	if days, ok := strings.CutSuffix(v, "d"); ok {
		var n int
		if n, err = strconv.Atoi(days); err == nil && n > maxDays {
			return time.Time{}, fmt.Errorf("%q: want at most %d days from now", v, maxDays)
		}
		d = time.Duration(n) * 24 * time.Hour
	}
	if err != nil || d <= 0 {
		return time.Time{}, fmt.Errorf("%q: want an RFC 3339 time (2027-01-31T00:00:00Z), a date (2027-01-31) or a time from now (720h, 30d)", v)
	}
	return now.Add(d).Truncate(time.Second), nil
}
