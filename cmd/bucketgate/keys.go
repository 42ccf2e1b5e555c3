package main

import (
	"cmp"
	"context"
	"crypto/rand"
	"encoding/base64"
	"errors"
	"flag"
	"fmt"
	"slices"
	"strings"
	"sync"
	"time"
	"unicode/utf8"

	"github.com/bucketgate/bucketgate"
	"github.com/bucketgate/bucketgate/checkapi"
	"github.com/bucketgate/bucketgate/internal/app"
	"github.com/bucketgate/bucketgate/internal/config"
	"github.com/bucketgate/bucketgate/internal/madekey"
	"github.com/bucketgate/bucketgate/internal/registry"
	"github.com/bucketgate/bucketgate/internal/settings"
)

const keysUsage = `  bucketgate keys init
  bucketgate keys create --plan NAME [--owner TEXT] [--note TEXT] [--expires WHEN] [--rule RULE]... [--tenant KEY | --key -]
  bucketgate keys create --account NAME [--owner TEXT] [--note TEXT] [--expires WHEN] [--rule RULE]... [--key -]
  bucketgate keys roll KEY [--overlap DURATION] [--account NAME]
  bucketgate keys revoke KEY
  bucketgate keys expire KEY WHEN|never [--force]
  bucketgate keys set-plan KEY NAME [--force]
  bucketgate keys override KEY --rule RULE [--rule ...]
  bucketgate keys clear-overrides KEY
  bucketgate keys show [--json] KEY
  bucketgate keys list [--json]

KEY is an API key, its id key:<32 hex digits> (printf %s "$KEY" | sha256sum | cut -c1-32),
or tenant:<key> for a check function tenant, or tenant:<32 hex digits>, the digest of its
key, as the functions' log lines name it (when no tenant's key is those digits, the
table is scanned for the tenant; tenant:bg_..., an API key bucketgate made, which no
tenant's key is, is taken as tenant:<its digest>, with a note); - reads an API key from the first line of
stdin, out of the process list and the shell's history. create prints the new key alone on
the first line of stdout: it is shown once, only its digest is stored; with --key - it
registers a key made elsewhere, read from stdin, if it has 128 bits of entropy. WHEN is an RFC 3339 time
(2027-01-31T00:00:00Z), a date (2027-01-31, midnight UTC) or a time from now (90m, 720h,
30d). RULE is a bucket, NAME:CAPACITY:RATE, RATE in tokens per second (0.5) or N/PERIOD
(1000/day; second, minute, hour, day or a duration such as 90s), or a quota on the
calendar, NAME:LIMIT:PERIOD[@DAY], PERIOD day, week or month (a month from DAY, 1 to 28:
monthly:100000:month@15), or a concurrency rule, NAME:N:concurrent, at most N requests
in flight (streams:5:concurrent). A rule named like one of the plan's or a route's
replaces it for the key (a bucket by a bucket, a quota by a quota, a concurrency rule
by one), shadow if that rule is shadow
(create and override note it); another name adds a rule. A key's rule named like a
route's rule alone limits that route's requests, and one named like none (or like one
of the plan's) every request (a tenant's, which no route applies to, every check):
set-plan refuses a plan that would change which requests an own rule limits (or make
it shadow: none), naming the rules (--force sets it anyway), and so does an expire that
makes an expired key active again when a document written meanwhile (config put passes
over a key that is not active) changes what its own rules limit since the one in force
when it expired (when the copies cannot say which that was, it warns that it did not
check).

A key of an account (--account, which must be in the table and active) is decided as the
account: its plan and rules, its buckets (acct:NAME), shared by every key of it; the
key's own --rule ones limit that key alone, beside the account's (named <digest>/NAME in
the headers), and its plan is the account's (bucketgate accounts set-plan). roll issues a
new key for the same account, prints it alone on the first line of stdout, once, and sets
the old key to expire after --overlap (24h by default, at most 720h; 0 expires it now,
and an earlier expiry stays); the new key keeps the old one's own rules, owner, note and
expiry, and their buckets (named by the first key's digest). A lone key first becomes the key of an account of its own, named by --account or
key-<its digest>, with its plan and rules, which spends the key's own buckets
(key:<digest>): the rotation gives back no token.

Every command takes --table NAME (default: $REGISTRY_TABLE, which must be the stack's
own when --stack names one, else the output RegistryTableName of the stack) and the AWS
SDK's default credentials and region; AWS_ENDPOINT_URL_DYNAMODB points it at a local
DynamoDB. Plans are checked against the configuration document the functions load: the
table's (bucketgate config), or while the table holds none, their RATE_LIMIT_CONFIG: the
stack's parameter RateLimitConfig when the table is the stack's output (REGISTRY_TABLE's
too), else this shell's RATE_LIMIT_CONFIG, RATE_LIMIT_CONFIG_FILE or built-in one.
`

