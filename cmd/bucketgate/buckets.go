package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"regexp"
	"slices"
	"strings"

	"github.com/bucketgate/bucketgate"
	"github.com/bucketgate/bucketgate/checkapi"
	"github.com/bucketgate/bucketgate/checkclient"
	"github.com/bucketgate/bucketgate/internal/identity"
	"github.com/bucketgate/bucketgate/internal/registry"
	"github.com/bucketgate/bucketgate/internal/settings"
)

const bucketsUsage = `  bucketgate buckets show [--json] [--plan NAME | --rule RULE...] IDENTITY
  bucketgate buckets refund --cost N [--json] [--plan NAME | --rule RULE...] IDENTITY
  bucketgate buckets reset [--json] [--plan NAME | --rule RULE...] IDENTITY

IDENTITY is an API key (sent as key:<digest>, never itself; - reads it from the first line
of stdin, out of the process list and the shell's history), key:<digest>, acct:<name> for
an account, an IP address or ip:<address> (an IPv6 address stands for its prefix of
IPV6_PREFIX_LENGTH bits, as the authorizer groups it: ip:2001:db8::/64), ip:unknown, or
tenant:<key> for a check function tenant (or tenant:<digest>, as log lines name it, for a
tenant of the registry table, REGISTRY_TABLE's or the stack's; tenant:bg_..., an API key
bucketgate made, which no tenant's key is, is sent as tenant:<its digest>, with a note).
A key of an account reaches the account's
buckets, which all its keys spend, and which the command names (acct:<name>). The rules are the identity's own as the check function
resolves them (a registered key's or account's plan and rules, a key of an account's with
its own rules, else the default plan), or those of --plan, or the --rule ones (a route's
rules, by their names: NAME:CAPACITY:RATE for a bucket, NAME:LIMIT:PERIOD[@DAY] for a
quota). show peeks at the rule with the fewest
tokens left and lists every rule, buckets and quotas (cost 0: nothing written); refund gives N tokens back to every rule, never
above its capacity (sent again only when Lambda refused it or no connection was made,
never after a failure that may have come after it ran); reset makes every rule full.
Each prints the buckets after it. With a registry table (REGISTRY_TABLE's, else the
stack's), --plan must name a plan of the table's configuration document, when it holds
one (bucketgate config).

Every command invokes the operator function, the check function's code serving the
operator's operations, which a stack's check function refuses: --function NAME
(default: $` + envCheckFunction + `, else the output ` + outputOperatorName + ` of the stack of --stack,
or ` + outputCheckName + ` for a stack without one, else ` + defaultCheckFunction + `) through Lambda
Invoke, with the AWS SDK's default credentials and region, which need
lambda:InvokeFunction on it; AWS_ENDPOINT_URL_LAMBDA points it at another endpoint.
`

// envCheckFunction names the function the buckets commands invoke (a deployed stack's
// operator function), and defaultCheckFunction is the name they invoke without it: the
// operator function of a stack named bucketgate.
const (
	envCheckFunction     = "CHECK_FUNCTION"
	defaultCheckFunction = "bucketgate-operator"
)

// bucketsCommand is one buckets command: it adds its flags to fs and returns the
// function that completes the request (its Cost) or refuses the flags.
type bucketsCommand struct {
	flags func(fs *flag.FlagSet) func(req *checkapi.Request) error
	// send sends the request: Check, Refund or Reset.
	send func(c *checkclient.Client, ctx context.Context, req checkapi.Request) (checkapi.Response, error)
	// done is the note on stderr after it, for identity id and the request; nil for none.
	done func(id string, req checkapi.Request) string
	// undecided says what is unknown when Redis did not decide, or the function failed
	// (a timeout, a crash).
	undecided string
}

var bucketsCommands = map[string]bucketsCommand{
	"show": {flags: showBucketFlags, send: (*checkclient.Client).Check,
		undecided: "the bucket could not be read"},
	"refund": {flags: refundFlags, send: (*checkclient.Client).Refund, done: refunded,
		undecided: "the refund may or may not have happened: show the bucket before sending it again"},
	"reset": {flags: resetFlags, send: (*checkclient.Client).Reset, done: wasReset,
		undecided: "the reset may or may not have happened: show the bucket, or send it again"},
}

