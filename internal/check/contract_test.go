package check

import (
	"testing"

	"github.com/bucketgate/bucketgate"
	"github.com/bucketgate/bucketgate/checkapi"
)

// TestContractMatchesEngine holds the public contract's constants to the engine's.
func TestContractMatchesEngine(t *testing.T) {
	reasons := map[checkapi.Reason]bucketgate.Reason{
		checkapi.ReasonOK:          bucketgate.ReasonOK,
		checkapi.ReasonLimited:     bucketgate.ReasonLimited,
		checkapi.ReasonUnavailable: bucketgate.ReasonUnavailable,
		checkapi.ReasonDegraded:    bucketgate.ReasonDegraded,
	}
	for api, engine := range reasons {
		if string(api) != string(engine) {
			t.Errorf("checkapi reason %q is bucket reason %q", api, engine)
		}
	}
	if n := len(identityPrefix) + checkapi.MaxKey; n > bucketgate.MaxIdentity {
		t.Errorf("identityPrefix + checkapi.MaxKey = %d bytes, above bucketgate.MaxIdentity %d", n, bucketgate.MaxIdentity)
	}
}