// tableCommand is one command over the registry table (keys, accounts, config): it adds
// its flags to fs and returns the function that runs with the table and the parsed
// arguments.
type tableCommand struct {
	args int // how many arguments it takes
	// item, when set, turns the first argument (a KEY, an account's NAME) into the id of
	// its registry item, which the function gets instead.
	item  func(e env, arg string) (string, error)
	flags func(fs *flag.FlagSet) func(e env, t *keyTable, args []string) error
}

var keysCommands = map[string]tableCommand{
	"init":            {0, nil, initFlags},
	"create":          {0, nil, createFlags},
	"roll":            {1, itemArg, rollFlags},
	"revoke":          {1, itemArg, revokeFlags},
	"expire":          {2, itemArg, expireFlags},
	"set-plan":        {2, itemArg, setPlanFlags},
	"override":        {1, itemArg, overrideFlags},
	"clear-overrides": {1, itemArg, clearFlags},
	"show":            {1, itemArg, showFlags},
	"list":            {0, nil, listFlags(false)},
}

// runKeys runs the keys command named by args[0].
func runKeys(e env, args []string) error { return runTableCommand(e, "keys", keysCommands, args) }

// runTableCommand runs the command of group named by args[0] among commands, with the
// table of --table or REGISTRY_TABLE.
func runTableCommand(e env, group string, commands map[string]tableCommand, args []string) error {
	c, fs, err := command(group, commands, args)
	if err != nil {
		return err
	}
	table := nameFlag(fs, "table", "the registry table (default: $"+settings.EnvRegistryTable+", else the stack's "+outputTable+")")
	e.addStack(fs)
	do := c.flags(fs)
	positional, err := parse(fs, args[1:], c.args)
	if err != nil {
		return err
	}
	if c.item != nil {
		if positional[0], err = c.item(e, positional[0]); err != nil {
			return err
		}
	}
	t, err := openTable(e, string(*table), e.stack())
	if err != nil {
		return err
	}
	t.flag = "--table"
	if c.item != nil {
		if positional[0], err = t.tenantItem(e.ctx, positional[0]); err != nil {
			return err
		}
	}
	return do(e, t, positional)
}

