package main

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"math/big"
	"reflect"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/bucketgate/bucketgate"
	"github.com/bucketgate/bucketgate/internal/config"
	"github.com/bucketgate/bucketgate/internal/registry"
)

// keyTable is the registry table as the CLI writes it: every record is checked against
// the configuration before it is written, as strictly as the functions read it.
type keyTable struct {
	// open finds the table's name, if it is not known yet, and makes db, on the first
	// call; every call returns its error.
	open func() error
	db   *dynamodb.Client
	name string
	// flag is the command's flag that names the table ("--table"), "" for a command
	// without one (buckets, usage).
	flag string
	// env loads the functions' configuration document, and says from where: the plans
	// while the table holds no document of its own. It is the stack's parameter
	// RateLimitConfig when the table is the stack's output, else this shell's
	// RATE_LIMIT_CONFIG, RATE_LIMIT_CONFIG_FILE or the built-in one.
	env func() (*config.Config, string, error)
	// envKnown reports that env's document is the functions' own, once env has loaded
	// it: the stack's parameter, not a document of this shell.
	envKnown bool
	// loaded is the configuration records are checked against, once plans has read it,
	// and from where it comes.
	loaded *config.Config
	from   string
	// version is the version of the table's document loaded is; 0 for the environment's.
	version int64
	// active names the account this command found active (activeAccount) or made
	// (keys roll), before writing a key of it: confirm says of that key that the account
	// is revoked or expired once it is written.
	active string
}

// Condition expressions of the writes: a new item, or one that is there.
const (
	isNew    = "attribute_not_exists(#id)"
	isThere  = "attribute_exists(#id)"
	statusIs = "SET #status = :status"
)

// create creates the table.
func (t *keyTable) create(ctx context.Context) error {
	if err := t.open(); err != nil {
		return err
	}
	return t.explain(registry.CreateTable(ctx, t.db, t.name), "")
}

// put writes rec as a new item, after checking it as the functions would read it: an
// item of its id that the table holds already, whatever its attributes, is an error
// wrapping errExists, and nothing is written.
func (t *keyTable) put(ctx context.Context, rec registry.Record) error {
	if err := t.check(ctx, rec); err != nil {
		return err
	}
	switch _, err := t.read(ctx, rec.ID); {
	case err == nil:
		return fmt.Errorf("%s %w %s", rec.ID, errExists, t.name)
	case !errors.Is(err, errNoItem):
		return err
	}
	if err := t.putNew(ctx, rec.ID, rec.Item()); err != nil {
		return err
	}
	return t.confirm(ctx, rec)
}

// putMade is put of rec, the item of a key that newKey has just made, which no item of
// the table can hold: it reads none first. The caller confirms it once the key is shown.
func (t *keyTable) putMade(ctx context.Context, rec registry.Record) error {
	if err := t.check(ctx, rec); err != nil {
		return err
	}
	return t.putNew(ctx, rec.ID, rec.Item())
}

// putNew writes item, the item of id, on the condition that the table holds none: its
// error then wraps errExists, unless the table holds item itself (holds).
func (t *keyTable) putNew(ctx context.Context, id string, item map[string]types.AttributeValue) error {
	if err := t.open(); err != nil {
		return err
	}
	_, err := t.db.PutItem(ctx, &dynamodb.PutItemInput{
		TableName:                aws.String(t.name),
		Item:                     item,
		ConditionExpression:      aws.String(isNew),
		ExpressionAttributeNames: map[string]string{"#id": registry.KeyAttribute},
	})
	var exists *types.ConditionalCheckFailedException
	switch {
	case errors.As(err, &exists) && t.holds(ctx, id, item): // written, its answer lost
		return nil
	case exists != nil:
		return fmt.Errorf("%s %w %s", id, errExists, t.name)
	}
	return t.explain(err, id)
}

// holds reports whether the table holds item as the item of id, attribute for attribute
// (numbers by their value). A conditional write whose condition failed was written when
// it does: the SDK sent it again after its first answer was lost (a connection reset, a
// timeout), and that first attempt wrote it.
func (t *keyTable) holds(ctx context.Context, id string, item map[string]types.AttributeValue) bool {
	there, err := t.read(ctx, id)
	return err == nil && maps.EqualFunc(there, item, sameValue)
}

