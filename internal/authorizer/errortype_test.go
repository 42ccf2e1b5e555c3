package authorizer

import (
	"context"
	"fmt"
	"testing"

	"github.com/bucketgate/bucketgate"
	"github.com/bucketgate/bucketgate/internal/guard"
	"github.com/bucketgate/bucketgate/internal/localgw"
	"github.com/bucketgate/bucketgate/internal/testkit/samples"
)

// refusing is a Guard whose Redis refuses every request as invalid, as the engine does
// a request it and the configuration disagree on (nothing the configuration loads
// makes one; an engine of another release might).
type refusing struct{ Guard }

func (refusing) Decide(context.Context, bucketgate.Request) (guard.Result, error) {
	return guard.Result{}, fmt.Errorf("%w: redis refused the request: ERR bucketgate: bad rule", bucketgate.ErrInvalid)
}

// Every error the authorizer returns to Lambda has an errorType that says what happened,
// as aws-lambda-go names it after the error's Go type: a refused identity's was
// "errorString" and an undecidable request's "wrapError", fmt's and errors' types. A
// refused identity's message stays exactly "Unauthorized", which API Gateway answers
// with 401.
func TestInvokeErrorTypes(t *testing.T) {
	refuse := mustParse(t, "defaultPlan: free\nunknownKeys: refuse\nanonymous: refuse\nplans:\n  free: [{name: burst, capacity: 10, refillPerSecond: 1}]\n")
	tests := []struct {
		name        string
		o           options
		undecidable bool
		wantType    string
		wantMessage string
	}{
		{"a refused identity", options{config: refuse}, false, "UnauthorizedError", "Unauthorized"},
		{"a request the engine refuses", options{}, true, "UndecidableError", "decide: invalid: redis refused the request: ERR bucketgate: bad rule"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			f := newFixture(t, tc.o)
			if tc.undecidable {
				f.h.Guard = refusing{f.h.Guard}
			}
			_, err := f.h.Invoke(context.Background(), samples.Read(t, restEvent))
			if err == nil {
				t.Fatal("no error")
			}
			if got := localgw.ErrorResponse(err); got.Type != tc.wantType || got.Message != tc.wantMessage {
				t.Errorf("errorType %q, errorMessage %q; want %q, %q", got.Type, got.Message, tc.wantType, tc.wantMessage)
			}
		})
	}
}