// openTable returns the registry table called name, else the one of REGISTRY_TABLE
// (which must be the one of st, when st is named: stack.agree), else the one the output
// RegistryTableName of st names. It reads the stack, if it must,
// on the table's first use, after the command has checked its arguments; the plans
// records are checked against, when a command first needs them (keyTable.plans).
func openTable(e env, name string, st *stack) (*keyTable, error) {
	s, err := e.settings()
	if err != nil {
		return nil, err
	}
	from := "--table"
	if name == "" {
		name, from = s.RegistryTable, settings.EnvRegistryTable
	} else if err := settings.CheckTableName(name); err != nil { // REGISTRY_TABLE's, settings.Load checked
		return nil, fmt.Errorf("%w: --table %w", errUsage, err)
	}
	if name == "" && st.name == "" {
		return nil, fmt.Errorf("%w: no registry table: set %s or --table, or name the stack with --stack or %s", errUsage, settings.EnvRegistryTable, envStack)
	}
	t := &keyTable{name: name}
	fromStack := false // the table is the stack's output: its functions' document is the stack's parameter
	t.env = func() (*config.Config, string, error) {
		s.RegistryTable = t.name // the functions read it with the table, however this command names it
		from := "this shell's " + settings.EnvConfigInline + ", " + settings.EnvConfigFile +
			" or built-in document, as the table holds none: check that it is the functions' own"
		if doc, ok := st.parameters[paramConfig]; fromStack && ok {
			s.ConfigInline, s.ConfigFile = doc, "" // as template.yaml sets the functions' environment
			t.envKnown = true
			from = "stack " + st.name + "'s parameter " + paramConfig + ", the functions' " + settings.EnvConfigInline + " (empty: the built-in document), as the table holds none"
		}
		cfg, err := app.LoadConfig(s)
		if err != nil && fromStack {
			err = fmt.Errorf("stack %s's parameter %s: %w", st.name, paramConfig, err)
		}
		return cfg, from, err
	}
	t.open = sync.OnceValue(func() (err error) {
		if t.name == "" {
			if t.name, err = st.output(e.ctx, t.flag, settings.EnvRegistryTable, outputTable); err != nil {
				return err
			}
			fromStack = true
		} else if from == settings.EnvRegistryTable {
			if err := st.agree(e.ctx, "table", from, t.name, t.flag, func(a, b string) bool { return a == b }, outputTable); err != nil {
				return err
			}
			fromStack = st.name != "" // the stack's table, named again
		} else {
			st.passOver(e, "table "+t.name, from)
		}
		if t.db, err = registry.NewClient(e.ctx); err != nil {
			return err
		}
		if o := t.db.Options(); o.Region == "" && o.BaseEndpoint == nil {
			return fmt.Errorf("table %s: %w to the table's", t.name, app.ErrNoRegion)
		}
		if err := readCredentials(e.ctx, t.db.Options().Credentials); err != nil {
			return fmt.Errorf("table %s: %w", t.name, err)
		}
		return nil
	})
	return t, nil
}

func initFlags(*flag.FlagSet) func(env, *keyTable, []string) error {
	return func(e env, t *keyTable, _ []string) error {
		if err := t.create(e.ctx); err != nil {
			return err
		}
		fmt.Fprintf(e.stderr, "created table %s\n", t.name)
		return nil
	}
}