// sameValue reports whether a and b are the same attribute value: numbers by their
// value, as DynamoDB stores them, lists and maps member by member.
func sameValue(a, b types.AttributeValue) bool {
	switch a := a.(type) {
	case *types.AttributeValueMemberN:
		b, ok := b.(*types.AttributeValueMemberN)
		if !ok {
			return false
		}
		x, xok := new(big.Rat).SetString(a.Value)
		y, yok := new(big.Rat).SetString(b.Value)
		return xok && yok && x.Cmp(y) == 0
	case *types.AttributeValueMemberL:
		b, ok := b.(*types.AttributeValueMemberL)
		return ok && slices.EqualFunc(a.Value, b.Value, sameValue)
	case *types.AttributeValueMemberM:
		b, ok := b.(*types.AttributeValueMemberM)
		return ok && maps.EqualFunc(a.Value, b.Value, sameValue)
	}
	return reflect.DeepEqual(a, b)
}

// errExists is wrapped by putNew's error for an item the table holds already.
var errExists = errors.New("is already in table")

// revoke marks the item of id revoked, whatever else it holds.
func (t *keyTable) revoke(ctx context.Context, id string) error {
	if err := t.open(); err != nil {
		return err
	}
	_, err := t.db.UpdateItem(ctx, &dynamodb.UpdateItemInput{
		TableName:                 aws.String(t.name),
		Key:                       key(id),
		UpdateExpression:          aws.String(statusIs),
		ConditionExpression:       aws.String(isThere),
		ExpressionAttributeNames:  map[string]string{"#id": registry.KeyAttribute, "#status": "status"},
		ExpressionAttributeValues: map[string]types.AttributeValue{":status": &types.AttributeValueMemberS{Value: string(registry.StatusRevoked)}},
	})
	return t.explain(err, id)
}

// change reads the item of id, applies edit, checks the result as the functions would
// read it and writes it back, on the condition that the item is still the one read: a
// write in between (a revocation by someone else) is kept, and change fails.
func (t *keyTable) change(ctx context.Context, id string, edit func(*registry.Record) error) error {
	item, err := t.read(ctx, id)
	if err != nil {
		return err
	}
	return t.changeItem(ctx, id, item, edit)
}

// changeItem is change of item, the item of id as read.
func (t *keyTable) changeItem(ctx context.Context, id string, item map[string]types.AttributeValue, edit func(*registry.Record) error) error {
	rec, err := registry.DecodeItem(item)
	if err != nil {
		return err
	}
	if err := edit(&rec); err != nil {
		return err
	}
	if err := t.check(ctx, rec); err != nil {
		return err
	}
	squeezed, err := t.squeezedKeys(ctx, item, rec)
	if err != nil {
		return err
	}
	if len(squeezed) > 0 {
		return fmt.Errorf("%s: the change would leave keys of the account without room for their own rules (the functions would treat them as unknown keys; bucketgate keys clear-overrides makes room); nothing written:\n%s",
			rec.ID, nameBroken(squeezed))
	}
	cond, names, values := unchanged(item, registry.Attributes())
	next := rec.Item()
	_, err = t.db.PutItem(ctx, &dynamodb.PutItemInput{
		TableName:                 aws.String(t.name),
		Item:                      next,
		ConditionExpression:       aws.String(cond),
		ExpressionAttributeNames:  names,
		ExpressionAttributeValues: values,
	})
	var changed *types.ConditionalCheckFailedException
	switch {
	case errors.As(err, &changed) && t.holds(ctx, id, next): // written, its answer lost
	case changed != nil:
		return fmt.Errorf("%s %w (in table %s): nothing written; run it again", id, errChanged, t.name)
	case err != nil:
		return t.explain(err, id)
	}
	if err := t.recheckKeysOf(ctx, item, rec); err != nil {
		return err
	}
	return t.confirm(ctx, rec)
}

