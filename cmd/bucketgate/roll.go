package main

import (
	"cmp"
	"errors"
	"flag"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/bucketgate/bucketgate"
	"github.com/bucketgate/bucketgate/internal/registry"
)

// Bounds of keys roll --overlap: how long the old key keeps working beside the new one.
const (
	defaultOverlap = 24 * time.Hour
	maxOverlap     = 30 * 24 * time.Hour
)

// madeAccountPrefix starts the name of the account that keys roll makes a lone key into,
// unless --account names it: "key-<the key's digest>", unique as the key is.
const madeAccountPrefix = "key-"

func rollFlags(fs *flag.FlagSet) func(env, *keyTable, []string) error {
	overlap := fs.String("overlap", "24h", "how long the old key keeps working beside the new one: 0 to 720h (30 days), such as 90m, 24h or 7d")
	account := fs.String("account", "", "the name of the account a lone key becomes (default: key-<its digest>)")
	return func(e env, t *keyTable, args []string) error {
		d, err := parseOverlap(*overlap)
		if err != nil {
			return err
		}
		id := args[0]
		if !strings.HasPrefix(id, bucketgate.KeyPrefix) {
			return fmt.Errorf("%w: keys roll: %s is a check function tenant: only an API key rolls", errUsage, id)
		}
		if isSet(fs, "account") { // given empty too (an unset variable), not taken for key-<digest>
			if *account, err = parseAccountName("--account", *account); err != nil {
				return err
			}
			if err := checkNewAccountName("--account", *account); err != nil {
				return err
			}
		}
		item, err := t.read(e.ctx, id)
		if err != nil {
			return err
		}
		old, err := registry.DecodeItem(item)
		if err != nil {
			return err
		}
		now := time.Now()
		if !old.Active(now) {
			return fmt.Errorf("%s is %s: a roll replaces a working key; bucketgate keys create makes a new one", id, status(old))
		}
		name := old.Account
		switch {
		case name != "" && *account != "":
			return fmt.Errorf("%w: keys roll: %s is a key of account %s already: --account names the account a lone key becomes", errUsage, id, name)
		case name != "":
			if err := t.activeAccount(e.ctx, name); err != nil {
				return err
			}
		default:
			name = cmp.Or(*account, madeAccountPrefix+strings.TrimPrefix(id, bucketgate.KeyPrefix))
			if err := t.makeAccount(e, old, name); err != nil {
				return err
			}
		}
		// The new key, in the account, with the old one's own rules, owner, note and
		// expiry, written before the old key changes: a roll stopped before it leaves the
		// old key as it was, so that running it again reads the old key's own expiry, not
		// the overlap's end.
		next := registry.Record{Account: name, Owner: old.Owner, Note: old.Note, ExpiresAt: old.ExpiresAt}
		if old.Account != "" {
			next.Rules = old.Rules
		}
		if old.Account != "" && len(old.Rules) > 0 { // on their buckets: the first key's of the line
			next.Buckets = cmp.Or(old.Buckets, old.ID)
		}
		key, err := newKey()
		if err == nil {
			next.ID = keyID(key)
			err = t.putMade(e.ctx, next)
		}
		if err != nil {
			return fmt.Errorf("the new key was not written, and %s is unchanged (run keys roll %s again): %w", id, id, err)
		}
		if err := showKey(e, t, next.ID, key); err != nil {
			return fmt.Errorf("%w, and %s is unchanged (run keys roll %s again)", err, id, id)
		}
		fmt.Fprintf(e.stderr, "created %s in account %s: the key above is shown this once, store it now\n", next.ID, name)
		// The old key's end, the overlap's or sooner, as it was.
		until := now.Add(d).Truncate(time.Second)
		if !old.ExpiresAt.IsZero() && old.ExpiresAt.Before(until) {
			until = old.ExpiresAt
		}
		sayExpiry(e, next, id, until)
		if err := t.confirm(e.ctx, next); err != nil { // the old key stays as it was: the only one working
			if errors.Is(err, errKeysUnknown) { // its account's end stops the old key too
				return fmt.Errorf("%w; %s is unchanged", err, id)
			}
			return fmt.Errorf("%w; %s is unchanged, and works as it did", err, id)
		}
		// The old key, in the account, expiring at until.
		err = t.changeItem(e.ctx, id, item, func(r *registry.Record) error {
			if r.Account == "" { // its plan and rules are the account's now
				r.Account, r.Plan, r.Rules = name, "", nil
			}
			r.ExpiresAt = until
			return nil
		})
		switch {
		case errors.Is(err, errChanged): // not to be run again: that would issue another key
			err = fmt.Errorf("%w (in table %s)%s", errChanged, t.name, t.stale(e, old, name, next.ID))
		case errors.Is(err, errWritten):
			return fmt.Errorf("%s expires %s: %w", id, until.UTC().Format(time.RFC3339), err)
		}
		if err != nil { // the new key works, and is shown: only the old key's expiry is missing
			return fmt.Errorf("%s was not set to expire (bucketgate keys expire %s %s sets it): %w", id, id, until.UTC().Format(time.RFC3339), err)
		}
		fmt.Fprintf(e.stderr, "%s expires %s: until then both keys work, on the same buckets\n", id, until.UTC().Format(time.RFC3339))
		return nil
	}
}