func createFlags(fs *flag.FlagSet) func(env, *keyTable, []string) error {
	plan := fs.String("plan", "", "the key's plan (required, but with --account)")
	account := fs.String("account", "", "the account the key is for, in the table: the key is decided as the account")
	owner := proseFlag(fs, "owner", "who the key is for, for people")
	note := proseFlag(fs, "note", "a note, for people")
	expires := fs.String("expires", never, "when the key stops working, or never")
	tenant := textFlag(fs, "tenant", "register this check function tenant instead of a new API key")
	existing := fs.String("key", "", "- alone: register the API key on stdin (made elsewhere) instead of a new one")
	var rules ruleList
	fs.Var(&rules, "rule", "a rule of the key's own, "+ruleFlagForms+" (repeatable)")
	return func(e env, t *keyTable, _ []string) error {
		// --tenant and --key given empty (a script's unset variable) are refused below:
		// taken as not given, they made a new API key instead, and the command succeeded.
		// So is --account given empty: taken as not given, it made a lone key.
		isTenant, isExisting, inAccount := isSet(fs, "tenant"), isSet(fs, "key"), isSet(fs, "account")
		if isSet(fs, "plan") {
			if err := planGiven(fs, "--plan", *plan); err != nil {
				return err
			}
		}
		if inAccount {
			var err error
			if *account, err = parseAccountName("--account", *account); err != nil {
				return err
			}
		}
		switch {
		case *plan == "" && !inAccount:
			return fmt.Errorf("%w: keys create: --plan is required (or --account)", errUsage)
		case *plan != "" && inAccount:
			return fmt.Errorf("%w: keys create: --plan or --account, not both: a key of an account is on the account's plan", errUsage)
		case inAccount && isTenant:
			return fmt.Errorf("%w: keys create: --account or --tenant, not both: an account's keys are API keys", errUsage)
		}
		rec := registry.Record{Plan: *plan, Account: *account, Rules: rules, Owner: string(*owner), Note: string(*note)}
		var err error
		if rec.ExpiresAt, err = parseExpires(*expires, "key"); err != nil {
			return err
		}
		if isTenant && isExisting {
			return fmt.Errorf("%w: keys create: --tenant or --key, not both", errUsage)
		}
		if inAccount {
			if err := t.activeAccount(e.ctx, *account); err != nil {
				return err
			}
		}
		if isExisting {
			return createExisting(e, t, rec, *existing)
		}
		if isTenant {
			if err := checkTenant(string(*tenant)); err != nil {
				return fmt.Errorf("%w: --tenant: %w", errUsage, err)
			}
			rec.ID = bucketgate.Identity{Kind: bucketgate.KindTenant, Value: string(*tenant)}.String()
			if err := t.put(e.ctx, rec); err != nil {
				return err
			}
			fmt.Fprintf(e.stderr, "created %s on plan %s\n", rec.ID, rec.Plan)
			noteShadowed(e, t, rec, rec.Rules)
			return nil
		}
		key, err := newKey()
		if err != nil {
			return err
		}
		rec.ID = keyID(key)
		if err := t.putMade(e.ctx, rec); err != nil {
			return err
		}
		if err := showKey(e, t, rec.ID, key); err != nil {
			return err
		}
		fmt.Fprintf(e.stderr, "created %s %s: the key above is shown this once, store it now\n", rec.ID, onWhat(rec))
		noteShadowed(e, t, rec, rec.Rules)
		return t.confirm(e.ctx, rec)
	}
}

// showKey prints key, just written to the table as the item id, alone on a line of
// stdout: its only copy. A key that cannot be printed (stdout on a full disk) is held by
// nobody: it is revoked, and the error says so.
func showKey(e env, t *keyTable, id, key string) error {
	_, err := fmt.Fprintln(e.keyOut, key)
	if err == nil {
		return nil
	}
	if rerr := t.revoke(e.ctx, id); rerr != nil {
		return fmt.Errorf("the new key could not be printed: %w; %s, which nobody holds, could not be revoked (bucketgate keys revoke %s): %w", err, id, id, rerr)
	}
	return fmt.Errorf("the new key could not be printed: %w; %s, which nobody holds, is revoked", err, id)
}

// parseExpires reads the --expires of a new item, what it is (a key, an account): never
// (the zero Time, the flag's default), or a time as parseWhen reads it, which must not
// have passed, since the item would never work.
func parseExpires(v, what string) (time.Time, error) {
	if v == never {
		return time.Time{}, nil
	}
	now := time.Now()
	at, err := parseWhen(v, now)
	switch {
	case err != nil:
		return time.Time{}, fmt.Errorf("%w: --expires: %w", errUsage, err)
	case !at.IsZero() && !at.After(now):
		return time.Time{}, fmt.Errorf("%w: --expires %s: %s has passed: the %s would never work", errUsage, v, at.UTC().Format(time.RFC3339), what)
	}
	return at, nil
}

// onWhat says what rec's key is decided as: "on plan NAME", or "in account NAME".
func onWhat(rec registry.Record) string {
	if rec.Account != "" {
		return "in account " + rec.Account
	}
	return "on plan " + rec.Plan
}

// createExisting registers rec under the API key read from stdin, arg being "-": a key
// made elsewhere, moved into the registry, refused when its digest could be reversed
// (checkEntropy). It prints its id, never the key.
func createExisting(e env, t *keyTable, rec registry.Record, arg string) error {
	if arg != fromStdin {
		return fmt.Errorf("%w: keys create: --key takes - alone, and reads the key from stdin: a key on the command line shows in the process list and the shell's history", errUsage)
	}
	key, err := readKey(e)
	if err != nil {
		return err
	}
	if err := checkEntropy(key); err != nil {
		return err
	}
	rec.ID = keyID(key)
	if err := t.put(e.ctx, rec); err != nil {
		return err
	}
	fmt.Fprintf(e.stderr, "created %s %s, for the key read from stdin\n", rec.ID, onWhat(rec))
	noteShadowed(e, t, rec, rec.Rules)
	return nil
}