// recheckKeysOf reads the keys of rec's account again once the change of item to rec is
// written: a key written between squeezedKeys' scan and the write (keys create --account,
// or keys override, checked by its command against the account as item was) may have
// no room for its own rules under rec, and is named, as nothing else would say so.
func (t *keyTable) recheckKeysOf(ctx context.Context, item map[string]types.AttributeValue, rec registry.Record) error {
	late, err := t.squeezedKeys(ctx, item, rec)
	switch {
	case err != nil:
		return fmt.Errorf("%s %w, but its keys could not be read again for keys written meanwhile (bucketgate accounts show lists them): %w", rec.ID, errWritten, err)
	case len(late) > 0:
		return fmt.Errorf("%s %w, but these keys of the account, written while this command ran, have no room for their own rules beside it and count as unknown (bucketgate keys clear-overrides makes room):\n%s", rec.ID, errWritten, nameBroken(late))
	}
	return nil
}

// confirm checks rec, just written after check, again when the table's configuration
// document in force is no longer the one check read, or when rec is a key of an account
// (check reads the account again): a config put or rollback, or an accounts set-plan or
// override, between them scanned the table before rec was written, so only this command
// can say that what it wrote leaves rec without a usable plan, or that a document
// written meanwhile changes which requests rec's own rules limit (config put refuses
// such a document for the records its scan finds); an accounts revoke or expire between
// them of the account the command found active leaves rec unknown to the functions
// (errKeysUnknown). Its error says that rec is written.
func (t *keyTable) confirm(ctx context.Context, rec registry.Record) error {
	cfg, version, err := t.tableConfig(ctx)
	if u := (unloadable{}); err != nil && !errors.As(err, &u) {
		show := "keys show " + rec.ID
		if name, ok := strings.CutPrefix(rec.ID, registry.AccountItemPrefix); ok {
			show = "accounts show " + name
		}
		return fmt.Errorf("%s %w, but reading the configuration document again, to check it against one written while this command ran, failed (bucketgate %s checks it): %w", rec.ID, errWritten, show, err)
	}
	moved := err == nil && cfg != nil && version != t.version // a document that does not load is not in force
	var what, rescoped []string
	if moved {
		if t.version != 0 || t.envKnown { // the functions' own, not the shell's: what rec's own rules reach under it is theirs
			rescoped = reachOf(rec, t.loaded, cfg, time.Now())
		}
		t.loaded, t.version, t.from = cfg, version, fmt.Sprintf("version %d of the table's configuration document", version)
		what = append(what, fmt.Sprintf("version %d of the configuration document", version))
	}
	var acct registry.Record
	var acctErr error
	if rec.Account != "" { // read again, once: its status, and checkIn's
		what = append(what, fmt.Sprintf("a change of account %s (bucketgate accounts set-plan or override)", rec.Account))
		acct, acctErr = t.account(ctx, rec.Account)
		var bad *registry.RecordError
		switch {
		case acctErr != nil && !errors.Is(acctErr, errNoItem) && !errors.As(acctErr, &bad): // gone or unreadable: checkIn says so
			return fmt.Errorf("%s %w, but reading account %s again, to check the key against what was written while this command ran, failed (run bucketgate keys show %s): %w", rec.ID, errWritten, rec.Account, rec.ID, acctErr)
		case acctErr == nil && rec.Account == t.active && !acct.Active(time.Now()):
			return fmt.Errorf("%s %w, but account %s is %s, written while this command ran: %w", rec.ID, errWritten, rec.Account, status(acct), errKeysUnknown)
		}
	}
	if len(what) == 0 {
		return nil
	}
	if err := t.checkIn(ctx, rec, func(context.Context, string) (registry.Record, error) { return acct, acctErr }); err != nil {
		return fmt.Errorf("%s %w, but %s, written while this command ran, leaves it without a usable plan: the functions treat it as unknown until it is mended (bucketgate keys set-plan, keys clear-overrides, accounts set-plan or config put): %w", rec.ID, errWritten, strings.Join(what, " or "), err)
	}
	if len(rescoped) > 0 {
		return fmt.Errorf("%s %w, but version %d of the configuration document, written while this command ran, changes which requests its own rules limit (bucketgate keys override or clear-overrides, or accounts override or clear-overrides, changes them):\n%s", rec.ID, errWritten, version, nameBroken(rescoped))
	}
	return nil
}

// errKeysUnknown is wrapped by confirm's error for a key of an account that was revoked
// or expired after the command checked it.
var errKeysUnknown = errors.New("the functions treat every key of it as unknown, this one too")

