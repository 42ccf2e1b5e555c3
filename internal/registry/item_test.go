package registry_test

import (
	"errors"
	"os"
	"reflect"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/bucketgate/bucketgate"
	"github.com/bucketgate/bucketgate/internal/config"
	"github.com/bucketgate/bucketgate/internal/registry"
)

const digestID = "key:0123456789abcdef0123456789abcdef"

func s(v string) types.AttributeValue { return &types.AttributeValueMemberS{Value: v} }
func n(v string) types.AttributeValue { return &types.AttributeValueMemberN{Value: v} }
func m(kv ...any) types.AttributeValue {
	out := map[string]types.AttributeValue{}
	for i := 0; i < len(kv); i += 2 {
		out[kv[i].(string)] = kv[i+1].(types.AttributeValue)
	}
	return &types.AttributeValueMemberM{Value: out}
}
func l(vs ...types.AttributeValue) types.AttributeValue {
	return &types.AttributeValueMemberL{Value: vs}
}

// item is a valid item of digestID on pro, with extra attributes set (nil deletes).
func item(extra ...any) map[string]types.AttributeValue {
	it := map[string]types.AttributeValue{"id": s(digestID), "plan": s("pro")}
	for i := 0; i < len(extra); i += 2 {
		if extra[i+1] == nil {
			delete(it, extra[i].(string))
			continue
		}
		it[extra[i].(string)] = extra[i+1].(types.AttributeValue)
	}
	return it
}

func rule(name, capacity, rate string) types.AttributeValue {
	return m("name", s(name), "capacity", n(capacity), "refillPerSecond", n(rate))
}

func TestDecodeItem(t *testing.T) {
	it := item("status", s("active"), "expiresAt", n("1900000000"), "owner", s("acme"), "note", s("trial"),
		"rules", l(rule("burst", "7", "0.5"), rule("daily", "1000", "0.011574074074074073")))
	got, err := registry.DecodeItem(it)
	if err != nil {
		t.Fatal(err)
	}
	want := registry.Record{
		ID: digestID, Plan: "pro", Status: registry.StatusActive, ExpiresAt: time.Unix(1900000000, 0),
		Rules: []bucketgate.Rule{{Name: "burst", Capacity: 7, RefillPerSecond: 0.5}, {Name: "daily", Capacity: 1000, RefillPerSecond: 1000.0 / 86400}},
		Owner: "acme", Note: "trial",
	}
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("DecodeItem = %+v, want %+v", got, want)
	}
	back, err := registry.DecodeItem(got.Item())
	if err != nil || !reflect.DeepEqual(back, want) {
		t.Fatalf("round trip through Item = %+v, %v", back, err)
	}
}

// An account's item has a key item's attributes and may say whose buckets it spends; a
// key of an account needs no plan, and one it holds is read (and ignored by the cache).
func TestDecodeAccountItems(t *testing.T) {
	tests := []struct {
		name string
		item map[string]types.AttributeValue
		want registry.Record
	}{
		{"an account", item("id", s("account:Acme_Corp-2.eu"), "owner", s("Acme"), "rules", l(rule("burst", "7", "1"))),
			registry.Record{ID: "account:Acme_Corp-2.eu", Plan: "pro", Owner: "Acme", Rules: []bucketgate.Rule{{Name: "burst", Capacity: 7, RefillPerSecond: 1}}}},
		{"an account made from a key", item("id", s("account:made"), "buckets", s(digestID), "status", s("revoked")),
			registry.Record{ID: "account:made", Plan: "pro", Status: registry.StatusRevoked, Buckets: digestID}},
		{"a key of an account", item("plan", nil, "account", s("acme"), "expiresAt", n("1900000000")),
			registry.Record{ID: digestID, Account: "acme", ExpiresAt: time.Unix(1900000000, 0)}},
		{"a key of an account with a plan", item("account", s("acme")), registry.Record{ID: digestID, Plan: "pro", Account: "acme"}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got, err := registry.DecodeItem(tc.item)
			if err != nil || !reflect.DeepEqual(got, tc.want) {
				t.Fatalf("DecodeItem = %+v, %v; want %+v", got, err, tc.want)
			}
			if back, err := registry.DecodeItem(got.Item()); err != nil || !reflect.DeepEqual(back, got) {
				t.Fatalf("round trip through Item = %+v, %v", back, err)
			}
		})
	}
	if got := registry.ItemID("acct:acme"); got != "account:acme" || registry.IdentityOf(got) != "acct:acme" || registry.ItemID(digestID) != digestID {
		t.Errorf("ItemID(acct:acme) = %q, back %q", got, registry.IdentityOf(got))
	}
}