func revokeFlags(*flag.FlagSet) func(env, *keyTable, []string) error {
	return func(e env, t *keyTable, args []string) error {
		id := args[0]
		if err := t.revoke(e.ctx, id); err != nil {
			return err
		}
		fmt.Fprintf(e.stderr, "revoked %s: every function treats it%s as unknown within its cache period (REGISTRY_CACHE_MS)\n", id, andItsKeys(id))
		return nil
	}
}

func expireFlags(fs *flag.FlagSet) func(env, *keyTable, []string) error {
	force := fs.Bool("force", false, "make it active again even if a document written while it was expired changes which requests its own rules limit")
	return func(e env, t *keyTable, args []string) error {
		id := args[0]
		var (
			at  time.Time
			err error
		)
		if madekey.Is(args[1]) { // never quoted, as parseWhen's error would
			first := "KEY"
			if strings.HasPrefix(fs.Name(), "accounts ") {
				first = "NAME"
			}
			return fmt.Errorf("%w: WHEN is an API key: give %s, then WHEN", usageOf(fs), first)
		}
		if args[1] != never {
			if at, err = parseWhen(args[1], time.Now()); err != nil {
				return fmt.Errorf("%w: %w", usageOf(fs), err)
			}
		}
		var (
			rescoped  []string
			unchecked string
			revoked   bool
		)
		err = t.change(e.ctx, id, func(r *registry.Record) error {
			was := *r
			revoked = was.Status == registry.StatusRevoked
			r.ExpiresAt = at
			var err error
			if rescoped, unchecked, err = t.revived(e.ctx, was, *r); err != nil {
				return err
			}
			if len(rescoped) > 0 && !*force {
				return fmt.Errorf("the document in force, written while %s was expired, would change which requests the own rules of %s limit once it is active again (--force sets it anyway; bucketgate keys override or clear-overrides, or accounts override or clear-overrides, changes them first); nothing written:\n%s", id, id, nameBroken(rescoped))
			}
			return nil
		})
		if len(rescoped) > 0 && (err == nil || errors.Is(err, errWritten)) {
			warnTo(e)(fmt.Sprintf("--force: the own rules of %s limit other requests now:\n%s", id, nameBroken(rescoped)))
		}
		if unchecked != "" && (err == nil || errors.Is(err, errWritten)) {
			warnTo(e)(fmt.Sprintf("not checked whether the documents written while %s was expired change which requests its own rules limit: %s", id, unchecked))
		}
		if err != nil {
			return err
		}
		stays := ""
		if revoked {
			stays = fmt.Sprintf(", and stays revoked: every function treats it%s as unknown (a revocation is never undone)", andItsKeys(id))
		}
		fmt.Fprintf(e.stderr, "%s expires %s%s\n", id, orNever(expiry(registry.Record{ExpiresAt: at})), stays)
		return nil
	}
}

// planGiven refuses a plan given empty or blank (a script's unset variable: no plan to
// look up), or holding an API key bucketgate made (a key pasted in the wrong place, as
// buckets' --plan refuses it), as a usage error of fs naming what gave it, before any
// call.
func planGiven(fs *flag.FlagSet, what, plan string) error {
	switch {
	case strings.TrimSpace(plan) == "":
		return fmt.Errorf("%w: %s is empty: name a plan of the configuration document (bucketgate config show)", usageOf(fs), what)
	case madekey.Holds(plan):
		return fmt.Errorf("%w: %s: %w", usageOf(fs), what, errKeyForName)
	}
	return nil
}