// errWritten is wrapped by the error of a change or a put whose item is written, and
// that found something written meanwhile wrong with it (confirm, recheckKeysOf).
var errWritten = errors.New("is written")

// errChanged is wrapped by changeItem's error for an item changed since it was read.
var errChanged = errors.New("changed while this command ran")

// unchanged returns the condition that an item is still item: every attribute of attrs
// that item holds equal, every other one absent.
func unchanged(item map[string]types.AttributeValue, attrs []string) (string, map[string]string, map[string]types.AttributeValue) {
	c := condition{names: map[string]string{}, values: map[string]types.AttributeValue{}}
	for _, attr := range attrs {
		if v, ok := item[attr]; ok {
			c.equal(c.name(attr), v)
		} else {
			c.terms = append(c.terms, "attribute_not_exists("+c.name(attr)+")")
		}
	}
	return strings.Join(c.terms, " AND "), c.names, c.values
}

// condition is a condition expression in the making: its terms, joined by AND, and the
// placeholders of the names and values they use.
type condition struct {
	terms  []string
	names  map[string]string // placeholder -> attribute name
	values map[string]types.AttributeValue
}

// equal adds the terms saying that the value at path is v: a list or a map by its size
// and member by member, as dynalite compares documents (DynamoDB compares them whole
// too).
func (c *condition) equal(path string, v types.AttributeValue) {
	switch v := v.(type) {
	case *types.AttributeValueMemberL:
		c.terms = append(c.terms, "size("+path+") = "+c.value(&types.AttributeValueMemberN{Value: strconv.Itoa(len(v.Value))}))
		for i, e := range v.Value {
			c.equal(path+"["+strconv.Itoa(i)+"]", e)
		}
	case *types.AttributeValueMemberM:
		c.terms = append(c.terms, "size("+path+") = "+c.value(&types.AttributeValueMemberN{Value: strconv.Itoa(len(v.Value))}))
		for _, k := range slices.Sorted(maps.Keys(v.Value)) {
			c.equal(path+"."+c.name(k), v.Value[k])
		}
	default:
		c.terms = append(c.terms, path+" = "+c.value(v))
	}
}

// name returns the placeholder of an attribute name.
func (c *condition) name(n string) string {
	for p, m := range c.names {
		if m == n {
			return p
		}
	}
	p := "#n" + strconv.Itoa(len(c.names))
	c.names[p] = n
	return p
}

// value returns a new placeholder for v.
func (c *condition) value(v types.AttributeValue) string {
	p := ":v" + strconv.Itoa(len(c.values))
	c.values[p] = v
	return p
}

// check returns why the functions could not use rec, naming the attribute: a key of an
// account is checked with its account, which must be in the table.
func (t *keyTable) check(ctx context.Context, rec registry.Record) error {
	return t.checkIn(ctx, rec, t.account)
}

// checkIn is check, with account the read of the record of rec's account, by its name.
func (t *keyTable) checkIn(ctx context.Context, rec registry.Record, account func(context.Context, string) (registry.Record, error)) error {
	if _, err := registry.DecodeItem(rec.Item()); err != nil {
		return notWritten(rec.ID, err)
	}
	plans, err := t.plans(ctx)
	if err != nil {
		return err
	}
	if rec.Account != "" {
		acct, err := account(ctx, rec.Account)
		if err != nil {
			return err
		}
		_, err = registry.ResolveMember(rec, acct, plans)
		return notWritten(rec.ID, err)
	}
	if _, err := rec.Resolve(plans); err != nil {
		err = notWritten(rec.ID, err)
		if strings.Contains(err.Error(), "unknown plan") {
			return fmt.Errorf("%w (configured: %s; from %s)", err, strings.Join(slices.Sorted(slices.Values(plans.Plans())), ", "), t.from)
		}
		return err
	}
	return nil
}

// notWritten returns err, or when it is a *registry.RecordError of the item id itself,
// the same error said of an item the command does not write: "invalid registry item"
// would send the operator looking for a stored item that is broken.
func notWritten(id string, err error) error {
	var bad *registry.RecordError
	if errors.As(err, &bad) && bad.ID == id {
		return fmt.Errorf("%s not written: attribute %s: %w", id, bad.Attribute, bad.Err)
	}
	return err
}

