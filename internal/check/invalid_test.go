package check

import (
	"errors"
	"fmt"
	"runtime"
	"strings"
	"testing"

	"github.com/bucketgate/bucketgate"
	"github.com/bucketgate/bucketgate/checkapi"
	"github.com/bucketgate/bucketgate/internal/config"
	"github.com/bucketgate/bucketgate/internal/guard"
)

// madeKey has the shape of the API keys bucketgate makes (bucketgate keys create).
const madeKey = "bg_" + "AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA"

// validCheck is a check that passes validation, to surround invalid ones in batches.
const validCheck = `{"key":"tenant-1","plan":"pro"}`

func TestInvalidRequests(t *testing.T) {
	manyChecks := strings.Repeat(validCheck+",", checkapi.MaxBatch) + validCheck
	nineRules := make([]string, 9)
	for i := range nineRules {
		nineRules[i] = fmt.Sprintf(`{"name":"r%d","capacity":10,"refillPerSecond":1}`, i)
	}
	tests := []struct {
		name    string
		payload string
		want    string // the error message starts with this
	}{
		{"empty payload", ``, "request: got nothing, want a JSON object"},
		{"not JSON", `hello`, "request: got invalid JSON, want a JSON object"},
		{"truncated JSON", `{"key":"a"`, "request: invalid JSON"},
		{"array payload", `[{"key":"a"}]`, "request: got array, want a JSON object"},
		{"string payload", `"tenant-42"`, "request: got string, want a JSON object"},
		{"data after the object", `{"key":"a"} {"key":"b"}`, "request: data after the JSON object"},
		{"unknown field", `{"key":"a","tenant":"x"}`, `"tenant": unknown field (want key, identity, op, plan, rules, cost, from, to, ttlMs, requestId, reservation, lease, checks)`},
		{"field in another case", `{"Key":"a"}`, `"Key": unknown field`},
		{"field given twice", `{"key":"a","key":"b"}`, "key: given twice"},
		{"missing key", `{"plan":"pro"}`, "key: missing"},
		{"empty key", `{"key":""}`, "key: empty"},
		{"null key", `{"key":null}`, "key: got null: give a value, or leave the member out"},
		{"numeric key", `{"key":42}`, "key: got number, want a string"},
		{"key too long", `{"key":"` + strings.Repeat("k", checkapi.MaxKey+1) + `"}`, "key: 1001 bytes: want at most 1000"},
		{"an API key bucketgate made", `{"key":"` + madeKey + `","plan":"pro"}`, "key: an API key bucketgate made (bg_...), which would rest in Redis and the registry as it is: pass its digest"},
		{"an API key bucketgate made in a batch", `{"checks":[` + validCheck + `,{"key":"` + madeKey + `","plan":"pro"}]}`, "checks[1].key: an API key bucketgate made"},
		{"an API key bucketgate made after key:", `{"key":"key:` + madeKey + `","plan":"pro"}`, "key: holds an API key bucketgate made (bg_...), which would rest in Redis and the registry as it is: pass its digest"},
		{"an API key bucketgate made after Bearer", `{"key":"Bearer ` + madeKey + `","plan":"pro"}`, "key: holds an API key bucketgate made (bg_...)"},
		{"an API key bucketgate made after a tenant", `{"checks":[` + validCheck + `,{"key":"acme/` + madeKey + `","plan":"pro"}]}`, "checks[1].key: holds an API key bucketgate made (bg_...)"},
		{"an identity holding an API key bucketgate made", `{"identity":"tenant:acme/` + madeKey + `","op":"reset"}`, "identity: holds an API key bucketgate made (bg_...)"},
		{"unknown plan", `{"key":"a","plan":"gold"}`, `plan: unknown plan "gold" (configured: enterprise, free, pro)`},
		{"empty plan", `{"key":"a","plan":""}`, `plan: unknown plan ""`},
		{"plan not a string", `{"key":"a","plan":["pro"]}`, "plan: got array, want a string"},
		{"plan and rules", `{"key":"a","plan":"pro","rules":[{"name":"r","capacity":1,"refillPerSecond":1}]}`, "rules: not with plan"},
		{"empty rules", `{"key":"a","rules":[]}`, "rules: 0 rules: want 1 to 8"},
		{"too many rules", `{"key":"a","rules":[` + strings.Join(nineRules, ",") + `]}`, "rules: 9 rules: want 1 to 8"},
		{"rules not an array", `{"key":"a","rules":{"name":"r"}}`, "rules: got object, want an array"},
		{"rule not an object", `{"key":"a","rules":["burst"]}`, "rules[0]: got string, want a JSON object"},
		{"rule unknown field", `{"key":"a","rules":[{"name":"r","capacity":1,"refill":1}]}`, `rules[0]."refill": unknown field (want name, capacity, refillPerSecond, limit, period, anchor, shadow, concurrency)`},
		{"rule missing capacity", `{"key":"a","rules":[{"name":"r","refillPerSecond":1}]}`, "rules[0].capacity: missing"},
		{"rule fractional capacity", `{"key":"a","rules":[{"name":"r","capacity":1.5,"refillPerSecond":1}]}`, "rules[0].capacity: got 1.5, want a whole number of tokens"},
		{"rule zero capacity", `{"key":"a","rules":[{"name":"r","capacity":0,"refillPerSecond":1}]}`, "rules[0]: rule r: capacity 0"},
		{"rule negative refill", `{"key":"a","rules":[{"name":"r","capacity":1,"refillPerSecond":-1}]}`, "rules[0]: rule r: refillPerSecond -1"},
		{"rule refill too slow", `{"key":"a","rules":[{"name":"r","capacity":1000000,"refillPerSecond":0.001}]}`, "rules[0]: rule r: refillPerSecond 0.001 fills capacity"},
		{"rule refill overflows", `{"key":"a","rules":[{"name":"r","capacity":1,"refillPerSecond":1e999}]}`, "rules[0].refillPerSecond: got 1e999, want a finite number"},
		{"rule refill underflows", `{"key":"a","rules":[{"name":"r","capacity":1,"refillPerSecond":1e-400}]}`, "rules[0].refillPerSecond: got 1e-400, which rounds to 0: want a finite number"},
		{"rule refill underflows below 0", `{"key":"a","rules":[{"name":"r","capacity":1,"refillPerSecond":-0.1e-330}]}`, "rules[0].refillPerSecond: got -0.1e-330, which rounds to 0"},
		{"reserve of concurrency rules alone", `{"key":"a","op":"reserve","cost":1,"rules":[{"name":"c","concurrency":2}]}`, "rules: concurrency rules alone: a reserve needs a bucket or a quota"},
		{"refund of concurrency rules alone in a batch", `{"checks":[` + validCheck + `,{"key":"a","op":"refund","cost":1,"rules":[{"name":"c","concurrency":2}]}]}`, "checks[1].rules: concurrency rules alone: a refund needs a bucket or a quota"},
		{"settle of concurrency rules alone", `{"key":"a","op":"settle","cost":1,"reservation":"r3.x","rules":[{"name":"c","concurrency":2}]}`, "rules: concurrency rules alone: a settle needs a bucket or a quota"},
		{"release of no concurrency rule", `{"key":"a","op":"release","lease":"l3.x","rules":[{"name":"r","capacity":1,"refillPerSecond":1}]}`, "rules: no concurrency rule: a release returns its lease to the concurrency rules that gave it"},
		{"rule refill as string", `{"key":"a","rules":[{"name":"r","capacity":1,"refillPerSecond":"1"}]}`, "rules[0].refillPerSecond: got string, want a finite number"},
		{"rule bad name", `{"key":"a","rules":[{"name":"a b","capacity":1,"refillPerSecond":1}]}`, `rules[0]: name "a b"`},
		{"rule names repeat", `{"key":"a","rules":[{"name":"r","capacity":1,"refillPerSecond":1},{"name":"r","capacity":2,"refillPerSecond":1}]}`, `rules[1]: name "r": already the name of rules[0]`},
		{"a quota and a bucket of one name", `{"key":"a","rules":[{"name":"r","capacity":1,"refillPerSecond":1},{"name":"r","limit":2,"period":"day"}]}`, `rules[1]: name "r": already the name of rules[0]`},
		{"quota period outside the set", `{"key":"a","rules":[{"name":"q","limit":5,"period":"monthly"}]}`, `rules[0].period: "monthly": want day, week or month`},
		{"quota period a number", `{"key":"a","rules":[{"name":"q","limit":5,"period":30}]}`, "rules[0].period: got number, want a string"},
		{"quota missing limit", `{"key":"a","rules":[{"name":"q","period":"day"}]}`, "rules[0].limit: missing"},
		{"quota missing period", `{"key":"a","rules":[{"name":"q","limit":5}]}`, "rules[0].period: missing"},
		{"quota limit 0", `{"key":"a","rules":[{"name":"q","limit":0,"period":"day"}]}`, "rules[0]: rule q: limit 0: want 1 to 1000000000"},
		{"quota limit above 1e9", `{"key":"a","rules":[{"name":"q","limit":1000000001,"period":"week"}]}`, "rules[0]: rule q: limit 1000000001"},
		{"quota limit fractional", `{"key":"a","rules":[{"name":"q","limit":2.5,"period":"week"}]}`, "rules[0].limit: got 2.5, want a whole number of tokens"},
		{"quota anchor 0", `{"key":"a","rules":[{"name":"q","limit":5,"period":"month","anchor":0}]}`, "rules[0].anchor: 0: want a day of the month from 1 to 28"},
		{"quota anchor 29", `{"key":"a","rules":[{"name":"q","limit":5,"period":"month","anchor":29}]}`, "rules[0].anchor: 29: want a day of the month from 1 to 28"},
		{"quota anchor of a week", `{"key":"a","rules":[{"name":"q","limit":5,"period":"week","anchor":1}]}`, "rules[0].anchor: 1 with period week: only a monthly quota has an anchor"},
		{"quota with a capacity", `{"key":"a","rules":[{"name":"q","limit":5,"period":"day","capacity":5}]}`, "rules[0].capacity: a quota's (it has a period)"},
		{"bucket with a limit", `{"key":"a","rules":[{"name":"b","capacity":5,"refillPerSecond":1,"limit":5}]}`, "rules[0].period: missing"},
		{"cost above a limit", `{"key":"a","rules":[{"name":"q","limit":5,"period":"day"}],"cost":6}`, "cost: 6 exceeds limit 5 of rule q: it could never be allowed"},
		{"negative cost", `{"key":"a","cost":-1}`, "cost: got -1, want a whole number from 0 to 9007199254740992 (2^53)"},
		{"fractional cost", `{"key":"a","cost":1.5}`, "cost: got 1.5, want a whole number"},
		{"whole cost written as a fraction", `{"key":"a","cost":1.0}`, "cost: got 1.0, want a whole number from 0 to 9007199254740992 (2^53), written without a fraction or an exponent"},
		{"cost with exponent", `{"key":"a","cost":1e3}`, "cost: got 1e3, want a whole number from 0 to 9007199254740992 (2^53), written without a fraction or an exponent"},
		{"rule capacity written as a fraction", `{"key":"a","rules":[{"name":"r","capacity":5.0,"refillPerSecond":1}]}`, "rules[0].capacity: got 5.0, want a whole number of tokens, written without a fraction or an exponent"},
		{"cost as string", `{"key":"a","cost":"1"}`, "cost: got string, want a whole number"},
		{"null cost", `{"key":"a","cost":null}`, "cost: got null: give a value, or leave the member out"},
		{"cost above 2^53", `{"key":"a","cost":9007199254740993}`, "cost: got 9007199254740993, want a whole number from 0 to 9007199254740992 (2^53)"},
		{"cost beyond int64", `{"key":"a","cost":100000000000000000000000}`, "cost: got 100000000000000000000000, want a whole number"},
		{"cost above the plan's capacity", `{"key":"a","plan":"free","cost":11}`, "cost: 11 exceeds capacity 10 of rule burst: it could never be allowed"},
		{"cost above the default plan's capacity", `{"key":"a","cost":11}`, "cost: 11 exceeds capacity 10 of rule burst"},
		{"cost above the smallest inline capacity", `{"key":"a","rules":[{"name":"big","capacity":100,"refillPerSecond":1},{"name":"small","capacity":5,"refillPerSecond":1}],"cost":6}`, "cost: 6 exceeds capacity 5 of rule small"},
		{"unknown operation", `{"key":"a","op":"take"}`, `op: unknown operation "take": want check, refund, reset, usage, reserve, settle, cancel or release`},
		{"operation in another case", `{"key":"a","op":"Reset"}`, `op: unknown operation "Reset"`},
		{"empty operation", `{"key":"a","op":""}`, `op: unknown operation ""`},
		{"operation not a string", `{"key":"a","op":1}`, "op: got number, want a string"},
		{"refund of nothing", `{"key":"a","op":"refund","cost":0}`, "cost: got 0, want a whole number of tokens to give back, from 1"},
		{"refund of less than nothing", `{"key":"a","op":"refund","cost":-2}`, "cost: got -2, want a whole number of tokens to give back"},
		{"refund above capacity", `{"key":"a","plan":"free","op":"refund","cost":11}`, "cost: 11 exceeds capacity 10 of rule burst: a refund gives back at most a rule's capacity"},
		{"reserve of nothing", `{"key":"a","op":"reserve","cost":0}`, "cost: got 0, want an estimate, a whole number from 1 to 9007199254740992 (2^53)"},
		{"reserve of a fraction", `{"key":"a","op":"reserve","cost":1.5}`, "cost: got 1.5, want an estimate, a whole number from 1 to 9007199254740992 (2^53)"},
		{"reserve of a string", `{"key":"a","op":"reserve","cost":"4"}`, "cost: got string, want an estimate, a whole number from 1"},
		{"reset with a cost", `{"key":"a","op":"reset","cost":1}`, "cost: not with op reset: a reset makes every rule full"},
		{"reset with a cost of 0", `{"key":"a","op":"reset","cost":0}`, "cost: not with op reset"},
		{"identity with key", `{"key":"a","identity":"ip:192.0.2.1"}`, "identity: not with key: give a key (the check function's own buckets) or an identity"},
		{"identity of a tenant without a key", `{"identity":"tenant:"}`, `identity: tenant: with a key of 0 bytes: want 1 to 1000`},
		{"identity of a tenant with a long key", `{"identity":"tenant:` + strings.Repeat("k", checkapi.MaxKey+1) + `"}`, `identity: tenant: with a key of 1001 bytes`},
		{"identity of another kind", `{"identity":"user:a"}`, `identity: 6 bytes, not shown: want key:<the first 32 hex digits of the API key's SHA-256, never the key>, ip:<address>`},
		{"identity with a raw API key", `{"identity":"key:my-secret-key"}`, `identity: 17 bytes, not shown: want key:`},
		{"identity with an upper-case digest", `{"identity":"key:0123456789ABCDEF0123456789ABCDEF"}`, `identity: 36 bytes, not shown: want key:`},
		{"identity that is a raw API key", `{"identity":"bg_0123456789abcdefghijklmnopqrstuvwxyzABCDEFG"}`, "identity: an API key bucketgate made (bg_...), which would rest in Redis and the registry as it is: want tenant:<its digest>"},
		{"identity with a short digest", `{"identity":"key:0123456789abcdef"}`, `identity: 20 bytes, not shown: want key:`},
		{"identity of a tenant whose key is an API key bucketgate made", `{"identity":"tenant:` + madeKey + `"}`, "identity: tenant: with an API key bucketgate made (bg_...), which would rest in Redis and the registry as it is: want tenant:<its digest>"},
		{"identity of an account named as an API key bucketgate made", `{"identity":"acct:` + madeKey + `","op":"reset"}`, "identity: acct: with an API key bucketgate made (bg_...)"},
		{"identity of an address that is an API key bucketgate made", `{"identity":"ip:` + madeKey + `"}`, "identity: ip: with an API key bucketgate made (bg_...)"},
		{"identity of a tenant whose key is an API key bucketgate made in a batch", `{"checks":[` + validCheck + `,{"identity":"tenant:` + madeKey + `","op":"reset"}]}`, "checks[1].identity: tenant: with an API key bucketgate made"},
		{"identity with an address not as the authorizer writes it", `{"identity":"ip:192.000.2.1"}`, `identity: "ip:192.000.2.1": want`},
		{"identity with an IPv4-mapped address", `{"identity":"ip:::ffff:192.0.2.1"}`, `identity: "ip:::ffff:192.0.2.1": want ip:192.0.2.1, as the authorizer spells this source`},
		{"identity with an IPv6 prefix not masked", `{"identity":"ip:2001:db8::1/64"}`, `identity: "ip:2001:db8::1/64": want ip:2001:db8::/64, as the authorizer spells this source`},
		{"identity not a string", `{"identity":{"ip":"192.0.2.1"}}`, "identity: got object, want a string"},
		{"empty identity", `{"identity":""}`, `identity: 0 bytes, not shown: want`},
		{"key with a lone high surrogate", `{"key":"\ud800"}`, `key: \ud800 at byte 1 is half of a UTF-16 surrogate pair`},
		{"key with a lone low surrogate", `{"key":"tenant-\udc00"}`, `key: \udc00 at byte 8 is half of a UTF-16 surrogate pair`},
		{"key with a reversed pair", `{"key":"\ude00\ud83d"}`, `key: \ude00 at byte 1 is half`},
		{"key with byte 0xff", "{\"key\":\"tenant-\xff\"}", "key: byte 0xff at byte 8 is not UTF-8"},
		{"key with byte 0xfe", "{\"key\":\"\xfe\"}", "key: byte 0xfe at byte 1 is not UTF-8"},
		{"identity with a lone surrogate", `{"identity":"ip:\udc00"}`, `identity: \udc00 at byte 4 is half`},
		{"rule shadow not a boolean", `{"key":"a","rules":[{"name":"r","capacity":1,"refillPerSecond":1,"shadow":"yes"}]}`, "rules[0].shadow: got string, want true or false"},
		{"refill above 1e9", `{"key":"a","rules":[{"name":"r","capacity":1,"refillPerSecond":1e19}]}`, "rules[0]: rule r: refillPerSecond 1e+19: want a number above 0 and at most 1e+09"},
		{"check refunds nothing", `{"checks":[` + validCheck + `,{"key":"a","op":"refund","cost":0}]}`, "checks[1].cost: got 0, want a whole number of tokens to give back"},
		{"check with an unknown operation", `{"checks":[` + validCheck + `,{"key":"a","op":"undo"}]}`, `checks[1].op: unknown operation "undo"`},
		{"check resets with a cost", `{"checks":[{"key":"a","op":"reset","cost":1}]}`, "checks[0].cost: not with op reset"},
		{"check with identity and key", `{"checks":[` + validCheck + `,{"key":"a","identity":"ip:192.0.2.1","op":"reset"}]}`, "checks[1].identity: not with key"},
		{"checks with key", `{"key":"a","checks":[` + validCheck + `]}`, "key: not with checks: send one check, or a batch of checks"},
		{"checks with cost", `{"cost":1,"checks":[` + validCheck + `]}`, "cost: not with checks"},
		{"checks not an array", `{"checks":{"key":"a"}}`, "checks: got object, want an array"},
		{"checks empty", `{"checks":[]}`, "checks: 0 checks: want 1 to 100 per call"},
		{"checks above MaxBatch", `{"checks":[` + manyChecks + `]}`, "checks: 101 checks: want 1 to 100 per call"},
		{"check not an object", `{"checks":[` + validCheck + `,null]}`, "checks[1]: got null, want a JSON object"},
		{"check unknown field", `{"checks":[` + validCheck + `,{"key":"a","checks":[]}]}`, `checks[1]."checks": unknown field (want key, identity, op, plan, rules, cost, from, to, ttlMs, requestId, reservation, lease)`},
		{"check missing key", `{"checks":[` + validCheck + `,` + validCheck + `,{"plan":"pro"}]}`, "checks[2].key: missing"},
		{"check bad cost", `{"checks":[` + validCheck + `,` + validCheck + `,` + validCheck + `,{"key":"a","cost":1.5}]}`, "checks[3].cost: got 1.5"},
		{"check bad rule", `{"checks":[` + validCheck + `,{"key":"a","rules":[{"name":"r","capacity":-1,"refillPerSecond":1}]}]}`, "checks[1].rules[0]: rule r: capacity -1"},
		{"check cost above capacity", `{"checks":[` + validCheck + `,{"key":"a","plan":"pro","cost":101}]}`, "checks[1].cost: 101 exceeds capacity 100 of rule burst"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			msg := refused(t, tc.payload)
			if !strings.HasPrefix(msg, tc.want) {
				t.Errorf("errorMessage %q\nwant it to start %q", msg, tc.want)
			}
			if strings.Contains(msg, "invalid: ") { // bucketgate.ErrInvalid's, which the field's path says already
				t.Errorf("errorMessage %q: want no \"invalid: \" in it", msg)
			}
		})
	}
}