func setPlanFlags(fs *flag.FlagSet) func(env, *keyTable, []string) error {
	force := fs.Bool("force", false, "set it even if the new plan changes which requests its own rules limit")
	return func(e env, t *keyTable, args []string) error {
		if err := planGiven(fs, "PLAN", args[1]); err != nil {
			return err
		}
		id := args[0]
		var rescoped []string
		err := t.change(e.ctx, id, func(r *registry.Record) error {
			if r.Account != "" {
				return fmt.Errorf("%s is a key of account %s: its plan is the account's (bucketgate accounts set-plan %s PLAN)", id, r.Account, r.Account)
			}
			var err error
			if rescoped, err = t.replanned(e.ctx, *r, args[1]); err != nil {
				return err
			}
			if len(rescoped) > 0 && !*force {
				return fmt.Errorf("plan %s would change which requests the own rules of %s limit (--force sets it anyway; bucketgate keys override or clear-overrides, or accounts override or clear-overrides, changes them first); nothing written:\n%s", args[1], id, nameBroken(rescoped))
			}
			r.Plan = args[1]
			return nil
		})
		if len(rescoped) > 0 && (err == nil || errors.Is(err, errWritten)) {
			warnTo(e)(fmt.Sprintf("--force: the own rules of %s limit other requests now:\n%s", id, nameBroken(rescoped)))
		}
		if err != nil {
			return err
		}
		fmt.Fprintf(e.stderr, "%s is on plan %s, keeping its buckets\n", id, args[1])
		return nil
	}
}

func overrideFlags(fs *flag.FlagSet) func(env, *keyTable, []string) error {
	var rules ruleList
	whose := "the key's" // or the account's: accounts override
	if strings.HasPrefix(fs.Name(), "accounts ") {
		whose = "the account's"
	}
	fs.Var(&rules, "rule", "a rule of "+whose+" own, "+ruleFlagForms+" (repeatable): replaces "+whose+" rule of that name, or adds one")
	return func(e env, t *keyTable, args []string) error {
		if len(rules) == 0 {
			return fmt.Errorf("%w: give at least one --rule", usageOf(fs))
		}
		id := args[0]
		var rec registry.Record
		err := t.change(e.ctx, id, func(r *registry.Record) error {
			for _, o := range rules {
				if i := slices.IndexFunc(r.Rules, func(x bucketgate.Rule) bool { return x.Name == o.Name }); i >= 0 {
					r.Rules[i] = o
				} else {
					r.Rules = append(r.Rules, o)
				}
			}
			rec = *r
			return nil
		})
		if err != nil {
			return err
		}
		fmt.Fprintf(e.stderr, "%s has its own rules %s\n", id, rulesText(rec.Rules))
		noteShadowed(e, t, rec, rules)
		return nil
	}
}

// noteShadowed notes on stderr each of rules, own rules just written for rec, that is
// shadow for rec (see shadowed), and so limits nothing.
func noteShadowed(e env, t *keyTable, rec registry.Record, rules []bucketgate.Rule) {
	for _, name := range t.shadowed(e.ctx, rec, rules) {
		fmt.Fprintf(e.stderr, "note: rule %s replaces the shadow rule %s (of the plan, or of a route), so it is shadow for %s too: it limits nothing until the configuration document enforces %s\n", name, name, rec.ID, name)
	}
}

// shadowed returns the names of rules, own rules of rec as written, that are shadow
// rules in the document in force (shadowIn); none when it cannot be read.
func (t *keyTable) shadowed(ctx context.Context, rec registry.Record, rules []bucketgate.Rule) []string {
	cfg, err := t.plans(ctx)
	if err != nil {
		return nil
	}
	return shadowIn(cfg, rec, rules)
}

// shadowIn returns the names of rules, own rules of rec, that replace a shadow rule of
// rec's plan (or of a route, but for a tenant's) in cfg, and so are shadow rules too
// (config.Config.Shadows): none for a key of an account, whose own rules are its own,
// always enforced, or of a plan cfg does not have.
func shadowIn(cfg *config.Config, rec registry.Record, rules []bucketgate.Rule) []string {
	if rec.Account != "" {
		return nil
	}
	p, ok := cfg.Plan(rec.Plan)
	if !ok {
		return nil
	}
	var names []string
	for _, r := range rules {
		if cfg.Shadows(p, r.Name, !strings.HasPrefix(rec.ID, bucketgate.TenantPrefix)) {
			names = append(names, r.Name)
		}
	}
	return names
}