// squeezedKeys returns what rec, the record of an account as the change of item would
// write it, leaves without room for their own rules: the active keys of the account that
// the functions could use before, and whose own rules rec's plan or rules leave no room
// for (config put refuses a document that would, as keys create refuses such a key), a
// line each; when the change makes an expired account active again, every active key of
// it without room (config put passes over the keys of an account that is not active). A
// change of neither the plan, the rules nor whether the account is active leaves none.
func (t *keyTable) squeezedKeys(ctx context.Context, item map[string]types.AttributeValue, rec registry.Record) ([]string, error) {
	name, ok := strings.CutPrefix(rec.ID, registry.AccountItemPrefix)
	if !ok {
		return nil, nil
	}
	now := time.Now()
	was, err := registry.DecodeItem(item)
	back := err == nil && !was.Active(now) && rec.Active(now) // its keys work again: config put passed them over
	if err != nil || !back && was.Plan == rec.Plan && slices.Equal(was.Rules, rec.Rules) {
		return nil, nil
	}
	keys, err := t.keysOf(ctx, name)
	if err != nil {
		return nil, err
	}
	plans, err := t.plans(ctx)
	if err != nil {
		return nil, err
	}
	var lines []string
	for _, k := range keys {
		if !k.Active(now) {
			continue
		}
		if _, err := registry.ResolveMember(k, was, plans); err != nil && !back {
			continue // unusable already: not this change's doing
		}
		if _, err := registry.ResolveMember(k, rec, plans); err != nil {
			var re *registry.RecordError
			if errors.As(err, &re) {
				err = fmt.Errorf("%s: %w", re.Attribute, re.Err)
			}
			lines = append(lines, fmt.Sprintf("%s (plan %s): %v", k.ID, rec.Plan, err))
		}
	}
	return lines, nil
}

// replanned returns what moving rec to the plan called plan would change in the reach
// of its own rules, as rescoped says it of a document: nothing when rec's plan or plan
// is unusable (check says so). An expired rec counts as active: an expire that makes it
// active again compares only the documents written meanwhile (revived), on the plan it
// has then.
func (t *keyTable) replanned(ctx context.Context, rec registry.Record, plan string) ([]string, error) {
	if rec.Status != registry.StatusRevoked {
		rec.ExpiresAt = time.Time{}
	}
	if !reaches(rec, time.Now()) {
		return nil, nil
	}
	cfg, err := t.plans(ctx)
	if err != nil {
		return nil, err
	}
	old, okOld := cfg.Plan(rec.Plan)
	p, ok := cfg.Plan(plan)
	if !okOld || !ok {
		return nil, nil
	}
	return reachLines(fmt.Sprintf("%s (plan %s, was %s)", oneLine(rec.ID), plan, rec.Plan), rec, cfg, old, cfg, p), nil
}

// revived returns what the documents written while rec was expired changed in the
// reach of its own rules (config put passes over a record that is not active), when
// next, rec with another expiry, makes it active again: reachOf between the copy of the
// version in force when rec expired (the newest written before its expiresAt: the times
// are whole seconds, and a copy written in the second rec expired came after it; the
// functions' own, when none was written by then and it is known: keyTable.envKnown) and
// the table's document in force. Nothing when next leaves it as active as it was, or
// when the table holds no document. When the copies (config history lists them) do not
// say which document was in force then, or it does not load, unchecked says why, for a
// warning: the change is not refused.
func (t *keyTable) revived(ctx context.Context, rec, next registry.Record) (rescoped []string, unchecked string, err error) {
	now := time.Now()
	if rec.Active(now) || !reaches(next, now) {
		return nil, "", nil
	}
	cfg, err := t.plans(ctx)
	if err != nil || t.version == 0 {
		return nil, "", err
	}
	h, err := t.scan(ctx, false)
	if err != nil {
		return nil, "", err
	}
	i := slices.IndexFunc(h.versions, func(sv storedVersion) bool {
		return sv.err == nil && !sv.s.UpdatedAt.IsZero() && sv.s.UpdatedAt.Before(rec.ExpiresAt)
	})
	var was *config.Config
	switch {
	case i >= 0 && h.versions[i].s.Version == t.version:
		return nil, "", nil
	case i >= 0:
		if was, err = h.versions[i].s.Load(); err != nil {
			return nil, fmt.Sprintf("version %d, in force when it expired, does not load: %v", h.versions[i].s.Version, err), nil
		}
	case len(h.versions) == 0 || h.versions[len(h.versions)-1].s.Version != 1 ||
		slices.ContainsFunc(h.versions, func(sv storedVersion) bool { return sv.err != nil || sv.s.UpdatedAt.IsZero() }):
		return nil, "the copies of the configuration's versions do not say which was in force when it expired (one is missing, cannot be read, or has no updatedAt: bucketgate config history)", nil
	default: // none written by then: the functions' own was in force, known when it is the stack's
		if was, _, err = t.env(); err != nil || !t.envKnown {
			return nil, "the table held no document when it expired, and the functions' own is not known here (name the stack with --stack: its parameter " + paramConfig + " is)", nil
		}
	}
	return reachOf(next, was, cfg, now), "", nil
}

