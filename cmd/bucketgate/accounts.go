package main

import (
	"context"
	"flag"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/bucketgate/bucketgate"
	"github.com/bucketgate/bucketgate/internal/madekey"
	"github.com/bucketgate/bucketgate/internal/registry"
)

const accountsUsage = `  bucketgate accounts create NAME --plan PLAN [--owner TEXT] [--note TEXT] [--expires WHEN] [--rule RULE]...
  bucketgate accounts set-plan NAME PLAN [--force]
  bucketgate accounts override NAME --rule RULE [--rule ...]
  bucketgate accounts clear-overrides NAME
  bucketgate accounts expire NAME WHEN|never [--force]
  bucketgate accounts revoke NAME
  bucketgate accounts show [--json] NAME
  bucketgate accounts list [--json]

NAME is an account's name, 1 to 128 letters, digits, '.', '_' or '-' (acct:NAME and
account:NAME name it too): its item is account:NAME, its identity acct:NAME. Every key of
an account (keys create --account NAME, keys roll) is decided as the account, under its
plan and rules, and spends the account's buckets, one set for all its keys; a revoked or
expired account makes every key of it unknown, within the functions' cache period. show
lists the account's keys. WHEN, RULE, --table and the plans are as for keys; writes are
conditional as theirs. set-plan and override (and an expire that makes an expired
account active again) refuse a change that leaves an active key of the account without
room for its own rules, naming the keys, and read them again once written, naming a key
written meanwhile that it leaves so; set-plan refuses a plan that would change which
requests the account's own rules limit, as keys set-plan does, and so does an expire
that makes an expired account active again (keys expire).
`

var accountsCommands = map[string]tableCommand{
	"create":          {1, accountArg, accountCreateFlags},
	"revoke":          {1, accountArg, revokeFlags},
	"expire":          {2, accountArg, expireFlags},
	"set-plan":        {2, accountArg, setPlanFlags},
	"override":        {1, accountArg, overrideFlags},
	"clear-overrides": {1, accountArg, clearFlags},
	"show":            {1, accountArg, accountShowFlags},
	"list":            {0, nil, listFlags(true)},
}

// runAccounts runs the accounts command named by args[0].
func runAccounts(e env, args []string) error {
	return runTableCommand(e, "accounts", accountsCommands, args)
}

// wantAccountName says what an account's name is.
var wantAccountName = fmt.Sprintf("want an account's name: 1 to %d letters, digits, '.', '_' or '-'", bucketgate.MaxAccountName)

// checkAccountName returns why name, given as what ("--account", "account"), is no
// account's name: a usage error. An API key (one the shape of those keys create makes)
// fits the set of names, and is refused unquoted, as is a name holding one: an
// account's name rests in the table, in its buckets' Redis keys and in every log line
// of the account.
func checkAccountName(what, name string) error {
	switch {
	case madekey.Holds(name):
		return fmt.Errorf("%w: %s: an API key or a name holding one, not an account's name (keys commands take keys; an account's name is never secret)", errUsage, what)
	case !bucketgate.ValidAccountName(name):
		return fmt.Errorf("%w: %s %q: %s", errUsage, what, name, wantAccountName)
	}
	return nil
}

// checkNewAccountName returns why name, given as what ("account", "--account") for an
// account to be created, is refused beyond checkAccountName: a name holding what may be
// an API key bucketgate made, or part of one (keyShown), which the CLI prints masked. An
// account that an earlier CLI or a hand named so is still reached by its name.
func checkNewAccountName(what, name string) error {
	if shown := keyShown(name); shown != "" {
		return fmt.Errorf("%w: %s: a name holding %s, not an account's name: name it otherwise", errUsage, what, shown)
	}
	return nil
}

// accountArg returns the id of the item of the account that arg names: NAME,
// acct:NAME or account:NAME.
func accountArg(_ env, arg string) (string, error) {
	name, err := parseAccountName("account", arg)
	if err != nil {
		return "", err
	}
	return registry.AccountItemPrefix + name, nil
}