func clearFlags(*flag.FlagSet) func(env, *keyTable, []string) error {
	return func(e env, t *keyTable, args []string) error {
		id := args[0]
		if err := t.change(e.ctx, id, func(r *registry.Record) error { r.Rules = nil; return nil }); err != nil {
			return err
		}
		fmt.Fprintf(e.stderr, "%s has its plan's rules only\n", id)
		return nil
	}
}

func showFlags(fs *flag.FlagSet) func(env, *keyTable, []string) error {
	asJSON := fs.Bool("json", false, "print JSON")
	return func(e env, t *keyTable, args []string) error {
		id := args[0]
		r, err := t.get(e.ctx, id)
		if err != nil {
			return err
		}
		it := listed{rec: r, plan: r.Plan}
		var acct *registry.Record
		if r.Account != "" {
			a, err := t.account(e.ctx, r.Account)
			var bad *registry.RecordError
			switch {
			case err == nil:
				acct = &a
			case errors.As(err, &bad):
				it.err = accountUnreadable(r, err)
			case !errors.Is(err, errNoItem):
				return err
			}
		}
		plans, unchecked, err := t.shownPlans(e.ctx)
		if err != nil {
			return err
		}
		if unchecked != nil { // the record is still worth showing
			fmt.Fprintf(e.stderr, "warning: %s is not checked against the plans: %v\n", id, unchecked)
		}
		assess(&it, acct, plans)
		if *asJSON {
			return writeJSON(e.stdout, itemJSONOf(it))
		}
		return writeRecord(e.stdout, it)
	}
}

// listFlags is the list command of keys, or with accounts of accounts.
func listFlags(accounts bool) func(fs *flag.FlagSet) func(env, *keyTable, []string) error {
	return func(fs *flag.FlagSet) func(env, *keyTable, []string) error {
		return listItems(fs, accounts)
	}
}

func listItems(fs *flag.FlagSet, accounts bool) func(env, *keyTable, []string) error {
	asJSON := fs.Bool("json", false, "print a JSON array")
	return func(e env, t *keyTable, _ []string) error {
		items, unchecked, err := t.list(e.ctx, accounts)
		if err != nil {
			return err
		}
		if unchecked != nil { // the items are still worth listing
			fmt.Fprintf(e.stderr, "warning: the items are not checked against the plans: %v\n", unchecked)
		}
		for _, it := range items {
			if it.madeKey != "" {
				noteMadeKey(e, it)
			}
		}
		if *asJSON {
			out := make([]itemJSON, len(items))
			for i, it := range items {
				out[i] = itemJSONOf(it)
			}
			return writeJSON(e.stdout, out)
		}
		return writeList(e.stdout, items)
	}
}

// noteMadeKey says on stderr what to do with it, a tenant whose key is or holds an API
// key bucketgate made (a CLI of an earlier release wrote one, or a hand), whose item
// holds the key: delete it, and register the tenant again by its key's digest, as a
// service names it now.
func noteMadeKey(e env, it listed) {
	again := "bucketgate keys create --tenant " + it.madeKey + " --plan " + cmp.Or(it.rec.Plan, "PLAN")
	for _, r := range it.rec.Rules {
		r.Shadow = false // assess's mark
		again += " --rule " + rulesText([]bucketgate.Rule{r})
	}
	fmt.Fprintf(e.stderr, "note: %s is a tenant whose key is or holds an API key bucketgate made, which no function looks up any more (the check function refuses such a key), and its item holds the key: delete the item (its %s is the one shown, the key in place of %s...: the DynamoDB console, or aws dynamodb delete-item), and to keep the tenant, register it by its key's digest, as a service names it now: %s\n",
		it.rec.ID, registry.KeyAttribute, madekey.Prefix, again) // stderr masks a key a hand put in the item's plan
}

