package main

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"strconv"
	"strings"
	"text/tabwriter"
	"time"
	"unicode"

	"github.com/bucketgate/bucketgate"
	"github.com/bucketgate/bucketgate/checkapi"
	"github.com/bucketgate/bucketgate/internal/madekey"
	"github.com/bucketgate/bucketgate/internal/registry"
)

// recordJSON is a record as -json prints it: Plan is the plan it is decided under, its
// account's for a key of an account; null for an item that cannot be read, whose plan
// is not known. Buckets is a key of an account's Record.Buckets, the key whose own rules'
// buckets it spends (an account's is accountJSON's Identity).
type recordJSON struct {
	ID        string            `json:"id"`
	Account   string            `json:"account,omitempty"`
	Plan      *string           `json:"plan"`
	Status    string            `json:"status"`
	ExpiresAt string            `json:"expiresAt,omitempty"`
	Rules     []bucketgate.Rule `json:"rules,omitempty"`
	Owner     string            `json:"owner,omitempty"`
	Note      string            `json:"note,omitempty"`
	Buckets   string            `json:"buckets,omitempty"`
}

// itemJSON is an item of a list as -json prints it: its record, or why it is invalid,
// and the status of a key's account that is not active.
type itemJSON struct {
	recordJSON
	AccountStatus string `json:"accountStatus,omitempty"`
	Invalid       string `json:"invalid,omitempty"`
}

// accountJSON is an account as -json prints it: its record (and why it is invalid),
// whose buckets it spends (null when its item cannot tell: unreadIdentity) and its keys
// (an empty array for none, never null).
type accountJSON struct {
	itemJSON
	Identity *string          `json:"identity"`
	Keys     []accountKeyJSON `json:"keys"`
}

// accountKeyJSON is a key of an account in accountJSON.
type accountKeyJSON struct {
	ID        string `json:"id"`
	Status    string `json:"status"`
	ExpiresAt string `json:"expiresAt,omitempty"`
	// Invalid is why the functions cannot use the key, with its account, under the plans.
	Invalid string `json:"invalid,omitempty"`
}

// recordJSONOf returns r as -json prints it, decided under plan.
func recordJSONOf(r registry.Record, plan string) recordJSON {
	j := recordJSON{ID: shownID(r.ID), Account: r.Account, Plan: &plan, Status: status(r), ExpiresAt: expiry(r), Rules: r.Rules, Owner: r.Owner, Note: r.Note}
	if r.Account != "" {
		j.Buckets = r.Buckets
	}
	return j
}

func itemJSONOf(it listed) itemJSON {
	j := itemJSON{recordJSON: recordJSONOf(it.rec, it.plan), AccountStatus: it.accountStatus}
	j.Status = it.status()
	if it.unread {
		j.Plan = nil
	}
	if it.err != nil {
		j.Invalid = it.err.Error()
	}
	return j
}

func writeJSON(w io.Writer, v any) error {
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	return enc.Encode(v)
}

// writeRecord prints it, a record as keys show reads it, as aligned "attribute value"
// lines: a key of an account has a line account, its plan is the account's (none when
// the account cannot be used), its status names the account's when that is not active,
// and a line buckets names the key whose own rules' buckets it spends when they are not
// its own (keys roll); a line invalid says why the functions cannot use it.
func writeRecord(w io.Writer, it listed) error {
	r := it.rec
	lines := [][2]string{{"id", oneLine(shownID(r.ID))}} // a tenant's key masked, its digest named
	if r.Account != "" {
		plan := oneLine(it.plan) + " (the account's)"
		if it.plan == "" { // no account to take it from: the key's own plan is ignored
			plan = "- (the functions treat the key as unknown: see invalid)"
		}
		lines = append(lines, [2]string{"account", r.Account}, [2]string{"plan", plan})
	} else {
		lines = append(lines, [2]string{"plan", oneLine(it.plan)})
	}
	st := status(r)
	if it.accountStatus != "" {
		st += " (account " + it.accountStatus + ")"
	}
	lines = append(lines, [][2]string{{"status", st}, {"expiresAt", orNever(expiry(r))}, {"rules", rulesText(r.Rules)}}...)
	if r.Account != "" && r.Buckets != "" {
		lines = append(lines, [2]string{"buckets", r.Buckets + " (its own rules': the key it was rolled from)"})
	}
	lines = append(lines, [][2]string{{"owner", oneLine(r.Owner)}, {"note", oneLine(r.Note)}}...)
	return writeAttributes(w, append(lines, invalidLine(it.err)...))
}