// An invalid rule is told without bucketgate.ErrInvalid's "invalid: " after its path,
// and parse's error wraps bucketgate.ErrInvalid all the same.
func TestInvalidRuleWrapsErrInvalid(t *testing.T) {
	for name, payload := range map[string]string{
		"a bucket":                `{"key":"a","rules":[{"name":"r","capacity":0,"refillPerSecond":1}]}`,
		"a quota":                 `{"key":"a","rules":[{"name":"q","limit":0,"period":"day"}]}`,
		"a concurrency rule":      `{"key":"a","rules":[{"name":"a b","concurrency":1}]}`,
		"a rule of a batch check": `{"checks":[` + validCheck + `,{"key":"a","rules":[{"name":"r","capacity":-1,"refillPerSecond":1}]}]}`,
	} {
		t.Run(name, func(t *testing.T) {
			_, _, err := parse([]byte(payload), config.Default(), testSources(t))
			if !errors.Is(err, bucketgate.ErrInvalid) || strings.Contains(fmt.Sprint(err), "invalid: ") {
				t.Errorf("parse: %v: want bucketgate.ErrInvalid, told without \"invalid: \"", err)
			}
		})
	}
}

// An encoder that writes an absent value as null (Python's json of a None, a model that
// dumps every field) sends members that are null: each is refused naming the null member,
// never as what its presence would mean (an identity beside the key, a batch, a rule of
// another kind), which named another member or another mistake.
func TestNullMemberNamed(t *testing.T) {
	const want = ": got null: give a value, or leave the member out (no member is ever null)"
	tests := []struct {
		name    string
		payload string
		field   string // the member the error must name
	}{
		{"key", `{"key":null}`, "key"},
		{"identity beside a key", `{"key":"a","identity":null}`, "identity"},
		{"checks beside a check", `{"key":"a","checks":null}`, "checks"},
		{"every member of a model", `{"key":"a","identity":null,"op":null,"plan":"pro","rules":null,"cost":1}`, "identity"},
		{"cost", `{"key":"a","cost":null}`, "cost"},
		{"cost of a reset", `{"key":"a","op":"reset","cost":null}`, "cost"},
		{"from of a check", `{"key":"a","from":null}`, "from"},
		{"requestId of a peek", `{"key":"a","cost":0,"requestId":null}`, "requestId"},
		{"ttlMs of a check", `{"key":"a","ttlMs":null}`, "ttlMs"},
		{"lease of a cancel by its reservation alone", `{"op":"cancel","reservation":"r3.x","lease":null}`, "lease"},
		{"plan of a cancel by its reservation alone", `{"op":"cancel","reservation":"r3.x","plan":null}`, "plan"},
		{"concurrency of a bucket", `{"key":"a","rules":[{"name":"b","capacity":10,"refillPerSecond":1,"concurrency":null}]}`, "rules[0].concurrency"},
		{"quota members of a bucket", `{"key":"a","rules":[{"name":"b","capacity":10,"refillPerSecond":1,"limit":null,"period":null}]}`, "rules[0].limit"},
		{"shadow", `{"key":"a","rules":[{"name":"b","capacity":10,"refillPerSecond":1,"shadow":null}]}`, "rules[0].shadow"},
		{"plan of a check of a batch", `{"checks":[` + validCheck + `,{"key":"a","plan":null}]}`, "checks[1].plan"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			if msg := refused(t, tc.payload); msg != tc.field+want {
				t.Errorf("errorMessage %q\nwant %q", msg, tc.field+want)
			}
		})
	}
}