// account reads the record of the account called name (strongly consistent); the error
// of one the table does not hold says how to create it.
func (t *keyTable) account(ctx context.Context, name string) (registry.Record, error) {
	rec, err := t.get(ctx, registry.AccountItemPrefix+name)
	if errors.Is(err, errNoItem) {
		return rec, fmt.Errorf("%w: account %s is not in table %s (bucketgate accounts create %s --plan NAME creates it)", errNoItem, name, t.name, name)
	}
	return rec, err
}

// plans returns the configuration that records are checked against, as the functions
// load it: the table's document (tableConfig) when it holds one, never a document of
// this shell; else the functions' own (env), which they load while the table holds none.
func (t *keyTable) plans(ctx context.Context) (*config.Config, error) {
	if t.loaded != nil {
		return t.loaded, nil
	}
	cfg, version, err := t.tableConfig(ctx)
	switch {
	case err != nil:
		return nil, err
	case cfg == nil:
		if cfg, t.from, err = t.env(); err != nil {
			return nil, unloadable{err}
		}
	default:
		t.from = fmt.Sprintf("version %d of the table's configuration document", version)
	}
	t.loaded, t.version = cfg, version
	return cfg, nil
}

// tableConfig returns the table's configuration document in force and its version,
// or nil when the table holds none. One that does not load is an error: the functions
// keep their last good document, which this machine cannot know.
func (t *keyTable) tableConfig(ctx context.Context) (*config.Config, int64, error) {
	cur, _, err := t.readConfig(ctx, registry.ConfigID)
	var bad *registry.RecordError
	switch {
	case errors.Is(err, errNoItem):
		return nil, 0, nil
	case errors.As(err, &bad):
		return nil, 0, unloadable{fmt.Errorf("the configuration document of table %s cannot be read: %w: fix it with bucketgate config put or rollback", t.name, err)}
	case err != nil:
		return nil, 0, err
	}
	cfg, err := cur.Load()
	if err != nil {
		return nil, 0, unloadable{fmt.Errorf("%w: the functions keep their last good document; fix it with bucketgate config put or rollback", err)}
	}
	return cfg, cur.Version, nil
}

// unloadable is the error of a configuration document that does not load (the table's,
// or the functions' own while the table holds none), not a failure to read it.
type unloadable struct{ error }

func (u unloadable) Unwrap() error { return u.error }

// shownPlans returns the plans a list or a show checks its items against (plans);
// unchecked is why a document that does not load leaves them unchecked (the items are
// worth printing all the same), err any other failure, such as AWS's to read it.
func (t *keyTable) shownPlans(ctx context.Context) (cfg *config.Config, unchecked, err error) {
	cfg, err = t.plans(ctx)
	if u := (unloadable{}); errors.As(err, &u) {
		return nil, err, nil
	}
	return cfg, nil, err
}

// get reads the record of id (strongly consistent).
func (t *keyTable) get(ctx context.Context, id string) (registry.Record, error) {
	item, err := t.read(ctx, id)
	if err != nil {
		return registry.Record{}, err
	}
	return registry.DecodeItem(item)
}