// runBuckets runs the buckets command named by args[0].
func runBuckets(e env, args []string) error {
	c, fs, err := command("buckets", bucketsCommands, args)
	if err != nil {
		return err
	}
	function := nameFlag(fs, "function", "the operator function: a name, name:alias or ARN (default: $"+envCheckFunction+", else the stack's "+outputOperatorName+", else "+defaultCheckFunction+")")
	e.addStack(fs)
	plan := nameFlag(fs, "plan", "the rules of this plan, instead of the identity's own")
	var rules ruleList
	fs.Var(&rules, "rule", "a rule NAME:CAPACITY:RATE (a bucket), NAME:LIMIT:PERIOD[@DAY] (a quota) or NAME:N:concurrent instead of the identity's own, such as a route's (repeatable)")
	asJSON := fs.Bool("json", false, "print JSON")
	complete := c.flags(fs)
	positional, err := parse(fs, args[1:], 1)
	if err != nil {
		return err
	}
	if *plan != "" && len(rules) > 0 {
		return fmt.Errorf("%w: %s: --plan or --rule, not both", errUsage, fs.Name())
	}
	if _, _, err := namedFunction(e, string(*function)); err != nil {
		return err
	}
	s, err := e.settings()
	if err != nil {
		return err
	}
	st := e.stack() // read once, for the table and the function alike
	if *plan != "" && (s.RegistryTable != "" || st.name != "") {
		if err := checkPlan(e, st, string(*plan)); err != nil {
			return err
		}
	}
	t, err := resolveTarget(e, s, st, positional[0])
	if err != nil {
		return err
	}
	req := t.req
	req.Plan = string(*plan)
	req.Rules = append(req.Rules, rules...)
	if err := complete(&req); err != nil {
		return err
	}
	op, err := operatorOf(e, st, string(*function))
	if err != nil {
		return err
	}
	if err := noteInactiveKey(e, s, st, t); err != nil {
		return err
	}
	res, err := c.send(op.client, e.ctx, req)
	var failed *checkclient.FunctionError
	switch {
	case errors.As(err, &failed): // it ran, and may have written before it failed
		return fmt.Errorf("%w: %s", err, c.undecided)
	case err != nil:
		return op.explain(err)
	}
	if res.Reason == checkapi.ReasonUnavailable || res.Reason == checkapi.ReasonDegraded {
		return fmt.Errorf("%s: Redis did not decide (reason %s: it did not answer in time, holds what is not bucketgate's state, or the registry could not be read; the function's log line names the failure): %s",
			op.name, res.Reason, c.undecided)
	}
	id := whose(e, "the buckets of %s are those of %s", t.id, res.Identity)
	if c.done != nil {
		fmt.Fprintln(e.stderr, c.done(id, req))
	}
	if *asJSON {
		return writeJSON(e.stdout, bucketJSONOf(id, res))
	}
	return writeBucket(e.stdout, id, res)
}

// whose returns the identity whose buckets (or usage) the function answered for the
// identity asked: resolved, its answer's, when it says one, else asked. When they
// differ (a key of an account reaches its account's), it says so on stderr: a reset or
// a refund is then the account's, and the figures are every key's together. what is
// "the buckets of %s are those of %s", or as it, for usage.
func whose(e env, what, asked, resolved string) string {
	if resolved == "" || resolved == asked {
		return asked
	}
	fmt.Fprintf(e.stderr, "note: "+what+", which every key of the account shares: what follows is %s's\n", asked, resolved, resolved)
	return resolved
}

// resolveTarget returns the identity that arg (IDENTITY, or - for a key on stdin) names
// (a tenant whose key is an API key bucketgate made by its digest: madeTenant),
// with the IPv6 prefix and key header of settings s (and the registry table of
// REGISTRY_TABLE, else of st: see tenantTarget).
func resolveTarget(e env, s settings.Settings, st *stack, arg string) (target, error) {
	resolver, err := identity.NewResolver(s.APIKeyHeader, s.IPv6Prefix)
	if err != nil {
		return target{}, err
	}
	if arg == fromStdin {
		key, err := readKey(e)
		if err != nil {
			return target{}, err
		}
		return identityTarget(keyID(key)), nil
	}
	t, err := parseTarget(madeTenant(e, arg), sources{resolver: resolver, ipv6Prefix: s.IPv6Prefix})
	if err != nil {
		return t, err
	}
	return tenantTarget(e, s, st, t)
}