// An identity that is not one may be an API key sent by mistake: neither the error nor
// the log line quotes it, so that the key never rests in the function's logs.
func TestInvalidIdentityNeverQuoted(t *testing.T) {
	for name, key := range map[string]string{
		"a key after key:":    "key:bg_0123456789abcdefghijklmnopqrstuvwxyzABCDEFG",
		"a key alone":         "bg_0123456789abcdefghijklmnopqrstuvwxyzABCDEFG",
		"a key in a batch":    "key:my-secret-key",
		"a key after ip:":     "ip:" + madeKey,
		"a key after acct:":   "acct:" + madeKey,
		"a key in a tenant's": "tenant:Bearer " + madeKey,
		"a key in an acct:":   "acct:acme." + madeKey,
	} {
		t.Run(name, func(t *testing.T) {
			_, client := startMiniredis(t)
			f := newFixture(t, client, nil, guard.Options{})
			payload := `{"identity":"` + key + `"}`
			if name == "a key in a batch" {
				payload = `{"checks":[` + validCheck + `,` + payload + `]}`
			}
			_, err := f.invoke([]byte(payload))
			ive := functionError(t, err)
			secret := key[strings.LastIndexAny(key, ": .")+1:]
			if strings.Contains(ive.Message, secret) || strings.Contains(f.logs.String(), secret) || !strings.Contains(ive.Message, "identity: ") {
				t.Fatalf("error %q and logs %s: want the identity field named and its value quoted nowhere", ive.Message, f.logs)
			}
		})
	}
}