// ResolveMember decides a key of an account under the account's plan and rules, with the
// key's own rules added under its names; errors name the attribute and whose it is.
func TestResolveMember(t *testing.T) {
	c := config.Default()
	digest := strings.TrimPrefix(digestID, bucketgate.KeyPrefix)
	account := registry.Record{ID: "account:acme", Plan: "pro", Rules: []bucketgate.Rule{{Name: "burst", Capacity: 50, RefillPerSecond: 1}}}
	key := registry.Record{ID: digestID, Account: "acme", Rules: []bucketgate.Rule{{Name: "burst", Capacity: 5, RefillPerSecond: 1}}}
	p, err := registry.ResolveMember(key, account, c)
	if err != nil || len(p.Rules) != 2 || p.Rules[0].Capacity != 50 || p.Rules[1].Name != digest+"/burst" || p.Name != "pro" {
		t.Fatalf("ResolveMember = %+v, %v", p, err)
	}
	account.Plan = "gold"
	if _, err := registry.ResolveMember(key, account, c); err == nil || !strings.Contains(err.Error(), `account:acme: attribute plan: unknown plan "gold"`) {
		t.Errorf("an account on an unknown plan: %v", err)
	}
	account.Plan, key.Rules = "pro", []bucketgate.Rule{{Name: "a b", Capacity: 5, RefillPerSecond: 1}}
	if _, err := registry.ResolveMember(key, account, c); err == nil || !strings.Contains(err.Error(), digestID+`: attribute rules: with plan pro of account acme: rules[0]: name "a b"`) {
		t.Errorf("a key's bad own rule: %v", err)
	}
}

// maxErrorBytes bounds an item's error: a value the table holds (up to 400 KB) is
// quoted in part, so that a log line stays small, and no name longer than any plan's
// or rule's reaches the registry cache's entries.
const maxErrorBytes = 512

