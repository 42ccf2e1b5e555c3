package check

import (
	"testing"

	"github.com/bucketgate/bucketgate/checkapi"
	"github.com/bucketgate/bucketgate/internal/bucket"
)

// TestContractMatchesEngine holds the public contract's constants to the engine's.
func TestContractMatchesEngine(t *testing.T) {
	reasons := map[checkapi.Reason]bucket.Reason{
		checkapi.ReasonOK:          bucket.ReasonOK,
		checkapi.ReasonLimited:     bucket.ReasonLimited,
		checkapi.ReasonUnavailable: bucket.ReasonUnavailable,
		checkapi.ReasonDegraded:    bucket.ReasonDegraded,
	}
	for api, engine := range reasons {
		if string(api) != string(engine) {
			t.Errorf("checkapi reason %q is bucket reason %q", api, engine)
		}
	}
	if n := len(identityPrefix) + checkapi.MaxKey; n > bucket.MaxIdentity {
		t.Errorf("identityPrefix + checkapi.MaxKey = %d bytes, above bucket.MaxIdentity %d", n, bucket.MaxIdentity)
	}
}