// parseAccountName returns the name of the account that arg, given as what ("account",
// "--account"), names: NAME, acct:NAME or account:NAME, as the lists print it.
func parseAccountName(what, arg string) (string, error) {
	name, ok := strings.CutPrefix(arg, bucketgate.AccountPrefix)
	if !ok {
		name = strings.TrimPrefix(arg, registry.AccountItemPrefix)
	}
	return name, checkAccountName(what, name)
}

// activeAccount reports why a key cannot be put in the account called name: the table
// does not hold it, or it is revoked or expired; else it notes the account as active
// (keyTable.active).
func (t *keyTable) activeAccount(ctx context.Context, name string) error {
	acct, err := t.account(ctx, name)
	if err != nil {
		return err
	}
	if !acct.Active(time.Now()) {
		return fmt.Errorf("account %s is %s: its keys are unknown to the functions; nothing written", name, status(acct))
	}
	t.active = name
	return nil
}

func accountCreateFlags(fs *flag.FlagSet) func(env, *keyTable, []string) error {
	plan := fs.String("plan", "", "the account's plan (required)")
	owner := proseFlag(fs, "owner", "who the account is, for people")
	note := proseFlag(fs, "note", "a note, for people")
	expires := fs.String("expires", never, "when the account and every key of it stop working, or never")
	var rules ruleList
	fs.Var(&rules, "rule", "a rule of the account's own, "+ruleFlagForms+" (repeatable)")
	return func(e env, t *keyTable, args []string) error {
		if err := checkNewAccountName("account", accountName(args[0])); err != nil {
			return err
		}
		if !isSet(fs, "plan") {
			return fmt.Errorf("%w: accounts create: --plan is required", errUsage)
		}
		if err := planGiven(fs, "--plan", *plan); err != nil {
			return err
		}
		rec := registry.Record{ID: args[0], Plan: *plan, Rules: rules, Owner: string(*owner), Note: string(*note)}
		var err error
		if rec.ExpiresAt, err = parseExpires(*expires, "account"); err != nil {
			return err
		}
		if err := t.put(e.ctx, rec); err != nil {
			return err
		}
		fmt.Fprintf(e.stderr, "created account %s on plan %s: bucketgate keys create --account %s makes its keys\n",
			accountName(rec.ID), rec.Plan, accountName(rec.ID))
		noteShadowed(e, t, rec, rec.Rules)
		warnKeysTakenBack(e, t, accountName(rec.ID))
		return nil
	}
}

// warnKeysTakenBack warns on e's stderr when keys of t already name the account called
// name, just created: one whose item was deleted by hand and is made again takes them
// back, the active ones working again at once on it, and with them what Redis still
// holds of acct:NAME (its buckets, its quotas' windows, its usage). A table it cannot
// scan gets a note saying so.
func warnKeysTakenBack(e env, t *keyTable, name string) {
	keys, err := t.keysOf(e.ctx, name)
	if err != nil {
		fmt.Fprintf(e.stderr, "note: could not check for keys that name account %s already: %v\n", name, err)
		return
	}
	if len(keys) == 0 {
		return
	}
	now := time.Now()
	var active []string
	for _, k := range keys {
		if k.Active(now) {
			active = append(active, k.ID)
		}
	}
	working := "none of them active"
	if len(active) > 0 {
		working = "the active ones working again at once, on it: " + strings.Join(active, ", ")
	}
	fmt.Fprintf(e.stderr, "warning: %d key(s) in table %s name account %s already (its item deleted by hand and made again, or keys written by hand): it takes them back, %s; and what Redis still holds of %s%s (its buckets, its quotas' windows, its usage) is its own: a new customer takes a new name (bucketgate keys revoke KEY stops a key)\n",
		len(keys), t.name, name, working, bucketgate.AccountPrefix, name)
}

// accountName returns the name of the account of the item id.
func accountName(id string) string { return strings.TrimPrefix(id, registry.AccountItemPrefix) }