// Every flaw of an item is an error naming the attribute, never a panic, and quoting
// no huge value whole.
func TestDecodeItemErrorsNameTheAttribute(t *testing.T) {
	huge := strings.Repeat("x", 300_000)
	many := make([]types.AttributeValue, bucketgate.MaxRules+1)
	for i := range many {
		many[i] = rule("r"+strconv.Itoa(i), "1", "1")
	}
	tests := []struct {
		name string
		item map[string]types.AttributeValue
		want string
	}{
		{"no id", item("id", nil), "attribute id: missing"},
		{"id a number", item("id", n("1")), "attribute id: got a number (N), want a string (S)"},
		{"no plan", item("plan", nil), "attribute plan: missing"},
		{"empty plan", item("plan", s("")), "attribute plan: empty"},
		{"plan a number", item("plan", n("3")), "attribute plan: got a number (N), want a string (S)"},
		{"plan a list", item("plan", l(s("pro"))), "attribute plan: got a list (L), want a string (S)"},
		{"status unknown", item("status", s("suspended")), `attribute status: "suspended": want "active" or "revoked"`},
		{"status empty", item("status", s("")), `attribute status: "": want "active" or "revoked"`},
		{"status a boolean", item("status", &types.AttributeValueMemberBOOL{Value: false}), "attribute status: got a boolean (BOOL)"},
		{"expiresAt a string", item("expiresAt", s("2030-01-01")), "attribute expiresAt: got a string (S), want a number (N) of Unix seconds"},
		{"expiresAt a fraction", item("expiresAt", n("1900000000.5")), `attribute expiresAt: "1900000000.5": want whole Unix seconds`},
		{"expiresAt negative", item("expiresAt", n("-5")), `attribute expiresAt: "-5"`},
		{"expiresAt after 9999", item("expiresAt", n("253402300800")), `attribute expiresAt: "253402300800"`},
		{"rules a map", item("rules", m("name", s("b"))), "attribute rules: got a map (M), want a list (L) of maps"},
		{"rules a string set", item("rules", &types.AttributeValueMemberSS{Value: []string{"b"}}), "attribute rules: got a set"},
		{"huge rules", item("rules", l(many...)), "attribute rules: 9 rules: want at most 8"},
		{"rule a string", item("rules", l(s("burst"))), "attribute rules[0]: got a string (S), want a map (M)"},
		{"rule without name", item("rules", l(m("capacity", n("1"), "refillPerSecond", n("1")))), "attribute rules[0].name: missing"},
		{"rule without capacity", item("rules", l(rule("a", "1", "1"), m("name", s("b"), "refillPerSecond", n("1")))), "attribute rules[1].capacity: missing"},
		{"capacity a string", item("rules", l(m("name", s("b"), "capacity", s("10"), "refillPerSecond", n("1")))), "attribute rules[0].capacity: got a string (S), want a number (N)"},
		{"quota of an unknown period", item("rules", l(m("name", s("q"), "limit", n("5"), "period", s("monthly")))), `attribute rules[0].period: "monthly": want day, week or month`},
		{"quota period a number", item("rules", l(m("name", s("q"), "limit", n("5"), "period", n("30")))), "attribute rules[0].period: got a number (N), want a string (S)"},
		{"quota without a limit", item("rules", l(m("name", s("q"), "period", s("day")))), "attribute rules[0].limit: missing: a quota needs a limit"},
		{"quota limit a fraction", item("rules", l(m("name", s("q"), "limit", n("2.5"), "period", s("day")))), `attribute rules[0].limit: "2.5": want a whole number of tokens`},
		{"quota with a capacity", item("rules", l(m("name", s("q"), "limit", n("5"), "period", s("day"), "capacity", n("5")))), "attribute rules[0]: a quota (period day) has a limit, not a capacity or a refillPerSecond"},
		{"anchor 0", item("rules", l(m("name", s("q"), "limit", n("5"), "period", s("month"), "anchor", n("0")))), "attribute rules[0].anchor: 0: want a whole day of the month from 1 to 28"},
		{"anchor 29", item("rules", l(m("name", s("q"), "limit", n("5"), "period", s("month"), "anchor", n("29")))), "attribute rules[0].anchor: 29: want a whole day"},
		{"anchor a fraction", item("rules", l(m("name", s("q"), "limit", n("5"), "period", s("month"), "anchor", n("1.5")))), `attribute rules[0].anchor: "1.5": want a whole day of the month from 1 to 28`},
		{"anchor of a day quota", item("rules", l(m("name", s("q"), "limit", n("5"), "period", s("day"), "anchor", n("3")))), "attribute rules[0].anchor: 3 with period day: only a monthly quota has an anchor"},
		{"limit without a period", item("rules", l(m("name", s("q"), "limit", n("5"), "capacity", n("5"), "refillPerSecond", n("1")))), "attribute rules[0]: a limit or an anchor without a period"},
		{"capacity a fraction", item("rules", l(rule("b", "1.5", "1"))), `attribute rules[0].capacity: "1.5": want a whole number of tokens`},
		{"capacity huge", item("rules", l(rule("b", "1e40", "1"))), `attribute rules[0].capacity: "1e40"`},
		{"rate not finite", item("rules", l(rule("b", "1", "NaN"))), `attribute rules[0].refillPerSecond: "NaN": want a finite number`},
		{"rate overflows", item("rules", l(rule("b", "1", "1e400"))), `attribute rules[0].refillPerSecond: "1e400"`},
		{"concurrency 0", item("rules", l(m("name", s("c"), "concurrency", n("0")))), "attribute rules[0].concurrency: 0: want a whole number of requests in flight from 1 to 10000"},
		{"concurrency a fraction", item("rules", l(m("name", s("c"), "concurrency", n("1.5")))), `attribute rules[0].concurrency: "1.5"`},
		{"concurrency with a capacity", item("rules", l(m("name", s("c"), "concurrency", n("2"), "capacity", n("5")))), "attribute rules[0]: a concurrency rule has a name and a concurrency alone"},
		{"rule member unknown", item("rules", l(m("name", s("b"), "capacity", n("1"), "refillPerSecond", n("1"), "burst", n("2")))), `attribute rules[0]."burst": unknown attribute`},
		{"owner a number", item("owner", n("7")), "attribute owner: got a number (N)"},
		{"note binary", item("note", &types.AttributeValueMemberB{Value: []byte("x")}), "attribute note: got binary (B)"},
		{"unknown attribute", item("tier", s("gold")), `attribute "tier": unknown attribute`},
		{"account a number", item("account", n("7")), "attribute account: got a number (N), want a string (S)"},
		{"account name outside its set", item("account", s("acme corp")), `attribute account: "acme corp": want an account's name: 1 to 128 letters, digits, '.', '_' or '-'`},
		{"account name empty", item("account", s("")), `attribute account: "": want an account's name`},
		{"account name too long", item("account", s(strings.Repeat("a", 129))), `attribute account: "aaaa`},
		{"account of a tenant", item("id", s("tenant:t1"), "account", s("acme")), "attribute account: only an API key's item (key:<digest>) names an account"},
		{"account of an account", item("id", s("account:a"), "account", s("acme")), "attribute account: an account's item names no account: accounts do not nest"},
		{"account of itself", item("id", s("account:acme"), "account", s("acme")), "attribute account: an account's item names no account"},
		{"account's name outside its set", item("id", s("account:a b")), `attribute id: "account:a b": want an account's name`},
		{"account's name empty", item("id", s("account:")), `attribute id: "account:": want an account's name`},
		{"account without a plan", item("id", s("account:acme"), "plan", nil), "attribute plan: missing"},
		{"key of an account with an empty plan", item("account", s("acme"), "plan", s("")), "attribute plan: empty"},
		{"buckets of a lone key", item("buckets", s(digestID)), "attribute buckets: only an account's item, or a key of an account's, says whose buckets it spends"},
		{"buckets of a key of an account, not a key's", item("account", s("acme"), "buckets", s("acct:acme")), "attribute buckets: \"acct:acme\": want key:<the 32 hex digits"},
		{"buckets not a key", item("id", s("account:acme"), "buckets", s("acct:other")), `attribute buckets: "acct:other": want key:<the 32 hex digits of a key's digest>`},
		{"buckets a number", item("id", s("account:acme"), "buckets", n("1")), "attribute buckets: got a number (N)"},
		{"plan huge", item("plan", s(huge)), `attribute plan: "xxxx`},
		{"plan of a key of an account huge", item("account", s("acme"), "plan", s(huge)), `attribute plan: "xxxx`},
		{"rule name huge", item("rules", l(rule(huge, "1", "1"))), `attribute rules[0].name: "xxxx`},
		{"quota name huge", item("rules", l(m("name", s(huge), "limit", n("5"), "period", s("day")))), `attribute rules[0].name: "xxxx`},
		{"concurrency name huge", item("rules", l(m("name", s(huge), "concurrency", n("2")))), `attribute rules[0].name: "xxxx`},
		{"status huge", item("status", s(huge)), `attribute status: "xxxx`},
		{"unknown attribute huge", item(huge, s("x")), `attribute "xxxx`},
		{"rule member unknown huge", item("rules", l(m("name", s("b"), "capacity", n("1"), "refillPerSecond", n("1"), huge, n("2")))), `attribute rules[0]."xxxx`},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			_, err := registry.DecodeItem(tc.item)
			var re *registry.RecordError
			if !errors.As(err, &re) || !errors.Is(err, registry.ErrInvalidRecord) || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("DecodeItem = %v, want a *RecordError mentioning %q", err, tc.want)
			}
			if len(err.Error()) > maxErrorBytes {
				t.Errorf("the error takes %d bytes, want at most %d: it quotes a bad value whole", len(err.Error()), maxErrorBytes)
			}
			if tc.item["id"] == s(digestID) && !strings.Contains(err.Error(), digestID) {
				t.Errorf("error %q does not name the item", err)
			}
		})
	}
}