// noteInactiveKey says on stderr when t is an API key that the registry table (of
// REGISTRY_TABLE, else of the stack st, once read for the function) does not hold as
// active (an item the functions cannot use included), or whose account it does not hold
// as active: the functions take such a key as unknown and spend its requests' source
// address's buckets (or refuse it), so that nothing spends the key's own, which the
// command then shows, refunds or resets. So for an account (acct:NAME) the table does
// not hold as active, every key of which the functions take as unknown. A revoked or
// expired key whose own buckets its active account spends (keys roll made the account
// from it) is noted as the account's instead, which the command shows. It is a note: a
// table it cannot read gets a line saying what could not be checked, and the command
// goes on; its error is REGISTRY_TABLE's naming another table than the stack's
// (stack.agree), which stops it.
func noteInactiveKey(e env, s settings.Settings, st *stack, t target) error {
	name, isAccount := strings.CutPrefix(t.id, bucketgate.AccountPrefix)
	if !strings.HasPrefix(t.id, bucketgate.KeyPrefix) && !isAccount || s.RegistryTable == "" && !st.read { // a stack is read only for a name the command needs
		return nil
	}
	table, err := openTable(e, "", st)
	if err == nil {
		err = table.open()
	}
	switch {
	case errors.Is(err, errUsage):
		return err
	case err != nil:
		noteUnchecked(e, t.id, table, err)
		return nil
	}
	if isAccount {
		why, err := inactiveAccount(e, table, name)
		switch {
		case err != nil:
			noteUnchecked(e, t.id, table, err)
		case why != "":
			fmt.Fprintf(e.stderr, "note: %s names an account %s: the functions take every key of it as an unknown key, limited as its requests' source address (unknownKeys: ip) or refused (unknownKeys: refuse), so nothing spends these buckets: the addresses' are the callers'\n", t.id, why)
		}
		return nil
	}
	rec, err := table.get(e.ctx, t.id)
	why := ""
	switch {
	case errors.Is(err, errNoItem):
		why = "is not in table " + table.name
	case errors.Is(err, registry.ErrInvalidRecord):
		why = "has an item in table " + table.name + " that is invalid (bucketgate keys show says why)"
	case err != nil:
		noteUnchecked(e, t.id, table, err)
		return nil
	default:
		why = inactive(rec, table.name)
	}
	if why != "" && rec.Account != "" { // a dead key whose own buckets its account spends (keys roll made it from the key) names them
		if acct, err := table.account(e.ctx, rec.Account); err == nil && acct.Buckets == t.id && inactive(acct, table.name) == "" {
			fmt.Fprintf(e.stderr, "note: %s %s, but account %s, which keys roll made from it, spends its buckets, as every key of the account does: what follows is the account's\n", t.id, why, rec.Account)
			return nil
		}
	}
	if why == "" && rec.Account != "" { // an active key of an account the functions cannot use
		switch why, err = inactiveAccount(e, table, rec.Account); {
		case err != nil:
			noteUnchecked(e, "account "+rec.Account+" of "+t.id, table, err)
			return nil
		case why != "":
			why = "is a key of account " + rec.Account + ", " + why
		}
	}
	if why == "" {
		return nil
	}
	fmt.Fprintf(e.stderr, "note: %s %s: the functions take it as an unknown key, limited as its requests' source address (unknownKeys: ip) or refused (unknownKeys: refuse), so nothing spends these buckets: the address's are the caller's\n", t.id, why)
	return nil
}

// noteUnchecked says on stderr that whether what is active could not be checked in
// table (its name, when known), and err, why.
func noteUnchecked(e env, what string, table *keyTable, err error) {
	in := ""
	if table != nil && table.name != "" {
		in = " in table " + table.name
	}
	fmt.Fprintf(e.stderr, "note: could not check that %s is active%s: %v\n", what, in, err)
}

// inactiveAccount returns why the functions cannot use the account called name of
// table, said of the account: "which is not in table ...", "which is revoked in table
// ...", "which expired at ... in table ...", "whose item in table ... is invalid"; ""
// when it is active; an error when the table cannot be read.
func inactiveAccount(e env, table *keyTable, name string) (string, error) {
	acct, err := table.account(e.ctx, name)
	switch {
	case errors.Is(err, errNoItem):
		return "which is not in table " + table.name, nil
	case errors.Is(err, registry.ErrInvalidRecord):
		return "whose item in table " + table.name + " is invalid", nil
	case err != nil:
		return "", err
	}
	if why := inactive(acct, table.name); why != "" {
		return "which " + why, nil
	}
	return "", nil
}

