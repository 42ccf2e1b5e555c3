package check

import (
	"cmp"
	"strings"
	"testing"

	"github.com/bucketgate/bucketgate/checkapi"
	"github.com/bucketgate/bucketgate/internal/guard"
)

// An API key bucketgate made, given as a check's operation, plan, rule name, period,
// usage day, reservation or lease, is refused naming the field, never quoted: the errors
// about them quoted it (an unknown operation or plan, a day or period misspelled, a
// reservation or lease the limiter did not make), and the function logs its refusals,
// so the key rested in its logs; a rule so named was taken, and rested in Redis's hash
// fields, the decision's log lines and the metrics' dimensions. As a requestId it is
// taken, for it rests nowhere: the record of a requestId is named by a digest of it, and
// no error or log line quotes it.
func TestMadeKeyInOtherFields(t *testing.T) {
	const lease = `"rules":[{"name":"c","concurrency":2}]`
	tests := []struct {
		name, payload string
		want          string // the error starts with it; "" for none
	}{
		{"a plan", `{"key":"tenant-1","plan":"` + madeKey + `"}`, "plan: an API key bucketgate made (bg_...)"},
		{"a plan holding one", `{"key":"tenant-1","plan":"acme/` + madeKey + `"}`, "plan: holds an API key bucketgate made (bg_...)"},
		{"a settle's reservation", `{"key":"tenant-1","plan":"pro","op":"settle","cost":1,"reservation":"` + madeKey + `"}`, "reservation: an API key bucketgate made (bg_...)"},
		{"a cancel's reservation alone", `{"op":"cancel","reservation":"` + madeKey + `"}`, "reservation: an API key bucketgate made (bg_...)"},
		{"a release's lease", `{"key":"tenant-1",` + lease + `,"op":"release","lease":"` + madeKey + `"}`, "lease: an API key bucketgate made (bg_...)"},
		{"a release's lease alone", `{"op":"release","lease":"Bearer ` + madeKey + `"}`, "lease: holds an API key bucketgate made (bg_...)"},
		{"a batch's reservation", `{"checks":[` + validCheck + `,{"key":"tenant-1","plan":"pro","op":"cancel","reservation":"` + madeKey + `"}]}`, "checks[1].reservation: an API key bucketgate made (bg_...)"},
		{"an operation", `{"key":"tenant-1","plan":"pro","op":"` + madeKey + `"}`, "op: an API key bucketgate made (bg_...)"},
		{"a rule's name", `{"key":"tenant-1","rules":[{"name":"` + madeKey + `","capacity":10,"refillPerSecond":1}]}`, "rules[0].name: an API key bucketgate made (bg_...)"},
		{"a concurrency rule's name", `{"key":"tenant-1","rules":[{"name":"` + madeKey + `","concurrency":1}]}`, "rules[0].name: an API key bucketgate made (bg_...)"},
		{"a quota's period", `{"key":"tenant-1","rules":[{"name":"q","limit":10,"period":"` + madeKey + `"}]}`, "rules[0].period: an API key bucketgate made (bg_...)"},
		{"a usage's first day", `{"key":"tenant-1","op":"usage","from":"` + madeKey + `"}`, "from: an API key bucketgate made (bg_...)"},
		{"a usage's last day", `{"key":"tenant-1","op":"usage","to":"day ` + madeKey + `"}`, "to: holds an API key bucketgate made (bg_...)"},
		{"a requestId", `{"key":"tenant-1","plan":"pro","requestId":"` + madeKey + `"}`, ""},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			mr, client := startMiniredis(t)
			f := newFixture(t, client, nil, guard.Options{})
			out, err := f.invoke([]byte(tc.payload))
			msg := string(out)
			if err != nil {
				ive := functionError(t, err)
				msg = ive.Type + ": " + ive.Message
				if tc.want == "" || ive.Type != checkapi.ErrorTypeInvalidRequest || !strings.HasPrefix(ive.Message, tc.want) {
					t.Errorf("error %s\nwant %s", msg, cmp.Or(tc.want, "none"))
				}
			} else if tc.want != "" {
				t.Errorf("answered %s, want an %s starting %q", out, checkapi.ErrorTypeInvalidRequest, tc.want)
			}
			var stored strings.Builder
			for _, k := range mr.Keys() {
				stored.WriteString(k + "\n" + mr.Dump())
			}
			if everything := msg + f.logs.String() + stored.String(); strings.Contains(everything, madeKey[3:3+16]) {
				t.Errorf("the key is in the answer, the logs or Redis:\n%s", everything)
			}
		})
	}
}