// Resolve checks what only the configuration can: the plan, and the rules with it.
func TestResolve(t *testing.T) {
	c := config.Default()
	tests := []struct {
		name string
		rec  registry.Record
		want string // the rules as name:capacity, or the error
	}{
		{"plan alone", registry.Record{ID: digestID, Plan: "pro"}, "burst:100"},
		{"override", registry.Record{ID: digestID, Plan: "pro", Rules: []bucketgate.Rule{{Name: "burst", Capacity: 7, RefillPerSecond: 1}}}, "burst:7"},
		{"unknown plan", registry.Record{ID: digestID, Plan: "gold"}, `attribute plan: unknown plan "gold"`},
		{"duplicate rule names", registry.Record{ID: digestID, Plan: "pro", Rules: []bucketgate.Rule{{Name: "a", Capacity: 1, RefillPerSecond: 1}, {Name: "a", Capacity: 1, RefillPerSecond: 1}}}, `attribute rules: rules[1]: name "a" given twice`},
		{"capacity out of range", registry.Record{ID: digestID, Plan: "pro", Rules: []bucketgate.Rule{{Name: "a", Capacity: bucketgate.MaxCapacity + 1, RefillPerSecond: 1}}}, "attribute rules: rules[0]: rule a: capacity 1000000001"},
		{"rate too slow", registry.Record{ID: digestID, Plan: "pro", Rules: []bucketgate.Rule{{Name: "a", Capacity: 1000, RefillPerSecond: 1e-9}}}, "attribute rules: rules[0]: rule a: refillPerSecond 1e-09 fills capacity 1000"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			p, err := tc.rec.Resolve(c)
			got := ""
			if err != nil {
				got = err.Error()
				if !errors.Is(err, registry.ErrInvalidRecord) {
					t.Errorf("error %v is not ErrInvalidRecord", err)
				}
			} else {
				for _, r := range p.Rules {
					got += r.Name + ":" + strconv.FormatInt(r.Capacity, 10)
				}
			}
			if !strings.Contains(got, tc.want) {
				t.Fatalf("Resolve = %q, want %q", got, tc.want)
			}
		})
	}
}