// invalidLine is the line invalid of an item the functions cannot use, saying why (err),
// or none for err nil.
func invalidLine(err error) [][2]string {
	if err == nil {
		return nil
	}
	return [][2]string{{"invalid", invalidText(err)}}
}

// invalidText says why the functions cannot use an item, err, on one line: the
// attribute at fault and what is wrong with it.
func invalidText(err error) string {
	why := err.Error()
	var re *registry.RecordError
	if errors.As(err, &re) {
		why = "attribute " + re.Attribute + ": " + re.Err.Error()
	}
	return oneLine(why) + " (the functions treat it as unknown)"
}

// writeAccount prints the account of it, whose buckets are identity's ("" for unknown),
// and its keys as aligned "attribute value" lines: a line invalid when the functions
// cannot use it, and a line key for each key, with its status or expiry when it has one,
// or why the functions cannot use it (its err). Of an item that cannot be read, whose
// attributes are not known, it prints none as if it were known: its plan line (and its
// identity line, when the item cannot tell) says so, and it has no expiresAt, rules,
// owner or note line.
func writeAccount(w io.Writer, identity string, it listed, keys []listed) error {
	r := it.rec
	const unread = "- (the item cannot be read: see invalid)"
	if identity == "" {
		identity = unread
	}
	lines := [][2]string{{"id", r.ID}, {"identity", identity}}
	if it.unread {
		lines = append(lines, [2]string{"plan", unread}, [2]string{"status", it.status()})
	} else {
		lines = append(lines, [][2]string{
			{"plan", oneLine(r.Plan)}, {"status", it.status()}, {"expiresAt", orNever(expiry(r))},
			{"rules", rulesText(r.Rules)}, {"owner", oneLine(r.Owner)}, {"note", oneLine(r.Note)},
		}...)
	}
	lines = append(lines, invalidLine(it.err)...)
	for _, k := range keys {
		line := oneLine(k.rec.ID)
		switch s := status(k.rec); {
		case s != string(registry.StatusActive):
			line += " (" + s + ")"
		case k.err != nil:
			line += " (invalid: " + invalidText(k.err) + ")"
		case expiry(k.rec) != "":
			line += " (expires " + expiry(k.rec) + ")"
		}
		lines = append(lines, [2]string{"key", line})
	}
	if len(keys) == 0 {
		lines = append(lines, [2]string{"key", "- (bucketgate keys create --account " + accountName(r.ID) + ")"})
	}
	return writeAttributes(w, lines)
}

// masked writes to w what is written to it, with every API key bucketgate made that it
// could show masked (madekey.Mask): the CLI's stdout and stderr (env). Each write is
// masked whole: a line of a note, an error, a JSON value, a document, a table's row.
type masked struct{ w io.Writer }

func (m masked) Write(p []byte) (int, error) {
	if _, err := io.WriteString(m.w, madekey.Mask(string(p))); err != nil {
		return 0, err
	}
	return len(p), nil
}

// maskedTable is a tabwriter whose rows are masked (masked) before their columns are
// aligned: a cell masked after would leave the next ones out of line.
type maskedTable struct {
	masked
	tw *tabwriter.Writer
}

// Flush prints the rows written, aligned.
func (t maskedTable) Flush() error { return t.tw.Flush() }