// sayExpiry says on e's stderr when next, the new key of the roll of the key oldID, expires:
// it keeps the old key's expiry, which an earlier roll's overlap may have set, and a
// warning when that is no later than until, the old key's end: after it neither key works.
func sayExpiry(e env, next registry.Record, oldID string, until time.Time) {
	if next.ExpiresAt.IsZero() {
		return
	}
	at := next.ExpiresAt.UTC().Format(time.RFC3339)
	if next.ExpiresAt.After(until) {
		fmt.Fprintf(e.stderr, "%s expires %s, as %s did when read: a roll keeps its expiry\n", next.ID, at, oldID)
		return
	}
	fmt.Fprintf(e.stderr, "warning: %s expires %s, as %s did when read (an earlier roll's overlap, or its own expiry): a roll keeps it, and after it neither key works; bucketgate keys expire %s never (or WHEN) lifts it\n",
		next.ID, at, oldID, next.ID)
}

// stale returns what a write of the key old.ID since keys roll read it as old (keys
// set-plan, override, clear-overrides) left out of what the roll wrote before: the account
// called name, made out of a lone key, has the plan and rules old had, and the new key
// next, of an account, old's own rules. It is a sentence naming the commands that give
// them what the key has now; "" when the key's plan and rules are as read, or it cannot
// be read again.
func (t *keyTable) stale(e env, old registry.Record, name, next string) string {
	now, err := t.get(e.ctx, old.ID)
	if err != nil || now.Account != old.Account {
		return ""
	}
	what, group, target := "account "+name+", made as "+old.ID+" was when read (plan "+old.Plan+", own rules "+rulesText(old.Rules)+"),", "accounts", name
	if old.Account != "" {
		what, group, target = "the new key "+next+", with the own rules "+old.ID+" had when read ("+rulesText(old.Rules)+"),", "keys", next
	}
	var fix []string
	if old.Account == "" && now.Plan != old.Plan {
		fix = append(fix, fmt.Sprintf("bucketgate %s set-plan %s %s", group, target, now.Plan))
	}
	if !slices.Equal(now.Rules, old.Rules) {
		dropped := slices.ContainsFunc(old.Rules, func(r bucketgate.Rule) bool {
			return !slices.ContainsFunc(now.Rules, func(n bucketgate.Rule) bool { return n.Name == r.Name })
		})
		if dropped { // override replaces or adds, never drops
			fix = append(fix, fmt.Sprintf("bucketgate %s clear-overrides %s", group, target))
		}
		if len(now.Rules) > 0 {
			fix = append(fix, fmt.Sprintf("bucketgate %s override %s --rule %s", group, target, strings.ReplaceAll(rulesText(now.Rules), " ", " --rule ")))
		}
	}
	if len(fix) == 0 {
		return ""
	}
	return fmt.Sprintf("; %s is on plan %s with own rules %s now, changed meanwhile, and %s is not: %s gives it the same",
		old.ID, cmp.Or(now.Plan, "-"), rulesText(now.Rules), what, strings.Join(fix, ", then "))
}

// makeAccount makes the account called name out of old, a lone key's record: its plan,
// its rules, its owner and note, spending the key's buckets (Record.Buckets), so that the
// rotation gives no token back. An account of that name already made from this key (a
// roll that stopped before its end) is taken as it is, unless it is revoked or expired.
// It notes the account as active (keyTable.active).
func (t *keyTable) makeAccount(e env, old registry.Record, name string) error {
	acct := registry.Record{ID: registry.AccountItemPrefix + name, Plan: old.Plan, Rules: old.Rules, Owner: old.Owner, Note: old.Note, Buckets: old.ID}
	err := t.put(e.ctx, acct)
	if errors.Is(err, errExists) {
		there, rerr := t.get(e.ctx, acct.ID)
		if rerr != nil || there.Buckets != old.ID {
			return fmt.Errorf("%w: name another with --account", err)
		}
		if !there.Active(time.Now()) { // its keys, the old one moved in too, would be unknown
			return fmt.Errorf("account %s, made from %s by an earlier roll, is %s: its keys are unknown to the functions; name another with --account; nothing written",
				name, old.ID, status(there))
		}
		acct, err = there, nil
	}
	if err != nil {
		return err
	}
	t.active = name
	fmt.Fprintf(e.stderr, "%s is a key of account %s now, on plan %s, which spends its buckets (%s): no token is given back\n",
		old.ID, name, acct.Plan, old.ID)
	return nil
}

// parseOverlap reads --overlap: a duration from 0 to maxOverlap, Go's (90m, 24h) or in
// whole days (7d).
func parseOverlap(v string) (time.Duration, error) {
	d, err := time.ParseDuration(v)
	if days, ok := strings.CutSuffix(v, "d"); ok && err != nil {
		// Bounded before it is multiplied: 2^48 days and one would wrap around to a day.
		n, nerr := strconv.ParseUint(days, 10, 64)
		if err = nerr; err == nil && n > uint64(maxOverlap/(24*time.Hour)) {
			err = errors.New("too many days")
		}
		d = time.Duration(n) * 24 * time.Hour
	}
	if err != nil || d < 0 || d > maxOverlap {
		return 0, fmt.Errorf("%w: --overlap %q: want a duration from 0 to %v (30 days), such as 90m, 24h or 7d", errUsage, v, maxOverlap)
	}
	return d, nil
}
