package main

import (
	"cmp"
	"context"
	"errors"
	"fmt"
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

// readConfig reads the configuration item id (registry.ConfigID or a VersionID),
// strongly consistent. The error wraps errNoItem when the table holds none, and is a
// *registry.RecordError when the item cannot be read; raw is the item as the table
// holds it, even then.
func (t *keyTable) readConfig(ctx context.Context, id string) (s registry.StoredConfig, raw map[string]types.AttributeValue, err error) {
	raw, err = t.read(ctx, id)
	if err != nil {
		return s, nil, err
	}
	s, err = registry.DecodeConfigItem(raw)
	return s, raw, err
}

// history is what a scan of the table says about the configuration: every stored
// version, and the identities' records.
type history struct {
	versions []storedVersion // by version, newest first
	records  []registry.Record
	// unreadable is the identities' items that cannot be read: each its id, the account
	// it names (when it names one as a string) and why.
	unreadable []listed
}

// storedVersion is one copy of a version of the configuration: the copy, or why it
// cannot be read.
type storedVersion struct {
	id  string
	s   registry.StoredConfig
	err error
}

// latest returns the highest version number the copies use, readable or not; 0 for none.
func (h history) latest() int64 {
	var v int64
	for _, sv := range h.versions {
		if n, ok := versionOf(sv.id); ok {
			v = max(v, n)
		}
	}
	return v
}

// has reports whether the table holds the copy of version v.
func (h history) has(v int64) bool {
	return slices.ContainsFunc(h.versions, func(sv storedVersion) bool { return sv.id == registry.VersionID(v) })
}

// scan reads every item of the table (strongly consistent, page by page): the copies of
// the configuration's versions and, when records, the identities' records that can be
// read (one that cannot is no identity a document could break), and apart those that
// cannot; never a tenant whose key is or holds an API key bucketgate made, which no function
// looks up.
func (t *keyTable) scan(ctx context.Context, records bool) (history, error) {
	if err := t.open(); err != nil {
		return history{}, err
	}
	in := &dynamodb.ScanInput{TableName: aws.String(t.name), ConsistentRead: aws.Bool(true)}
	if !records {
		in.FilterExpression = aws.String("begins_with(#id, :copy)")
		in.ExpressionAttributeNames = map[string]string{"#id": registry.KeyAttribute}
		in.ExpressionAttributeValues = map[string]types.AttributeValue{":copy": &types.AttributeValueMemberS{Value: registry.VersionPrefix}}
	}
	var h history
	p := dynamodb.NewScanPaginator(t.db, in)
	for p.HasMorePages() {
		page, err := p.NextPage(ctx)
		if err != nil {
			return h, t.explain(err, "")
		}
		for _, it := range page.Items {
			id, _ := it[registry.KeyAttribute].(*types.AttributeValueMemberS)
			switch {
			case id == nil || id.Value == registry.ConfigID:
			case registry.IsConfigID(id.Value):
				s, err := registry.DecodeConfigItem(it)
				h.versions = append(h.versions, storedVersion{id: id.Value, s: s, err: err})
			default:
				if _, made := madeKeyDigest(id.Value); made {
					break // a tenant whose key is or holds an API key bucketgate made, which no function looks up (keys list notes it)
				}
				rec, err := registry.DecodeItem(it)
				if err == nil {
					h.records = append(h.records, rec)
					break
				}
				if account, ok := it["account"].(*types.AttributeValueMemberS); ok {
					rec.Account = account.Value
				}
				h.unreadable = append(h.unreadable, listed{rec: rec, err: err, unread: true})
			}
		}
	}
	slices.SortFunc(h.versions, func(a, b storedVersion) int { return compareVersions(b.id, a.id) })
	slices.SortFunc(h.records, func(a, b registry.Record) int { return strings.Compare(a.ID, b.ID) })
	return h, nil
}

// compareVersions orders the ids of copies by their version, then as text.
func compareVersions(a, b string) int {
	x, okA := versionOf(a)
	y, okB := versionOf(b)
	if okA && okB && x != y {
		return cmp.Compare(x, y)
	}
	return strings.Compare(a, b)
}

// versionOf returns the version in the id of a copy.
func versionOf(id string) (int64, bool) {
	n, err := strconv.ParseInt(strings.TrimPrefix(id, registry.VersionPrefix), 10, 64)
	return n, err == nil
}

// maxBroken is how many identities a refusal names; it counts the others.
const maxBroken = 10

// errPlansInUse is wrapped by the refusal of a document that would leave active
// identities without a usable plan.
var errPlansInUse = errors.New("the document would leave active keys, tenants or accounts without a usable plan")

// broken returns what cfg would break: every active record (not revoked, not expired
// at now) whose plan cfg does not have or whose own rules it refuses, as a line each:
// an account, and a key of an active account whose own rules its account's plan would
// no longer take (a key of an account that cfg breaks is the account's line).
func broken(records []registry.Record, cfg *config.Config, now time.Time) []string {
	accounts := map[string]registry.Record{}
	for _, rec := range records {
		if name, ok := strings.CutPrefix(rec.ID, registry.AccountItemPrefix); ok {
			accounts[name] = rec
		}
	}
	var out []string
	for _, rec := range records {
		if !rec.Active(now) {
			continue
		}
		plan, err := rec.Plan, error(nil)
		if acct, ok := accounts[rec.Account]; rec.Account == "" {
			_, err = rec.Resolve(cfg)
		} else if ok && acct.Active(now) {
			if _, aerr := acct.Resolve(cfg); aerr == nil {
				plan = acct.Plan
				_, err = registry.ResolveMember(rec, acct, cfg)
			}
		}
		if err != nil {
			var re *registry.RecordError
			if errors.As(err, &re) {
				err = fmt.Errorf("%s: %w", re.Attribute, re.Err)
			}
			out = append(out, fmt.Sprintf("%s (plan %s): %v", oneLine(rec.ID), oneLine(plan), err))
		}
	}
	return out
}

// rescoped returns what cfg would change in the reach of the own rules of every active
// record that cfg leaves a usable plan (see config.Config.Reach), was being the
// document in force, as a line each (reachLines).
func rescoped(records []registry.Record, was, cfg *config.Config, now time.Time) []string {
	var out []string
	for _, rec := range records {
		out = append(out, reachOf(rec, was, cfg, now)...)
	}
	return out
}

// reachOf returns what moving from document was to cfg changes in the reach of the own
// rules of rec, active at now, on its plan in both (reachLines): nothing when they reach
// nothing of a plan's (reaches), or its plan is unusable before or after (broken, or a
// command's check, says so).
func reachOf(rec registry.Record, was, cfg *config.Config, now time.Time) []string {
	if !reaches(rec, now) {
		return nil
	}
	old, okOld := was.Plan(rec.Plan)
	p, ok := cfg.Plan(rec.Plan)
	if !okOld || !ok {
		return nil
	}
	return reachLines(fmt.Sprintf("%s (plan %s)", oneLine(rec.ID), rec.Plan), rec, was, old, cfg, p)
}

// reaches reports whether the own rules of rec, active at now, limit requests that its
// plan and the routes say (see config.Config.Reach and config.Config.Shadows): a key of
// an account has none (its own rules never replace one, and are never shadow).
func reaches(rec registry.Record, now time.Time) bool {
	return rec.Active(now) && rec.Account == "" && len(rec.Rules) > 0
}

// reachLines returns what moving the own rules of rec from plan old of the document was
// to plan p of cfg changes in their reach, a line each starting with who (the record and
// its plan): a rule that replaced a route's rule alone, and limited that route's
// requests, and would be added to every request (the route's rule renamed or dropped, or
// the new plan's rule of its name), or the other way round, or would limit other
// routes' (a key's or an account's: no route applies to a tenant); and a rule that was
// enforced and would be shadow, as the rule of its name it would replace is (a shadow
// rule added under its name, or made shadow), limiting no request.
func reachLines(who string, rec registry.Record, was *config.Config, old *config.Plan, cfg *config.Config, p *config.Plan) []string {
	var out []string
	routes := !strings.HasPrefix(rec.ID, bucketgate.TenantPrefix)
	for _, r := range rec.Rules {
		if !was.Shadows(old, r.Name, routes) && cfg.Shadows(p, r.Name, routes) {
			out = append(out, fmt.Sprintf("%s: rule %s limited its requests, and would limit none: the rule %s it replaces is shadow", who, r.Name, r.Name))
		}
		if !routes {
			continue
		}
		from, fromRoutes := was.Reach(old, r.Name)
		to, toRoutes := cfg.Reach(p, r.Name)
		switch {
		case fromRoutes == toRoutes:
		case from == "":
			out = append(out, fmt.Sprintf("%s: rule %s limited every request, and would limit the requests of %s alone", who, r.Name, to))
		case to == "":
			out = append(out, fmt.Sprintf("%s: rule %s limited the requests of %s alone, and would limit every request", who, r.Name, from))
		default:
			out = append(out, fmt.Sprintf("%s: rule %s limited the requests of %s alone, and would limit those of %s alone", who, r.Name, from, to))
		}
	}
	return out
}

// nameBroken returns the lines of broken, at most maxBroken of them and a count of the
// rest, indented.
func nameBroken(lines []string) string {
	shown := lines[:min(len(lines), maxBroken)]
	text := "  " + strings.Join(shown, "\n  ")
	if rest := len(lines) - len(shown); rest > 0 {
		text += fmt.Sprintf("\n  and %d more (bucketgate keys list)", rest)
	}
	return text
}

// written is what writeConfig wrote.
type written struct {
	version, previous int64 // previous is 0 when the table held no document
	unchanged         bool  // the document was the one in force: nothing written
}

// configWrite is a write of the configuration, prepared: what it read and will write.
type configWrite struct {
	written
	raw  map[string]types.AttributeValue // the item config as read; nil: none
	cur  registry.StoredConfig           // what could be read of it
	bad  bool                            // it could not be read whole (hand-written)
	copy bool                            // its copy is missing: written first
	next registry.StoredConfig
	cfg  *config.Config // next's document, loaded
	// forced are the identities next leaves without a usable plan that --force let it
	// leave so (broken's lines): the others found after the write were written meanwhile.
	forced []string
	// was is the document in force as read, loaded: with none in the table, the
	// functions' own when it is known (keyTable.envKnown); nil when it is not, or it
	// does not load: own rules' reach is then not compared (rescoped). rescoped are the lines
	// of the identities whose own rules' reach --force let next change.
	was      *config.Config
	rescoped []string
}

// writeConfig writes doc, loaded as cfg, as the next version of the configuration,
// with note: prepareConfig, then commitConfig.
func (t *keyTable) writeConfig(ctx context.Context, doc string, cfg *config.Config, note string, force bool, warn func(string)) (written, error) {
	w, err := t.prepareConfig(ctx, doc, cfg, note, force, warn)
	if err != nil || w.unchanged {
		return w.written, err
	}
	return w.written, t.commitConfig(ctx, w)
}

// prepareConfig reads what a write of doc (loaded as cfg) as the next version depends
// on: the item registry.ConfigID, and a scan of the table. It refuses a document that
// leaves an active identity without a usable plan, naming them, unless force (then it
// names them on warn). The next version is one above every version the table holds,
// readable or not.
func (t *keyTable) prepareConfig(ctx context.Context, doc string, cfg *config.Config, note string, force bool, warn func(string)) (configWrite, error) {
	var (
		w   configWrite
		err error
		bad *registry.RecordError
	)
	w.cur, w.raw, err = t.readConfig(ctx, registry.ConfigID)
	switch {
	case errors.Is(err, errNoItem):
		w.raw = nil
	case errors.As(err, &bad): // a hand-written item: replaced, on the condition that it is still as read
		w.bad = true
	case err != nil:
		return w, err
	}
	if w.raw != nil && !w.bad && w.cur.Document == doc {
		w.written = written{version: w.cur.Version, previous: w.cur.Version, unchanged: true}
		return w, nil
	}
	h, err := t.scan(ctx, true)
	if err != nil {
		return w, err
	}
	now := time.Now()
	if lines := broken(h.records, cfg, now); len(lines) > 0 {
		if !force {
			return w, fmt.Errorf("%w (--force writes it anyway, and the functions then treat them as unknown keys):\n%s", errPlansInUse, nameBroken(lines))
		}
		warn(fmt.Sprintf("--force: these active keys, tenants or accounts now count as unknown:\n%s", nameBroken(lines)))
		w.forced = lines
	}
	was, err := w.cur.Load()
	known := w.raw != nil && !w.bad && err == nil
	if w.raw == nil { // the functions' own document is in force: known when it is the stack's, not the shell's
		was, _, err = t.env()
		known = err == nil && t.envKnown
	}
	if known {
		w.was = was
		if lines := rescoped(h.records, was, cfg, now); len(lines) > 0 {
			if !force {
				return w, fmt.Errorf("the document would change which requests the own rules of active keys, tenants or accounts limit (--force writes it anyway; bucketgate keys override or clear-overrides changes them first):\n%s", nameBroken(lines))
			}
			warn(fmt.Sprintf("--force: the own rules of these active keys, tenants or accounts limit other requests now:\n%s", nameBroken(lines)))
			w.rescoped = lines
		}
	}
	w.cfg = cfg
	w.version = max(w.cur.Version, h.latest()) + 1
	if w.raw != nil {
		w.previous = w.cur.Version
		w.copy = !w.bad && !h.has(w.cur.Version) // a write stopped between the item and its copy
	}
	w.next = registry.StoredConfig{ID: registry.ConfigID, Document: doc, Version: w.version, UpdatedAt: now.Truncate(time.Second), Note: note}
	return w, nil
}

// commitConfig writes w: the item registry.ConfigID, on the condition that it is still
// the one w read (another operator's write in between fails it, and nothing is
// written), then its immutable copy.
func (t *keyTable) commitConfig(ctx context.Context, w configWrite) error {
	if err := t.open(); err != nil {
		return err
	}
	if w.copy { // another write may have repaired it meanwhile: then it is there
		if err := t.putCopy(ctx, w.cur); err != nil && !errors.Is(err, errExists) {
			return err
		}
	}
	next := w.next.Item()
	in := &dynamodb.PutItemInput{TableName: aws.String(t.name), Item: next}
	if w.raw == nil {
		in.ConditionExpression, in.ExpressionAttributeNames = aws.String(isNew), map[string]string{"#id": registry.KeyAttribute}
	} else {
		// Every attribute as read but the document, as large as the item: a write always
		// changes the version.
		c := condition{names: map[string]string{}, values: map[string]types.AttributeValue{}}
		for _, attr := range slices.DeleteFunc(registry.ConfigAttributes(), func(a string) bool { return a == registry.DocumentAttribute }) {
			if v, ok := w.raw[attr]; ok {
				c.equal(c.name(attr), v)
			} else {
				c.terms = append(c.terms, "attribute_not_exists("+c.name(attr)+")")
			}
		}
		in.ConditionExpression, in.ExpressionAttributeNames, in.ExpressionAttributeValues = aws.String(strings.Join(c.terms, " AND ")), c.names, c.values
	}
	_, err := t.db.PutItem(ctx, in)
	var changed *types.ConditionalCheckFailedException
	switch {
	case errors.As(err, &changed) && t.holds(ctx, registry.ConfigID, next): // written, its answer lost
	case changed != nil:
		return t.raced(ctx, w.previous)
	case err != nil:
		return t.explain(err, registry.ConfigID)
	}
	if err := t.putCopy(ctx, w.next); err != nil {
		return fmt.Errorf("version %d is in force, but its copy was not written (the next put or rollback writes it): %w", w.version, err)
	}
	return t.recheck(ctx, w)
}

// recheck scans the table again once w is in force: a key, tenant or account written
// between prepareConfig's scan and the write (checked by its command against the
// document w replaced) may have no usable plan under w, or own rules whose reach w
// changes, and is named, as nothing else would say so. The identities --force let w
// leave so are not named again.
func (t *keyTable) recheck(ctx context.Context, w configWrite) error {
	h, err := t.scan(ctx, true)
	if err != nil {
		return fmt.Errorf("version %d is in force, but the table could not be scanned again for keys, tenants or accounts written meanwhile (bucketgate keys list shows them): %w", w.version, err)
	}
	now := time.Now()
	late := slices.DeleteFunc(broken(h.records, w.cfg, now), func(line string) bool { return slices.Contains(w.forced, line) })
	if len(late) > 0 {
		return fmt.Errorf("version %d is in force, but these active keys, tenants or accounts, written while this command ran, have no usable plan under it and count as unknown (bucketgate keys set-plan, accounts set-plan or config put mends them):\n%s", w.version, nameBroken(late))
	}
	if w.was == nil {
		return nil
	}
	late = slices.DeleteFunc(rescoped(h.records, w.was, w.cfg, now), func(line string) bool { return slices.Contains(w.rescoped, line) })
	if len(late) > 0 {
		return fmt.Errorf("version %d is in force, but it changes which requests the own rules of these active keys, tenants or accounts, written while this command ran, limit (bucketgate keys override or clear-overrides, or accounts override or clear-overrides, changes them):\n%s", w.version, nameBroken(late))
	}
	return nil
}

// putCopy writes s as the immutable copy of its version, which must not exist yet: a
// version is never written twice.
func (t *keyTable) putCopy(ctx context.Context, s registry.StoredConfig) error {
	s.ID = registry.VersionID(s.Version)
	return t.putNew(ctx, s.ID, s.Item())
}

// raced is the error of a write that found the configuration changed since it read
// version read (0: none): it names what is there now.
func (t *keyTable) raced(ctx context.Context, read int64) error {
	was := "no document"
	if read > 0 {
		was = fmt.Sprintf("version %d", read)
	}
	now := "another"
	if cur, _, err := t.readConfig(ctx, registry.ConfigID); err == nil {
		now = fmt.Sprintf("version %d", cur.Version)
		if cur.Note != "" {
			now += fmt.Sprintf(" (%q)", cur.Note)
		}
	}
	return fmt.Errorf("the configuration changed while this command ran: it read %s, and %s was written meanwhile; nothing written: look at it (bucketgate config show) and run this again", was, now)
}