// andItsKeys is ", and every key of it," for the item id of an account, else "".
func andItsKeys(id string) string {
	if strings.HasPrefix(id, registry.AccountItemPrefix) {
		return ", and every key of it,"
	}
	return ""
}

// newKey returns a new API key: madekey.Prefix and madekey.Bytes from
// crypto/rand, base64url.
func newKey() (string, error) {
	b := make([]byte, madekey.Bytes)
	if _, err := rand.Read(b); err != nil {
		return "", fmt.Errorf("make a key: %w", err)
	}
	return madekey.Prefix + base64.RawURLEncoding.EncodeToString(b), nil
}

// keyID returns the registry id of an API key.
func keyID(key string) string {
	return bucketgate.KeyIdentity(key).String()
}

// itemArg returns the registry id that the argument arg names: as itemID does (a tenant
// whose key is an API key bucketgate made by its digest: madeTenant), or for "-" the id
// of the API key read from stdin.
func itemArg(e env, arg string) (string, error) {
	if arg != fromStdin {
		return itemID(madeTenant(e, arg))
	}
	key, err := readKey(e)
	if err != nil {
		return "", err
	}
	return keyID(key), nil
}

// itemID returns the registry id that arg names: "key:<digest>" or "tenant:<key>" as
// given, any other text as an API key (by its digest); "key:" with anything but a
// digest is refused, as a mistyped id rather than a key, an account's id or identity
// as an account's, and a tenant key that no check could carry (checkTenant: one that
// holds an API key bucketgate made, among others), whose item no function reads. The
// error never quotes arg: it may be a key.
func itemID(arg string) (string, error) {
	switch {
	case strings.HasPrefix(arg, bucketgate.AccountPrefix), strings.HasPrefix(arg, registry.AccountItemPrefix):
		return "", fmt.Errorf("%w: KEY names an account: bucketgate accounts takes it", errUsage)
	case strings.HasPrefix(arg, string(bucketgate.KindTenant)+":"):
		if len(arg) == len(bucketgate.KindTenant)+1 {
			return "", fmt.Errorf("%w: tenant: with no tenant key", errUsage)
		}
		if err := checkTenant(arg[len(bucketgate.TenantPrefix):]); err != nil {
			return "", fmt.Errorf("%w: tenant: %w", errUsage, err)
		}
		return arg, nil
	case strings.HasPrefix(arg, string(bucketgate.KindKey)+":"):
		if !bucketgate.ValidDigest(arg[len(bucketgate.KindKey)+1:]) {
			return "", errNotDigest
		}
		return arg, nil
	case strings.TrimSpace(arg) == "":
		return "", fmt.Errorf("%w: KEY is empty", errUsage)
	}
	return keyID(strings.Trim(arg, " \t")), nil
}

// checkTenant reports a tenant key that no check could carry: not 1 to checkapi.MaxKey
// bytes of UTF-8 text, or one that is or holds an API key bucketgate made
// (madekey.Holds), as the check function takes its keys. The error never quotes key.
func checkTenant(key string) error {
	if key == "" || len(key) > checkapi.MaxKey || !utf8.ValidString(key) {
		return fmt.Errorf("a tenant key of %d bytes: want 1 to %d bytes of UTF-8 text, as the check function takes its keys", len(key), checkapi.MaxKey)
	}
	if madekey.Holds(key) {
		return fmt.Errorf("a tenant key that is or holds an API key bucketgate made (%s...): the check function refuses it, which would rest in Redis and the registry as it is: name the tenant by the key's digest (printf %%s \"$KEY\" | sha256sum | cut -c1-%d)", madekey.Prefix, bucketgate.DigestLen)
	}
	return nil
}

// errNotDigest is the error about "key:" followed by anything but a key's digest.
var errNotDigest = fmt.Errorf("%w: key: wants the key's digest, %d lowercase hex digits (give an API key itself without key:)", errUsage, bucketgate.DigestLen)

// errNoItem is wrapped by the error about an id the table does not hold.
var errNoItem = errors.New("no such item")