func TestActive(t *testing.T) {
	now := time.Unix(1_800_000_000, 0)
	tests := []struct {
		name string
		rec  registry.Record
		want bool
	}{
		{"no status", registry.Record{}, true},
		{"active", registry.Record{Status: registry.StatusActive}, true},
		{"revoked", registry.Record{Status: registry.StatusRevoked}, false},
		{"expires later", registry.Record{ExpiresAt: now.Add(time.Second)}, true},
		{"expires now", registry.Record{ExpiresAt: now}, false},
		{"expired", registry.Record{ExpiresAt: now.Add(-time.Second)}, false},
	}
	for _, tc := range tests {
		if got := tc.rec.Active(now); got != tc.want {
			t.Errorf("%s: Active = %v, want %v", tc.name, got, tc.want)
		}
	}
}

// FuzzDecodeItem builds items of every shape from the fuzzer's strings and a bit mask
// of types: DecodeItem never panics, refuses with a *RecordError naming an attribute,
// or returns a Record that Item writes back unchanged and that Resolve either accepts
// or refuses with a *RecordError.
func FuzzDecodeItem(f *testing.F) {
	f.Add("pro", "active", "1900000000", uint16(0b0000_0011_0000_1000), "burst", "7", "0.5", "")
	f.Add("gold", "revoked", "1.5", uint16(0b1111_1111_1111_1111), "b", "1e40", "NaN", "tier")
	f.Add("", "x", "-1", uint16(0b0000_0000_0100_0110), "", "-1", "1e-300", "note")
	f.Add("pro", "active", "1", uint16(0b0000_0000_1000_0000), "burst", "7", "0.5", "account")
	f.Add("pro", "active", "1", uint16(0b0000_0000_1000_0001), "burst", "7", "0.5", "buckets")
	f.Add("pro", "active", "1900000000", uint16(0b0110_0000_0000_1000), "monthly", "15", "month", "")
	f.Add("pro", "active", "1900000000", uint16(0b0010_0001_0000_1000), "daily", "500", "day", "")
	f.Add("pro", "active", "1900000000", uint16(0b1110_0000_0000_1000), "weekly", "29", "week", "")
	plans := config.Default()
	f.Fuzz(func(t *testing.T, plan, status, expires string, shape uint16, name, capacity, rate, extra string) {
		it := map[string]types.AttributeValue{"id": s(digestID), "plan": s(plan)}
		bit := func(i uint) bool { return shape&(1<<i) != 0 }
		if bit(0) {
			it["plan"] = n(plan)
		}
		if bit(1) {
			it["status"] = s(status)
		}
		if bit(2) {
			it["expiresAt"] = n(expires)
		} else if bit(12) {
			it["expiresAt"] = s(expires)
		}
		if bit(3) {
			var elems []types.AttributeValue
			for i := range int(shape>>8&0xf) + 1 {
				e := rule(name+strconv.Itoa(i%3), capacity, rate)
				if bit(6) {
					e.(*types.AttributeValueMemberM).Value["capacity"] = s(capacity)
				}
				if bit(13) { // a quota: its limit, the rate as its period, perhaps an anchor
					e = m("name", s(name+strconv.Itoa(i%3)), "limit", n(capacity), "period", s(rate))
					if bit(14) {
						e.(*types.AttributeValueMemberM).Value["anchor"] = n(capacity)
					}
					if bit(15) {
						e.(*types.AttributeValueMemberM).Value["refillPerSecond"] = n(capacity)
					}
				}
				if bit(5) && i == 1 {
					e = s(name)
				}
				elems = append(elems, e)
			}
			it["rules"] = l(elems...)
			if bit(4) {
				it["rules"] = m("name", s(name))
			}
		}
		if bit(7) && extra != "" && extra != "id" { // the id is the item's name in every error: not an extra attribute
			it[extra] = s(extra)
		}
		rec, err := registry.DecodeItem(it)
		var re *registry.RecordError
		if err != nil {
			if !errors.As(err, &re) || re.Attribute == "" || re.ID != digestID {
				t.Fatalf("DecodeItem error %v: want a *RecordError naming item and attribute", err)
			}
			return
		}
		back, err := registry.DecodeItem(rec.Item())
		if err != nil || !reflect.DeepEqual(back, rec) {
			t.Fatalf("Item round trip: %+v, %v; want %+v", back, err, rec)
		}
		if _, err := rec.Resolve(plans); err != nil && !errors.As(err, &re) {
			t.Fatalf("Resolve error %v is not a *RecordError", err)
		}
	})
}