// tenantItem returns id, the id of an item, or when id is tenant:<digest> (a tenant as
// the functions' log lines name it: bucketgate.LogForm) and the table holds no item of
// that id, the id of the tenant whose key has that digest, which it scans the table for
// (never one whose key is or holds an API key bucketgate made, which no function looks up, and
// whose key would be printed or sent: keys list notes it); an error wrapping errNoItem
// when there is none.
func (t *keyTable) tenantItem(ctx context.Context, id string) (string, error) {
	digest, ok := strings.CutPrefix(id, bucketgate.TenantPrefix)
	if !ok || !bucketgate.ValidDigest(digest) {
		return id, nil
	}
	if _, err := t.read(ctx, id); !errors.Is(err, errNoItem) {
		return id, err // the tenant whose key is those digits, or the table's failure
	}
	p := dynamodb.NewScanPaginator(t.db, &dynamodb.ScanInput{TableName: aws.String(t.name), ConsistentRead: aws.Bool(true),
		ProjectionExpression: aws.String("#id"), ExpressionAttributeNames: map[string]string{"#id": registry.KeyAttribute}})
	for p.HasMorePages() {
		page, err := p.NextPage(ctx)
		if err != nil {
			return "", t.explain(err, "")
		}
		for _, it := range page.Items {
			other, _ := it[registry.KeyAttribute].(*types.AttributeValueMemberS)
			if other == nil || bucketgate.LogForm(other.Value) != id {
				continue
			}
			if _, made := madeKeyDigest(other.Value); !made {
				return other.Value, nil
			}
		}
	}
	return "", fmt.Errorf("%w: %s is not in table %s, nor the digest of a tenant's key in it", errNoItem, id, t.name)
}

// read reads the item of id (strongly consistent), as the table holds it.
func (t *keyTable) read(ctx context.Context, id string) (map[string]types.AttributeValue, error) {
	if err := t.open(); err != nil {
		return nil, err
	}
	out, err := t.db.GetItem(ctx, &dynamodb.GetItemInput{TableName: aws.String(t.name), Key: key(id), ConsistentRead: aws.Bool(true)})
	if err != nil {
		return nil, t.explain(err, id)
	}
	if len(out.Item) == 0 {
		return nil, fmt.Errorf("%w: %s is not in table %s", errNoItem, id, t.name)
	}
	return out.Item, nil
}

// listed is one item of a list: its record, the plan it is decided under (its
// account's, for a key of an account), or why the functions cannot use it; for a key of
// an account that is not active, the account's status. unread is an item that cannot be
// read at all: rec holds its id (and a key's account) alone, err why.
type listed struct {
	rec           registry.Record
	plan          string
	accountStatus string
	err           error
	unread        bool
	// madeKey is, for a tenant whose key is or holds an API key bucketgate made, its key's digest:
	// rec.ID is its shownID.
	madeKey string
}

// status is the status of it as printed: statusUnreadable for an item that cannot be
// read, whose status is not known, else its record's.
func (it listed) status() string {
	if it.unread {
		return statusUnreadable
	}
	return status(it.rec)
}

// list reads every item of the identities (keys and tenants) or the accounts, in the
// order of their ids: a key of an account is checked with its account. unchecked is why
// they could not be checked against the plans (a configuration document in the table
// that does not load): they are listed all the same, the error and status of each as
// far as the table alone tells.
func (t *keyTable) list(ctx context.Context, accounts bool) (items []listed, unchecked, err error) {
	if err := t.open(); err != nil {
		return nil, nil, err
	}
	found := map[string]registry.Record{} // the accounts, by name
	unreadable := map[string]error{}      // the accounts whose items cannot be read, by name
	p := dynamodb.NewScanPaginator(t.db, &dynamodb.ScanInput{TableName: aws.String(t.name), ConsistentRead: aws.Bool(true)})
	for p.HasMorePages() {
		page, err := p.NextPage(ctx)
		if err != nil {
			return nil, nil, t.explain(err, "")
		}
		for _, it := range page.Items {
			id, _ := it[registry.KeyAttribute].(*types.AttributeValueMemberS)
			if id != nil && registry.IsConfigID(id.Value) {
				continue // the configuration document, not an identity: bucketgate config
			}
			rec, err := registry.DecodeItem(it)
			name, isAccount := strings.CutPrefix(rec.ID, registry.AccountItemPrefix)
			switch {
			case isAccount && err == nil:
				found[name] = rec
			case isAccount:
				unreadable[name] = err
			}
			if isAccount == accounts {
				madeKey, _ := madeKeyDigest(rec.ID)
				rec.ID = shownID(rec.ID)
				if bad := (*registry.RecordError)(nil); errors.As(err, &bad) {
					bad.ID = rec.ID // it names the item by its id, which may hold a key
				}
				items = append(items, listed{rec: rec, plan: rec.Plan, err: err, unread: err != nil, madeKey: madeKey})
			}
		}
	}
	var plans *config.Config
	if len(items) > 0 {
		if plans, unchecked, err = t.shownPlans(ctx); err != nil {
			return nil, nil, err
		}
	}
	for i := range items {
		var acct *registry.Record
		if a, ok := found[items[i].rec.Account]; ok {
			acct = &a
		} else if err, ok := unreadable[items[i].rec.Account]; ok && items[i].err == nil {
			items[i].err = accountUnreadable(items[i].rec, err)
		}
		assess(&items[i], acct, plans)
	}
	slices.SortFunc(items, func(a, b listed) int { return strings.Compare(a.rec.ID, b.rec.ID) })
	return items, unchecked, nil
}