// maxPayload is the largest payload Lambda takes in a synchronous invocation: 6 MB.
const maxPayload = 6 << 20

// A payload of Lambda's largest size whose array holds millions of elements is refused
// for its length, naming it, in a small share of the function's 256 MB: every
// element's text was held (24 bytes each, and the copies of the growing list), past
// 300 MB, and Lambda ended the invocation out of memory instead of the error.
func TestHugeArrayRefusedInLittleMemory(t *testing.T) {
	for _, tc := range []struct {
		name           string
		prefix, suffix string
		want           string // the error, with %d the number of elements
	}{
		{"checks", `{"checks":[`, `]}`, "checks: %d checks: want 1 to 100 per call"},
		{"rules", `{"key":"a","rules":[`, `]}`, "rules: %d rules: want 1 to 8, or a plan"},
		{"rules of a check of a batch", `{"checks":[{"key":"a","rules":[`, `]}]}`, "checks[0].rules: %d rules: want 1 to 8, or a plan"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			n := (maxPayload - len(tc.prefix) - len(tc.suffix) + 1) / 2 // elements "0,"
			payload := []byte(tc.prefix + strings.Repeat("0,", n-1) + "0" + tc.suffix)
			_, client := startMiniredis(t)
			f := newFixture(t, client, nil, guard.Options{})
			var before, after runtime.MemStats
			runtime.ReadMemStats(&before)
			_, err := f.invoke(payload)
			runtime.ReadMemStats(&after)
			if ive, want := functionError(t, err), fmt.Sprintf(tc.want, n); ive.Message != want {
				t.Errorf("error %q, want %q", ive.Message, want)
			}
			if got := after.TotalAlloc - before.TotalAlloc; got > 64<<20 {
				t.Errorf("allocated %d MB for a payload of %d bytes: want under 64 MB, a quarter of the function's memory", got>>20, len(payload))
			}
		})
	}
}

