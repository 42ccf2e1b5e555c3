package check

import (
	"testing"

	"github.com/bucketgate/bucketgate"
	"github.com/bucketgate/bucketgate/checkapi"
)

// TestContractMatchesEngine holds the check function's identities within the engine's bound.
func TestContractMatchesEngine(t *testing.T) {
	if n := len(identityPrefix) + checkapi.MaxKey; n > bucketgate.MaxIdentity {
		t.Errorf("identityPrefix + checkapi.MaxKey = %d bytes, above bucketgate.MaxIdentity %d", n, bucketgate.MaxIdentity)
	}
}