func accountShowFlags(fs *flag.FlagSet) func(env, *keyTable, []string) error {
	asJSON := fs.Bool("json", false, "print JSON")
	return func(e env, t *keyTable, args []string) error {
		item, err := t.read(e.ctx, args[0])
		if err != nil {
			return err
		}
		r, err := registry.DecodeItem(item)
		identity := accountIdentity(r)
		if err != nil {
			identity = unreadIdentity(r.ID, item)
		}
		it := listed{rec: r, plan: r.Plan, err: err, unread: err != nil} // one unread is shown, invalid, with its keys
		keys, err := t.membersOf(e.ctx, accountName(r.ID))
		if err != nil {
			return err
		}
		for i, k := range keys { // as keys list lists them
			if it.unread && k.err == nil {
				keys[i].err = accountUnreadable(k.rec, it.err)
			}
		}
		plans, unchecked, err := t.shownPlans(e.ctx)
		if err != nil {
			return err
		}
		if unchecked != nil { // the account is still worth showing
			fmt.Fprintf(e.stderr, "warning: %s is not checked against the plans: %v\n", r.ID, unchecked)
		}
		assess(&it, nil, plans)
		for i, k := range keys { // with a usable account: their own rules may not fit its plan
			if k.err == nil && plans != nil && it.err == nil {
				_, keys[i].err = registry.ResolveMember(k.rec, r, plans)
			}
		}
		if *asJSON {
			j := accountJSON{itemJSON: itemJSONOf(it), Keys: make([]accountKeyJSON, len(keys))}
			if identity != "" {
				j.Identity = &identity
			}
			for i, k := range keys {
				j.Keys[i] = accountKeyJSON{ID: k.rec.ID, Status: k.status(), ExpiresAt: expiry(k.rec)}
				if k.err != nil {
					j.Keys[i].Invalid = k.err.Error()
				}
			}
			return writeJSON(e.stdout, j)
		}
		return writeAccount(e.stdout, identity, it, keys)
	}
}

// keysOf reads the records of every key of the account called name, in the order of
// their ids.
func (t *keyTable) keysOf(ctx context.Context, name string) ([]registry.Record, error) {
	h, err := t.scan(ctx, true)
	if err != nil {
		return nil, err
	}
	return slices.DeleteFunc(h.records, func(r registry.Record) bool { return r.Account != name }), nil
}

// membersOf returns every item that names the account called name, in the order of
// their ids: the records of its keys, and the items that cannot be read, each with why
// (the functions treat them as unknown keys), which an audit of the account must see too.
func (t *keyTable) membersOf(ctx context.Context, name string) ([]listed, error) {
	h, err := t.scan(ctx, true)
	if err != nil {
		return nil, err
	}
	var items []listed
	for _, r := range h.records {
		if r.Account == name {
			items = append(items, listed{rec: r})
		}
	}
	for _, u := range h.unreadable {
		if u.rec.Account == name {
			items = append(items, u)
		}
	}
	slices.SortFunc(items, func(a, b listed) int { return strings.Compare(a.rec.ID, b.rec.ID) })
	return items, nil
}

// unreadIdentity returns whose buckets the account of item spends, an item DecodeItem
// cannot read, as far as its buckets attribute tells on its own: the key it names (the
// key a roll made the account from), acct:NAME when the item has none, "" (unknown)
// when the attribute cannot be read either.
func unreadIdentity(id string, item map[string]types.AttributeValue) string {
	v, ok := item["buckets"]
	if !ok {
		return registry.IdentityOf(id)
	}
	if s, ok := v.(*types.AttributeValueMemberS); ok {
		if digest, ok := strings.CutPrefix(s.Value, bucketgate.KeyPrefix); ok && bucketgate.ValidDigest(digest) {
			return s.Value
		}
	}
	return ""
}

// accountIdentity returns whose buckets the account of r spends: acct:NAME, or the key
// it was made from.
func accountIdentity(r registry.Record) string {
	if r.Buckets != "" {
		return r.Buckets
	}
	return registry.IdentityOf(r.ID)
}
