package check

import (
	"encoding/json"
	"errors"
	"testing"

	"github.com/aws/aws-lambda-go/lambda/messages"

	"github.com/bucketgate/bucketgate/checkapi"
	"github.com/bucketgate/bucketgate/internal/guard"
)

// FuzzHandler: any payload through the whole handler (parsing, plans, the decisions on
// miniredis, holds and leases, the answer) is answered with a JSON object, or fails with
// a function error of a documented type whose message says what; nothing panics. The
// seeds are FuzzParse's.
func FuzzHandler(f *testing.F) {
	addPayloadSeeds(f)
	_, client := startMiniredis(f)
	fx := newFixture(f, client, nil, guard.Options{})
	f.Fuzz(func(t *testing.T, payload []byte) {
		out, err := fx.invoke(payload)
		if err != nil {
			var fe messages.InvokeResponse_Error
			switch {
			case !errors.As(err, &fe):
				t.Fatalf("error %v (%T): want a function error", err, err)
			case fe.Type != checkapi.ErrorTypeInvalidRequest && fe.Type != checkapi.ErrorTypeConflict && fe.Type != checkapi.ErrorTypeUnavailable:
				t.Fatalf("function error of type %q: %s", fe.Type, fe.Message)
			case fe.Message == "":
				t.Fatalf("function error %q with no message", fe.Type)
			}
			return
		}
		var answer map[string]json.RawMessage
		if err := json.Unmarshal(out, &answer); err != nil {
			t.Fatalf("answer %s: not a JSON object: %v", out, err)
		}
	})
}