// newTable returns a maskedTable that prints aligned columns, two spaces apart, to w,
// and no padding at the end of a line (an empty last value, such as an owner or a
// note, left its column's padding there). Flush it.
func newTable(w io.Writer) maskedTable {
	tw := tabwriter.NewWriter(&trimRight{w: w}, 0, 4, 2, ' ', 0)
	return maskedTable{masked{tw}, tw}
}

// trimRight writes to w what is written to it but the spaces that end a line.
type trimRight struct {
	w      io.Writer
	spaces int // spaces held back: written before the next byte that is not a space or a newline
}

func (t *trimRight) Write(p []byte) (int, error) {
	out := make([]byte, 0, len(p))
	for _, c := range p {
		switch c {
		case ' ':
			t.spaces++
			continue
		case '\n':
			t.spaces = 0
		default:
			for ; t.spaces > 0; t.spaces-- {
				out = append(out, ' ')
			}
		}
		out = append(out, c)
	}
	if _, err := t.w.Write(out); err != nil {
		return 0, err
	}
	return len(p), nil
}

// writeAttributes prints attribute-value pairs as aligned lines.
func writeAttributes(w io.Writer, lines [][2]string) error {
	tw := newTable(w)
	for _, line := range lines {
		fmt.Fprintf(tw, "%s\t%s\n", line[0], line[1])
	}
	return tw.Flush()
}

