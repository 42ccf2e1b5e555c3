package check

import (
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/bucketgate/bucketgate/checkapi"
	"github.com/bucketgate/bucketgate/internal/guard"
	"github.com/bucketgate/bucketgate/internal/testkit/redistest"
)

// TestHoldsAsTheDesignStatesThem holds the check function to round 3's leases and
// idempotent checks where no other test does, on a real server: a reservation holds
// 300000 ms by default and 3600000 at most; cancelling twice, or settling what was
// cancelled, answers the first outcome and changes nothing; a reserve or an acquire
// sent again with its requestId answers the first decision, its reservation or lease
// and expiry included, and takes nothing more; a requestId is 1 to 128 bytes.
func TestHoldsAsTheDesignStatesThem(t *testing.T) {
	srv := redistest.Start(t)
	f := newFixture(t, redistest.Client(t, srv.Addr), nil, guard.Options{})
	slow := `{"key":"llm","rules":[` + slowRule + `]`
	left := func() int64 {
		t.Helper()
		return decodeResponse(t, f.invokeOK(t, []byte(slow+`,"cost":0}`))).Remaining
	}
	expiry := func(r checkapi.Response) time.Time {
		t.Helper()
		exp, err := time.Parse(time.RFC3339, r.ExpiresAt)
		if err != nil {
			t.Fatalf("expiresAt of %+v: %v", r, err)
		}
		return exp
	}

	for _, tc := range []struct {
		name, ttl string
		holds     time.Duration
	}{{"default", "", 300 * time.Second}, {"longest", `,"ttlMs":3600000`, time.Hour}} {
		before := time.Now()
		r := decodeResponse(t, f.invokeOK(t, []byte(slow+`,"op":"reserve","cost":1`+tc.ttl+`}`)))
		after := time.Now()
		if exp := expiry(r); !r.Allowed || r.Reservation == "" || exp.Before(before.Add(tc.holds-time.Millisecond)) || exp.After(after.Add(tc.holds+time.Millisecond)) {
			t.Fatalf("a reserve of the %s ttl = %+v: want a reservation held %v", tc.name, r, tc.holds)
		}
		f.invokeOK(t, []byte(fmt.Sprintf(`%s,"op":"cancel","reservation":%q}`, slow, r.Reservation)))
	}

	r := decodeResponse(t, f.invokeOK(t, []byte(slow+`,"op":"reserve","cost":4}`)))
	cancel := []byte(fmt.Sprintf(`%s,"op":"cancel","reservation":%q}`, slow, r.Reservation))
	first := decodeResponse(t, f.invokeOK(t, cancel))
	if !first.Allowed || first.Replayed || first.Remaining != 10 {
		t.Fatalf("cancel = %+v: want the estimate back, 10 left", first)
	}
	for _, tc := range []struct {
		name    string
		payload []byte
	}{
		{"cancelled again", cancel},
		{"settled after its cancel", []byte(fmt.Sprintf(`%s,"op":"settle","reservation":%q,"cost":9}`, slow, r.Reservation))},
	} {
		again := decodeResponse(t, f.invokeOK(t, tc.payload))
		if !again.Replayed || again.Settled != 0 || again.Remaining != first.Remaining || left() != 10 {
			t.Fatalf("%s = %+v, %d left: want the cancel's outcome again (settled at 0), nothing taken", tc.name, again, left())
		}
	}

	reserve := []byte(slow + `,"op":"reserve","cost":3,"requestId":"job-1"}`)
	r = decodeResponse(t, f.invokeOK(t, reserve))
	if again := decodeResponse(t, f.invokeOK(t, reserve)); !again.Replayed || again.Reservation != r.Reservation || again.ExpiresAt != r.ExpiresAt || left() != 7 {
		t.Fatalf("a reserve sent again = %+v (first %+v), %d left: want its reservation again, 7 left", again, r, left())
	}
	streams := `{"key":"llm","rules":[{"name":"streams","concurrency":2},` + slowRule + `]`
	acquire := []byte(streams + `,"requestId":"stream-1"}`)
	a := decodeResponse(t, f.invokeOK(t, acquire))
	again := decodeResponse(t, f.invokeOK(t, acquire))
	peek := decodeResponse(t, f.invokeOK(t, []byte(streams+`,"cost":0}`)))
	if a.Lease == "" || !again.Replayed || again.Lease != a.Lease || again.ExpiresAt != a.ExpiresAt || peek.Rules[0].Remaining != 1 || peek.Rules[1].Remaining != 6 {
		t.Fatalf("an acquire sent again = %+v (first %+v), then %+v: want its lease again, one lease and one token taken", again, a, peek.Rules)
	}

	for _, tc := range []struct {
		name, id, want string
	}{
		{"128 bytes", strings.Repeat("é", 64), ""},
		{"empty", "", "requestId: 0 bytes: want 1 to 128"},
		{"129 bytes", "x" + strings.Repeat("é", 64), "requestId: 129 bytes: want 1 to 128"},
	} {
		out, err := f.invoke([]byte(slow + `,"requestId":"` + tc.id + `"}`))
		switch {
		case tc.want == "" && (err != nil || !decodeResponse(t, out).Allowed):
			t.Errorf("a requestId of %s: %s, %v; want it decided", tc.name, out, err)
		case tc.want != "" && (err == nil || functionError(t, err).Type != checkapi.ErrorTypeInvalidRequest || !strings.Contains(functionError(t, err).Message, tc.want)):
			t.Errorf("a requestId of %s: %s, %v; want an invalid request: %s", tc.name, out, err, tc.want)
		}
	}
}