// A quota (and a concurrency rule) of an item's rules decodes to its bucketgate.Rule, and
// Item writes it back as DecodeItem reads it.
func TestDecodeItemQuota(t *testing.T) {
	it := item("rules", l(rule("burst", "7", "0.5"),
		m("name", s("monthly"), "limit", n("100000"), "period", s("month"), "anchor", n("15")),
		m("name", s("daily"), "limit", n("500"), "period", s("day")),
		m("name", s("streams"), "concurrency", n("4"))))
	got, err := registry.DecodeItem(it)
	if err != nil {
		t.Fatal(err)
	}
	want := []bucketgate.Rule{
		{Name: "burst", Capacity: 7, RefillPerSecond: 0.5},
		{Name: "monthly", Limit: 100000, Period: bucketgate.PeriodMonth, Anchor: 15},
		{Name: "daily", Limit: 500, Period: bucketgate.PeriodDay},
		{Name: "streams", Concurrency: 4},
	}
	if !reflect.DeepEqual(got.Rules, want) {
		t.Fatalf("rules %+v, want %+v", got.Rules, want)
	}
	back, err := registry.DecodeItem(got.Item())
	if err != nil || !reflect.DeepEqual(back, got) {
		t.Fatalf("round trip: %+v, %v; want %+v", back, err, got)
	}
}