// writeList prints items as a table, one line each: a key of an account with its
// account's plan, and the account after it.
func writeList(w io.Writer, items []listed) error {
	tw := newTable(w)
	fmt.Fprintln(tw, "ID\tPLAN\tSTATUS\tEXPIRES\tRULES\tOWNER\tNOTE")
	for _, it := range items {
		if it.err != nil {
			fmt.Fprintf(tw, "%s\tinvalid: %s\n", oneLine(it.rec.ID), oneLine(it.err.Error()))
			continue
		}
		r, plan, st := it.rec, oneLine(it.plan), status(it.rec)
		if r.Account != "" {
			plan += " (acct:" + r.Account + ")"
		}
		if it.accountStatus != "" {
			st += " (account " + it.accountStatus + ")"
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t%s\t%s\n", oneLine(r.ID), plan, st, orNever(expiry(r)), rulesText(r.Rules), oneLine(r.Owner), oneLine(r.Note))
	}
	return tw.Flush()
}

// status is r's status as printed: revoked, expired (by the clock of this machine),
// or active.
func status(r registry.Record) string {
	switch {
	case r.Status == registry.StatusRevoked:
		return string(registry.StatusRevoked)
	case !r.Active(time.Now()):
		return statusExpired
	}
	return string(registry.StatusActive)
}

// statusExpired is the status printed for a key past its expiresAt.
const statusExpired = "expired"

// statusUnreadable is the status printed for an item that cannot be read, whose own
// status is not known: the functions treat it as unknown (its invalid says why).
const statusUnreadable = "unreadable"

// expiry is r's expiry in RFC 3339 UTC, or "" for never.
func expiry(r registry.Record) string {
	if r.ExpiresAt.IsZero() {
		return ""
	}
	return r.ExpiresAt.UTC().Format(time.RFC3339)
}

// oneLine is s, text stored in the table (an owner, a note, a plan's name, a tenant's
// id), as a table's cell: quoted (Go's escapes) when it holds a control character, a
// line break or a tab that would forge a line or a column. An API key bucketgate made
// that it holds (stored data is input, and a hand-written item may hold one) is masked
// where it is printed (masked): the escapes never join what they separate.
func oneLine(s string) string {
	if strings.ContainsFunc(s, unicode.IsControl) {
		return strconv.Quote(s)
	}
	return s
}

func orNever(s string) string {
	if s == "" {
		return never
	}
	return s
}

// rulesText prints rules as the --rule flag takes them, or "-" for none; a shadow rule
// (an own rule that replaces one: assess) has " (shadow)" after it.
func rulesText(rs []bucketgate.Rule) string {
	if len(rs) == 0 {
		return "-"
	}
	parts := make([]string, len(rs))
	for i, r := range rs {
		switch {
		case r.IsQuota() && r.Anchor != 0:
			parts[i] = r.Name + ":" + strconv.FormatInt(r.Limit, 10) + ":" + r.Period.String() + "@" + strconv.Itoa(int(r.Anchor))
		case r.IsQuota():
			parts[i] = r.Name + ":" + strconv.FormatInt(r.Limit, 10) + ":" + r.Period.String()
		case r.IsConcurrency():
			parts[i] = r.Name + ":" + strconv.Itoa(int(r.Concurrency)) + ":" + concurrent
		default:
			parts[i] = r.Name + ":" + strconv.FormatInt(r.Capacity, 10) + ":" + strconv.FormatFloat(r.RefillPerSecond, 'g', -1, 64)
		}
		if r.Shadow { // an own rule that replaces a shadow rule: assess
			parts[i] += " (shadow)"
		}
	}
	return strings.Join(parts, " ")
}

// bucketJSON is the buckets of an identity as -json prints them: the binding rule's,
// and after a show every rule's.
type bucketJSON struct {
	Identity     string                `json:"identity"`
	Plan         string                `json:"plan"`
	Rule         string                `json:"rule"`
	Limit        int64                 `json:"limit"`
	Remaining    int64                 `json:"remaining"`
	ResetAfterMS int64                 `json:"resetAfterMs"`
	Rules        []checkapi.RuleStatus `json:"rules,omitempty"`
}

func bucketJSONOf(id string, r checkapi.Response) bucketJSON {
	return bucketJSON{Identity: id, Plan: r.Plan, Rule: r.Rule, Limit: r.Limit, Remaining: r.Remaining, ResetAfterMS: r.ResetAfterMS, Rules: r.Rules}
}

// writeBucket prints the buckets of identity id, as r describes them, as aligned
// "attribute value" lines: the rule with the fewest tokens left, and when every rule is
// full again.
func writeBucket(w io.Writer, id string, r checkapi.Response) error {
	plan := r.Plan
	if plan == "" {
		plan = "- (the rules given)"
	}
	rule := r.Rule
	if rule == "" {
		rule = "- (shadow rules only)"
	}
	if err := writeAttributes(w, [][2]string{
		{"identity", id}, {"plan", plan}, {"rule", rule}, {"limit", strconv.FormatInt(r.Limit, 10)},
		{"remaining", strconv.FormatInt(r.Remaining, 10)}, {"resetAfter", r.ResetAfter().String()},
	}); err != nil || len(r.Rules) == 0 {
		return err
	}
	return writeRules(w, r.Rules)
}

// writeRules prints every rule of a show after a blank line: a bucket's capacity, its
// tokens and when it is full again; a quota's period, limit, what it may still admit
// and when its window ends; a concurrency rule's most in flight, the leases it may still
// give and when its last lease in flight ends.
func writeRules(w io.Writer, rules []checkapi.RuleStatus) error {
	tw := newTable(w)
	fmt.Fprintln(tw, "\nRULE\tKIND\tLIMIT\tREMAINING\tRESET")
	for _, r := range rules {
		kind, reset := "bucket", "full"
		switch {
		case r.Concurrency && r.ResetAfterMS > 0:
			kind, reset = "concurrency", fmt.Sprintf("%d in flight, the last ends in %v", r.Limit-r.Remaining, time.Duration(r.ResetAfterMS)*time.Millisecond)
		case r.Concurrency:
			kind, reset = "concurrency", "none in flight"
		case r.Period != 0:
			kind, reset = r.Period.String(), "window ends "+r.WindowEnd
		case r.ResetAfterMS > 0:
			reset = "full in " + (time.Duration(r.ResetAfterMS) * time.Millisecond).String()
		}
		if r.Shadow {
			kind += " (shadow)"
		}
		fmt.Fprintf(tw, "%s\t%s\t%d\t%d\t%s\n", r.Name, kind, r.Limit, r.Remaining, reset)
	}
	return tw.Flush()
}