// assess completes it, the listed record of an identity: for a key of an account, the
// account's plan and, when it is not active, its status, from acct (nil when the table
// does not hold the account or it cannot be read: no plan, the plan its own item names
// is ignored); why the functions cannot use it under plans (nil: not checked); and
// the shadow mark of each own rule that is shadow under plans (shadowIn), which limits
// nothing.
func assess(it *listed, acct *registry.Record, plans *config.Config) {
	if plans != nil && !it.unread {
		if names := shadowIn(plans, it.rec, it.rec.Rules); len(names) > 0 {
			it.rec.Rules = slices.Clone(it.rec.Rules)
			for i, r := range it.rec.Rules {
				it.rec.Rules[i].Shadow = slices.Contains(names, r.Name)
			}
		}
	}
	if it.rec.Account != "" {
		it.plan = ""
		if acct != nil {
			it.plan = acct.Plan
		}
	}
	switch {
	case it.err != nil:
	case it.rec.Account == "":
		if plans != nil {
			_, it.err = it.rec.Resolve(plans)
		}
	case acct == nil:
		it.err = fmt.Errorf("attribute account: account %s is not in the table", it.rec.Account)
	default:
		if s := status(*acct); s != string(registry.StatusActive) {
			it.accountStatus = s
		}
		if plans != nil {
			_, it.err = registry.ResolveMember(it.rec, *acct, plans)
		}
	}
}

// accountUnreadable is why the functions cannot use key, a record of a key of an
// account, whose account's item cannot be read (err): an error about key's attribute
// account, saying what is wrong with the account's item.
func accountUnreadable(key registry.Record, err error) error {
	return &registry.RecordError{ID: key.ID, Attribute: "account", Err: fmt.Errorf("account %s cannot be read: %v", key.Account, err)}
}

// key is the primary key of the item of id.
func key(id string) map[string]types.AttributeValue {
	return map[string]types.AttributeValue{registry.KeyAttribute: &types.AttributeValueMemberS{Value: id}}
}

// explain turns DynamoDB's errors about the table or the item of id into ones that say
// what to do.
func (t *keyTable) explain(err error, id string) error {
	var (
		missing *types.ResourceNotFoundException
		inUse   *types.ResourceInUseException
		absent  *types.ConditionalCheckFailedException
	)
	switch {
	case err == nil:
		return nil
	case errors.As(err, &missing):
		return fmt.Errorf("table %s does not exist%s: check the region (AWS_REGION or the profile's) and the table's name (the stack's output %s), or create it: bucketgate keys init (local use) or deploy template.yaml: %w",
			t.name, inRegion(t.db.Options().Region), outputTable, err)
	case errors.As(err, &inUse):
		return fmt.Errorf("table %s already exists: %w", t.name, err)
	case errors.As(err, &absent):
		return fmt.Errorf("%w: %s is not in table %s", errNoItem, id, t.name)
	}
	if r := refusal(err, "table "+t.name, "use table "+t.name, ""); r != nil {
		return r
	}
	return fmt.Errorf("table %s: %w", t.name, err)
}