// docs/keys.md's table of an item's attributes has a row for every attribute, and its
// rules row gives every attribute of each kind of rule an item may hold: a user who
// writes items with tools of their own reads them there.
func TestKeysDocListsTheAttributes(t *testing.T) {
	b, err := os.ReadFile("../../docs/keys.md")
	if err != nil {
		t.Fatal(err)
	}
	rows := map[string]string{}
	for line := range strings.Lines(string(b)) {
		if cells := strings.Split(line, " | "); strings.HasPrefix(line, "| `") && len(cells) > 1 {
			for name := range strings.SplitSeq(strings.TrimPrefix(cells[0], "| "), ", ") {
				rows[strings.Trim(name, "`")] = line
			}
		}
	}
	for _, attr := range registry.Attributes() {
		if rows[attr] == "" {
			t.Errorf("docs/keys.md has no row for the attribute %s", attr)
		}
	}
	rec := registry.Record{ID: digestID, Plan: "pro", Rules: []bucketgate.Rule{
		{Name: "burst", Capacity: 10, RefillPerSecond: 1},
		{Name: "monthly", Limit: 1000, Period: bucketgate.PeriodMonth, Anchor: 15},
		{Name: "streams", Concurrency: 2},
	}}
	for i, x := range rec.Item()["rules"].(*types.AttributeValueMemberL).Value {
		for attr := range x.(*types.AttributeValueMemberM).Value {
			if !strings.Contains(rows["rules"], attr+": ") {
				t.Errorf("docs/keys.md's rules row does not give %s, an attribute of %+v", attr, rec.Rules[i])
			}
		}
	}
}

// madeKey has the shape of an API key bucketgate makes (madekey.Is).
const madeKey = "bg_" + "Zq3xW9vLp2Tn8Rk4Yc6Hd1Mf5Gj7Bs0Ae-Ku_Io2PwX"

// An item's errors name it and quote its bad values, masking every API key bucketgate
// made that they hold: a hand-written item's text is printed by bucketgate accounts list
// and keys list, and logged by the functions. An account's name holding one, which
// bucketgate.ValidAccountName takes but bucketgate accounts create refuses, is refused:
// it would rest in Redis's keys, the log lines and the metrics.
func TestItemErrorsQuoteNoMadeKey(t *testing.T) {
	long := " " + strings.Repeat("x", 200)
	tests := []struct {
		name string
		item map[string]types.AttributeValue
	}{
		{"account's id", item("id", s("account:"+madeKey+"!"))},
		{"account's id, a key after a name", item("id", s("account:acme/"+madeKey))},
		{"account's id, a key alone", item("id", s("account:"+madeKey))},
		{"a key's account, a key alone", item("account", s(madeKey))},
		{"a key's account, a key in a name", item("account", s("acme."+madeKey))},
		{"a key's account", item("account", s("acme/"+madeKey))},
		{"plan", item("plan", s(madeKey+long))},
		{"status", item("status", s(madeKey))},
		{"rule's name", item("rules", l(rule(madeKey+long, "1", "1")))},
		{"rule's period", item("rules", l(m("name", s("q"), "limit", n("5"), "period", s(madeKey))))},
		{"unknown attribute", item(madeKey, s("x"))},
		{"buckets", item("id", s("account:acme"), "buckets", s("key:"+madeKey))},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			_, err := registry.DecodeItem(tc.item)
			if err == nil {
				t.Fatal("DecodeItem took the item")
			}
			if strings.Contains(err.Error(), madeKey[:12]) {
				t.Fatalf("error %q quotes the key", err)
			}
			if !strings.Contains(err.Error(), "bg_...") {
				t.Errorf("error %q does not show where the key was", err)
			}
		})
	}
	t.Run("unknown plan", func(t *testing.T) {
		_, err := registry.Record{ID: digestID, Plan: madeKey}.Resolve(config.Default())
		if err == nil || strings.Contains(err.Error(), madeKey[:12]) || !strings.Contains(err.Error(), `unknown plan "bg_..."`) {
			t.Fatalf("Resolve = %v, want unknown plan \"bg_...\"", err)
		}
	})
}