// A name of the payload that is megabytes long (a field's, a plan's, an operation's, a
// rule's) is quoted in the error by its start alone: the error is the function's answer
// and a warn line, and quoted whole it made both as long as the payload (past 6 MB,
// Lambda's largest answer, with its escapes).
func TestInvalidRequestQuotesLittle(t *testing.T) {
	long := strings.Repeat(`\"`, 1<<20)
	tests := []struct {
		name    string
		payload string
		want    string // the error message starts with this
	}{
		{"unknown field", `{"key":"a","` + long + `":1}`, `"\"\"\"`},
		{"unknown field of a rule", `{"key":"a","rules":[{"name":"r","` + long + `":1}]}`, `rules[0]."\"\"`},
		{"field given twice", `{"checks":[{"key":"a","` + long + `":1,"` + long + `":2}]}`, `checks[0]."\"\"`},
		{"invalid JSON after a long name", `{"key":"a","rules":[{"` + long + `":{"a":tru}}]}`, `rules[0]."\"\"`},
		{"unknown plan", `{"key":"a","plan":"` + long + `"}`, `plan: unknown plan "\"\"`},
		{"unknown plan in a batch", `{"checks":[{"key":"a","plan":"` + long + `"}]}`, `checks[0].plan: unknown plan "\"\"`},
		{"unknown operation", `{"key":"a","op":"` + long + `"}`, `op: unknown operation "\"\"`},
		{"rule name", `{"key":"a","rules":[{"name":"` + long + `","capacity":1,"refillPerSecond":1}]}`, `rules[0]: name "\"\"`},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			_, client := startMiniredis(t)
			f := newFixture(t, client, nil, guard.Options{})
			_, err := f.invoke([]byte(tc.payload))
			ive := functionError(t, err)
			if !strings.HasPrefix(ive.Message, tc.want) || len(ive.Message) > 1024 {
				t.Errorf("error of %d bytes %.200q: want %q first, and at most 1 KB", len(ive.Message), ive.Message, tc.want)
			}
			if f.logs.Len() > 2048 {
				t.Errorf("logs of %d bytes: want at most 2 KB", f.logs.Len())
			}
		})
	}
}

// refused invokes a check function on payload and returns the message of its
// InvalidRequestError, failing t unless it is one and nothing was written or measured.
func refused(t *testing.T, payload string) string {
	t.Helper()
	mr, client := startMiniredis(t)
	f := newFixture(t, client, nil, guard.Options{})
	out, err := f.invoke([]byte(payload))
	if err == nil {
		t.Fatalf("answered %s, want an error", out)
	}
	ive := functionError(t, err)
	if ive.Type != checkapi.ErrorTypeInvalidRequest {
		t.Errorf("errorType %q, want %q", ive.Type, checkapi.ErrorTypeInvalidRequest)
	}
	if keys := mr.Keys(); len(keys) != 0 {
		t.Errorf("an invalid request wrote %v", keys)
	}
	if f.metrics.Len() != 0 {
		t.Errorf("an invalid request emitted metrics: %s", f.metrics)
	}
	return ive.Message
}