// inactive returns why the functions cannot use rec, an item of the table called
// table: "is revoked in table ...", "expired at ... in table ..."; "" when it is active.
func inactive(rec registry.Record, table string) string {
	switch status(rec) {
	case string(registry.StatusRevoked):
		return "is revoked in table " + table
	case statusExpired:
		return "expired at " + expiry(rec) + " in table " + table
	}
	return ""
}

// tenantTarget returns t, or when t is tenant:<digest> (a tenant as the functions' log
// lines name it) and the registry table (of REGISTRY_TABLE, else st's) holds a
// tenant whose key has that digest and none whose key is those digits, that tenant. A tenant:<digest> that
// names no registered tenant either way stays t, with a note on stderr: the buckets of a
// tenant whose key is those digits; so does any when no table is named, with a note that
// none tells (the functions' own document may register the tenant: not this shell's to
// know). Only the table tells which tenant it names, and so
// whose buckets to ask for: a table that cannot be read is an error saying so (unlike
// noteInactiveKey's, which leaves the answer as it is).
func tenantTarget(e env, s settings.Settings, st *stack, t target) (target, error) {
	digest, ok := strings.CutPrefix(t.id, bucketgate.TenantPrefix)
	if !ok || !bucketgate.ValidDigest(digest) {
		return t, nil
	}
	if s.RegistryTable == "" && st.name == "" {
		fmt.Fprintf(e.stderr, "note: no registry table tells which tenant %s names (set %s or name the stack): these are the buckets of a tenant whose key is those digits; give the tenant's key itself (tenant:KEY)\n",
			t.id, settings.EnvRegistryTable)
		return t, nil
	}
	table, err := openTable(e, "", st)
	if err == nil {
		err = table.open()
	}
	if err != nil {
		return t, err
	}
	id, err := table.tenantItem(e.ctx, t.id)
	switch {
	case err == nil:
		return identityTarget(id), nil
	case !errors.Is(err, errNoItem):
		return t, fmt.Errorf("%s: only table %s tells which tenant it names (a registered tenant whose key has this digest, or else a tenant whose key is these digits), and it could not be read: give the tenant's key itself (tenant:KEY), which needs no table: %w",
			t.id, table.name, err)
	}
	fmt.Fprintf(e.stderr, "note: no registered tenant's key is %s or has it as its digest (as log lines name a tenant): these are the buckets of a tenant whose key is those digits; give an unregistered tenant's key itself\n", digest)
	return t, nil
}

// operatorOf returns the function to invoke (see functionOf, of st; flagValue is the
// --function flag's), with a client of it.
func operatorOf(e env, st *stack, flagValue string) (operator, error) {
	name, err := functionOf(e, flagValue, st)
	if err != nil {
		return operator{}, err
	}
	return newOperator(e.ctx, name)
}

// functionName matches what Lambda's Invoke takes for a function: its name, its ARN or
// a partial ARN (ACCOUNT:function:NAME), each with an optional qualifier (a version,
// $LATEST or an alias).
// Its groups are the function's name, and the region and account of an ARN that names
// them ("" otherwise).
var functionName = regexp.MustCompile(`^(?:(?:arn:aws[a-zA-Z-]*:lambda:(?P<region>[a-z]{2}(?:-[a-z]+)+-\d+):)?(?P<account>\d{12}):function:)?(?P<name>[a-zA-Z0-9_-]{1,64})(?::(?:\$LATEST|[a-zA-Z0-9_-]{1,128}))?$`)

// sameFunction reports whether a and b, each a name, ARN or partial ARN with or without
// a qualifier, name the same function: its name, whatever the version or alias.
func sameFunction(a, b string) bool {
	bare := func(s string) string {
		if m := functionName.FindStringSubmatch(s); m != nil {
			return m[functionName.SubexpIndex("name")]
		}
		return s
	}
	return bare(a) == bare(b)
}

// maxFunctionName is the longest function name, ARN or partial ARN that Invoke takes.
const maxFunctionName = 170

