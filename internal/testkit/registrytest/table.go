package registrytest

import (
	"encoding/json"
	"hash/crc32"
	"io"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/bucketgate/bucketgate/internal/registry"
)

// DynamoDB error types that FailingTable answers with: a table over its capacity (or
// an on-demand table past its throughput), which no local server produces (dynalite
// never throttles), a table that is not there (a deployment given the wrong name), and
// a request DynamoDB refuses as malformed (a version that builds it wrong).
const (
	Throttled = "ProvisionedThroughputExceededException"
	NotFound  = "ResourceNotFoundException"
	Malformed = "ValidationException"
)

// FailingTable returns the endpoint of a DynamoDB (AWS_ENDPOINT_URL_DYNAMODB, or a
// client's BaseEndpoint) that refuses every GetItem of an identity with the error
// errType (Throttled, NotFound, Malformed), as DynamoDB answers it, and counts those GetItems in
// gets; the configuration item (registry.ConfigID) it holds none of, so that the
// document in the functions' environment stays in force. Any other call is a 400 that
// names no DynamoDB error. The server ends with the test.
func FailingTable(t *testing.T, errType string) (endpoint string, gets *atomic.Int64) {
	t.Helper()
	gets = new(atomic.Int64)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		var in struct {
			Key map[string]struct{ S string }
		}
		if err := json.NewDecoder(r.Body).Decode(&in); err != nil || !strings.HasSuffix(r.Header.Get("X-Amz-Target"), ".GetItem") {
			http.Error(w, "not DynamoDB's GetItem", http.StatusBadRequest)
			return
		}
		w.Header().Set("Content-Type", "application/x-amz-json-1.0")
		if in.Key[registry.KeyAttribute].S == registry.ConfigID {
			answer(w, http.StatusOK, `{}`)
			return
		}
		gets.Add(1)
		answer(w, http.StatusBadRequest, `{"__type":"com.amazonaws.dynamodb.v20120810#`+errType+`","message":"injected by registrytest.FailingTable"}`)
	}))
	t.Cleanup(srv.Close)
	return srv.URL, gets
}

// answer writes the status and the JSON body, with the CRC32 checksum DynamoDB sends
// and the AWS SDK checks.
func answer(w http.ResponseWriter, status int, body string) {
	w.Header().Set("X-Amz-Crc32", strconv.FormatUint(uint64(crc32.ChecksumIEEE([]byte(body))), 10))
	w.WriteHeader(status)
	_, _ = io.WriteString(w, body)
}