// namedFunction returns the function that the --function flag's value (flagValue), else
// CHECK_FUNCTION, names, and which of them named it; "" for neither. A name that is no
// function's is an error (a usage error from --function): the commands check it before
// any call.
func namedFunction(e env, flagValue string) (name, from string, err error) {
	name, from = flagValue, "--function"
	if name == "" {
		name, from = e.getenv(envCheckFunction), envCheckFunction
	}
	if name != "" && (len(name) > maxFunctionName || !functionName.MatchString(name)) {
		err = fmt.Errorf("function %q (%s) is no function's name or ARN: want a name (letters, digits, '-' or '_', at most 64), a function's ARN or partial ARN (ACCOUNT:function:NAME), each with an optional :VERSION or :ALIAS", name, from)
		if from == "--function" {
			err = fmt.Errorf("%w: %w", errUsage, err)
		}
	}
	return name, from, err
}

// functionOf returns the function to invoke: the --function flag's value, else
// CHECK_FUNCTION's (which must be st's, when st is named: stack.agree), else the operator function the outputs of st name (the check
// function of a stack without one, which serves every operation), else
// defaultCheckFunction.
func functionOf(e env, flagValue string, st *stack) (string, error) {
	name, from, err := namedFunction(e, flagValue)
	switch {
	case err != nil:
		return "", err
	case name != "" && from == envCheckFunction:
		same := func(a, b string) bool { return sameFunction(a, b) && st.holds(a) }
		return name, st.agree(e.ctx, "function", from, name, "--function", same, outputOperatorName, outputCheckName)
	case name != "":
		st.passOver(e, "check function "+name, from)
		return name, nil
	case st.name != "":
		return st.output(e.ctx, "--function", envCheckFunction, outputOperatorName, outputCheckName)
	}
	return defaultCheckFunction, nil
}

func showBucketFlags(*flag.FlagSet) func(*checkapi.Request) error {
	return func(req *checkapi.Request) error {
		req.Cost = checkapi.Cost(0) // a peek
		return nil
	}
}

func refundFlags(fs *flag.FlagSet) func(*checkapi.Request) error {
	cost := countFlag(fs, "cost", "the tokens to give back to every rule (required, 1 or more)")
	return func(req *checkapi.Request) error {
		switch {
		case !isSet(fs, "cost"):
			return fmt.Errorf("%w: buckets refund: --cost is required: the tokens to give back to every rule", errUsage)
		case *cost < 1:
			return fmt.Errorf("%w: buckets refund: --cost %d: want a whole number of tokens, 1 or more", errUsage, *cost)
		}
		req.Cost = checkapi.Cost(*cost)
		return nil
	}
}

func resetFlags(fs *flag.FlagSet) func(*checkapi.Request) error {
	fs.String("cost", "", refusedFlag+"a reset takes no cost")
	return func(*checkapi.Request) error {
		if isSet(fs, "cost") {
			return fmt.Errorf("%w: buckets reset: takes no --cost: a reset makes every rule full, whatever it held", errUsage)
		}
		return nil
	}
}

// isSet reports whether the command line set the flag called name.
func isSet(fs *flag.FlagSet, name string) bool {
	set := false
	fs.Visit(func(f *flag.Flag) { set = set || f.Name == name })
	return set
}

func refunded(id string, req checkapi.Request) string {
	return fmt.Sprintf("gave %d token(s) back to every rule of %s, never above capacity", *req.Cost, id)
}

func wasReset(id string, _ checkapi.Request) string {
	return fmt.Sprintf("reset %s: every rule is full", id)
}

// checkPlan reports a plan name that the registry table's configuration document (of
// REGISTRY_TABLE, else of st's output) does not have. While the table holds none, the
// check function's own document decides, which this machine cannot know: it says so
// itself.
func checkPlan(e env, st *stack, name string) error {
	t, err := openTable(e, "", st)
	if err != nil {
		return err
	}
	cfg, version, err := t.tableConfig(e.ctx)
	if err != nil || cfg == nil {
		return err
	}
	if _, ok := cfg.Plan(name); !ok {
		return fmt.Errorf("unknown plan %q: not in version %d of the configuration document of table %s (configured: %s)",
			name, version, t.name, strings.Join(slices.Sorted(slices.Values(cfg.Plans())), ", "))
	}
	return nil
}
