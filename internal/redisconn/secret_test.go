package redisconn_test

import (
	"context"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"

	"github.com/bucketgate/bucketgate/internal/redisconn"
	"github.com/bucketgate/bucketgate/internal/settings"
	"github.com/bucketgate/bucketgate/internal/testkit/redistest"
)

const secretRegion = "eu-west-1"

// secretsManager is a local HTTP server speaking the Secrets Manager JSON protocol for
// GetSecretValue, checking that requests are signed, and counting them.
type secretsManager struct {
	*httptest.Server
	calls atomic.Int32
	// answered counts the reads answered, calls those begun.
	answered atomic.Int32
	// stall, when set, holds every read until it is closed (or the read's client gives up).
	stall atomic.Pointer[chan struct{}]

	mu      sync.Mutex
	secrets map[string]map[string]any
}

// set replaces the response fields of secret id, as a rotation does.
func (sm *secretsManager) set(id string, fields map[string]any) {
	sm.mu.Lock()
	defer sm.mu.Unlock()
	sm.secrets[id] = fields
}

// startSecretsManager serves secrets: id -> the GetSecretValue response fields.
func startSecretsManager(t *testing.T, secrets map[string]map[string]any) *secretsManager {
	t.Helper()
	sm := &secretsManager{secrets: secrets}
	sm.Server = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		sm.calls.Add(1)
		defer sm.answered.Add(1)
		auth := r.Header.Get("Authorization")
		if r.Method != http.MethodPost || r.Header.Get("X-Amz-Target") != "secretsmanager.GetSecretValue" ||
			!strings.HasPrefix(auth, "AWS4-HMAC-SHA256 Credential=AKIDSECRET/") || !strings.Contains(auth, "/"+secretRegion+"/secretsmanager/aws4_request") {
			t.Errorf("unexpected request: %s %s target %q auth %q", r.Method, r.URL, r.Header.Get("X-Amz-Target"), auth)
			http.Error(w, "bad request", http.StatusBadRequest)
			return
		}
		if stall := sm.stall.Load(); stall != nil {
			select {
			case <-*stall:
			case <-r.Context().Done():
				return
			}
		}
		body, _ := io.ReadAll(r.Body)
		var in struct{ SecretId string }
		if err := json.Unmarshal(body, &in); err != nil {
			t.Errorf("request body %q: %v", body, err)
		}
		w.Header().Set("Content-Type", "application/x-amz-json-1.1")
		sm.mu.Lock()
		defer sm.mu.Unlock()
		out, ok := sm.secrets[in.SecretId]
		if !ok {
			w.WriteHeader(http.StatusBadRequest)
			_ = json.NewEncoder(w).Encode(map[string]string{"__type": "ResourceNotFoundException", "message": "Secrets Manager can't find the specified secret."})
			return
		}
		out["ARN"], out["Name"] = in.SecretId, in.SecretId
		_ = json.NewEncoder(w).Encode(out)
	}))
	t.Cleanup(sm.Close)
	return sm
}

func (sm *secretsManager) awsConfig() aws.Config {
	return aws.Config{
		Region:       secretRegion,
		BaseEndpoint: aws.String(sm.URL),
		Credentials: aws.CredentialsProviderFunc(func(context.Context) (aws.Credentials, error) {
			return aws.Credentials{AccessKeyID: "AKIDSECRET", SecretAccessKey: "secret"}, nil
		}),
	}
}

// whoami returns the ACL user a client's connection authenticated as.
func whoami(t *testing.T, s settings.Settings, opts ...redisconn.Option) string {
	t.Helper()
	c, err := redisconn.New(s, opts...)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	client, err := c.Client(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	user, err := client.Do(context.Background(), client.B().AclWhoami().Build()).ToString()
	if err != nil {
		t.Fatal(err)
	}
	return user
}

func TestPasswordFromSecretsManager(t *testing.T) {
	srv := redistest.Start(t, redistest.ACLUser("alice", "s3cret")...)
	const (
		plain   = "arn:aws:secretsmanager:eu-west-1:123456789012:secret:plain-AbCdEf"
		rotated = "arn:aws:secretsmanager:eu-west-1:123456789012:secret:rotated-AbCdEf"
		noPass  = "arn:aws:secretsmanager:eu-west-1:123456789012:secret:nopass-AbCdEf"
		binary  = "arn:aws:secretsmanager:eu-west-1:123456789012:secret:binary-AbCdEf"
		badJSON = "arn:aws:secretsmanager:eu-west-1:123456789012:secret:badjson-AbCdEf"
		numeric = "arn:aws:secretsmanager:eu-west-1:123456789012:secret:numeric-AbCdEf"
		missing = "arn:aws:secretsmanager:eu-west-1:123456789012:secret:missing-AbCdEf"
		stale   = "arn:aws:secretsmanager:eu-west-1:123456789012:secret:stale-AbCdEf"
		newline = "arn:aws:secretsmanager:eu-west-1:123456789012:secret:newline-AbCdEf"
		crlf    = "arn:aws:secretsmanager:eu-west-1:123456789012:secret:crlf-AbCdEf"
		eol     = "arn:aws:secretsmanager:eu-west-1:123456789012:secret:eol-AbCdEf"
	)
	sm := startSecretsManager(t, map[string]map[string]any{
		plain:   {"SecretString": "s3cret"},
		rotated: {"SecretString": `{"username":"alice","password":"s3cret","user_arn":"arn:aws:elasticache:eu-west-1:123456789012:user:alice"}`},
		noPass:  {"SecretString": `{"username":"alice"}`},
		binary:  {"SecretBinary": "czNjcmV0"},
		badJSON: {"SecretString": `{"password": s3cret}`},
		numeric: {"SecretString": `{"username":"alice","password":12345678}`},
		stale:   {"SecretString": `{"username":"alice","password":"rotated-away"}`},
		newline: {"SecretString": "s3cret\n"},
		crlf:    {"SecretString": "s3cret\r\n"},
		eol:     {"SecretString": "\n"},
	})

	// A plain secret uploaded from a file (--secret-string file://...) ends with the
	// file's line ending, which no password of ElastiCache holds.
	for _, tc := range []struct{ name, id string }{
		{"plain secret with REDIS_USERNAME", plain},
		{"plain secret with a trailing newline", newline},
		{"plain secret with a trailing CRLF", crlf},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s := redistest.Settings(t, map[string]string{"REDIS_ADDR": srv.Addr, "REDIS_USERNAME": "alice", "REDIS_PASSWORD_SECRET_ARN": tc.id})
			if got := whoami(t, s, redisconn.WithAWSConfig(sm.awsConfig())); got != "alice" {
				t.Fatalf("authenticated as %q", got)
			}
		})
	}
	t.Run("JSON secret names the user", func(t *testing.T) {
		before := sm.calls.Load()
		s := redistest.Settings(t, map[string]string{"REDIS_ADDR": srv.Addr, "REDIS_PASSWORD_SECRET_ARN": rotated})
		if got := whoami(t, s, redisconn.WithAWSConfig(sm.awsConfig())); got != "alice" {
			t.Fatalf("authenticated as %q", got)
		}
		if n := sm.calls.Load() - before; n != 1 {
			t.Fatalf("%d Secrets Manager calls for one client, want 1 (read once at init)", n)
		}
	})
	for _, tc := range []struct{ name, id, want string }{
		{"missing secret", missing, "ResourceNotFoundException"},
		{"JSON without password", noPass, `no "password"`},
		{"binary secret", binary, "binary secrets are not supported"},
		{"malformed JSON", badJSON, "not a JSON object"},
		{"password not a string", numeric, `its "password" is not a string`},
		{"password Redis refuses", stale, "WRONGPASS"},
		{"a line ending alone", eol, "it is empty"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s := redistest.Settings(t, map[string]string{"REDIS_ADDR": srv.Addr, "REDIS_PASSWORD_SECRET_ARN": tc.id})
			_, err := redisconn.New(s, redisconn.WithAWSConfig(sm.awsConfig()))
			if err == nil || !strings.Contains(err.Error(), tc.want) || !strings.Contains(err.Error(), "REDIS_PASSWORD_SECRET_ARN") || !strings.Contains(err.Error(), tc.id) {
				t.Fatalf("error %v: want one naming the variable, the secret and %q", err, tc.want)
			}
			if strings.Contains(err.Error(), "s3cret") {
				t.Fatalf("error %v quotes the secret", err)
			}
		})
	}
}

// TestPasswordRotation: an instance that read the password secret at init, whose
// connection Redis closes after a rotation (here CLIENT KILL, as a failover or
// maintenance does), authenticates its new connection with the secret's new password,
// reading the secret again at most once per SecretRecheck, by the clock passed in.
func TestPasswordRotation(t *testing.T) {
	const id = "arn:aws:secretsmanager:eu-west-1:123456789012:secret:rotating-AbCdEf"
	secret := func(password string) map[string]any {
		return map[string]any{"SecretString": `{"username":"alice","password":"` + password + `"}`}
	}
	tests := []struct {
		name string
		// secretFirst: Secrets Manager has the new password before Redis does
		// (else Redis refuses the old one for a while first, as when a rotation
		// changes the user before it finishes the secret).
		secretFirst bool
	}{
		{"secret then Redis", true},
		{"Redis then secret", false},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			// The default user stays on, for the test's ACL commands.
			srv := redistest.Start(t, "--user", "alice", "on", ">old-password", "~*", "&*", "+@all")
			sm := startSecretsManager(t, map[string]map[string]any{id: secret("old-password")})
			var clock atomic.Int64
			clock.Store(time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC).UnixNano())
			now := func() time.Time { return time.Unix(0, clock.Load()) }
			advance := func(d time.Duration) { clock.Add(int64(d)) }

			s := redistest.Settings(t, map[string]string{"REDIS_ADDR": srv.Addr, "REDIS_PASSWORD_SECRET_ARN": id})
			c, err := redisconn.New(s, redisconn.WithAWSConfig(sm.awsConfig()), redisconn.WithClock(now))
			if err != nil {
				t.Fatal(err)
			}
			defer c.Close()
			if err := ping(context.Background(), c); err != nil {
				t.Fatal(err)
			}
			rotateRedis := func() {
				if _, err := srv.Command(context.Background(), "ACL", "SETUSER", "alice", "resetpass", ">new-password"); err != nil {
					t.Fatal(err)
				}
			}
			if tc.secretFirst {
				sm.set(id, secret("new-password"))
				rotateRedis()
			} else {
				rotateRedis()
			}
			if _, err := srv.Command(context.Background(), "CLIENT", "KILL", "USER", "alice"); err != nil {
				t.Fatal(err)
			}
			_ = ping(context.Background(), c) // finds the connection closed (EOF), or a new one refused

			before := sm.calls.Load()
			advance(redisconn.SecretRecheck - time.Second)
			// A new connection within SecretRecheck of the last read uses the
			// password read then: Redis refuses it, and nothing asks Secrets Manager.
			for range 3 {
				if err := ping(context.Background(), c); err == nil || !strings.Contains(err.Error(), "WRONGPASS") {
					t.Fatalf("ping with the old password: %v, want WRONGPASS", err)
				}
			}
			if n := sm.calls.Load() - before; n != 0 {
				t.Fatalf("%d Secrets Manager calls within %v of the last read, want 0", n, redisconn.SecretRecheck)
			}
			if !tc.secretFirst {
				advance(time.Second)
				for range 3 { // the secret read again still has the old password
					if err := ping(context.Background(), c); err == nil || !strings.Contains(err.Error(), "WRONGPASS") {
						t.Fatalf("ping with the old password: %v, want WRONGPASS", err)
					}
				}
				answered(t, sm, before+1) // the read the first refused connection began, beside it
				if n := sm.calls.Load() - before; n != 1 {
					t.Fatalf("%d Secrets Manager calls for 3 refused connections, want 1", n)
				}
				sm.set(id, secret("new-password"))
				before = sm.calls.Load()
				advance(redisconn.SecretRecheck - time.Second)
			}
			advance(time.Second)
			// The first connection made now begins the read of the secret beside it,
			// with the copy it holds; one made once the read is done has the new password.
			for i := 0; ; i++ {
				err := ping(context.Background(), c)
				if err == nil {
					break
				}
				if !strings.Contains(err.Error(), "WRONGPASS") || i == maxRefusals {
					t.Fatalf("ping %d, %v after the rotation: %v", i+1, redisconn.SecretRecheck, err)
				}
				answered(t, sm, before+1)
			}
			for range 3 {
				if err := ping(context.Background(), c); err != nil {
					t.Fatal(err)
				}
			}
			if n := sm.calls.Load() - before; n != 1 {
				t.Fatalf("%d Secrets Manager calls, want 1", n)
			}
			client, err := c.Client(context.Background())
			if err != nil {
				t.Fatal(err)
			}
			if user, err := client.Do(context.Background(), client.B().AclWhoami().Build()).ToString(); err != nil || user != "alice" {
				t.Fatalf("authenticated as %q (%v), want alice", user, err)
			}
		})
	}
}

// maxRefusals bounds the connections Redis refuses after a rotation, while the read of
// the secret that the first of them began goes on.
const maxRefusals = 3

// answered waits until sm has answered n reads, and fails t if that does not come.
func answered(t *testing.T, sm *secretsManager, n int32) {
	t.Helper()
	reached(t, &sm.answered, n, "reads of the secret answered")
}

// reached waits until count is n or more, and fails t, saying what it counts, if that
// does not come.
func reached(t *testing.T, count *atomic.Int32, n int32, what string) {
	t.Helper()
	for range 1000 {
		if count.Load() >= n {
			return
		}
		time.Sleep(10 * time.Millisecond)
	}
	t.Fatalf("%d %s, want %d", count.Load(), what, n)
}

// A new connection is never held by a read of the secret: it authenticates with the
// copy at once, and a copy SecretRecheck old is read again beside it, for the
// connections after. A stalled Secrets Manager held the call that made the connection
// for up to ConnectTimeout, past the deadline of the decision that waited for it
// (REDIS_TIMEOUT_MS, the invocation's), which failed closed though Redis was well.
func TestSecretReadHoldsNoConnection(t *testing.T) {
	const id = "arn:aws:secretsmanager:eu-west-1:123456789012:secret:stalled-AbCdEf"
	srv, sm, clock, c := aliceBySecret(t, id)
	stall := make(chan struct{})
	sm.stall.Store(&stall)
	defer close(stall) // before the server closes, which waits for the stalled reads
	before := sm.calls.Load()
	clock.Add(int64(redisconn.SecretRecheck)) // the copy is due to be read again
	if _, err := srv.Command(context.Background(), "CLIENT", "KILL", "USER", "alice"); err != nil {
		t.Fatal(err)
	}
	// A decision's deadline, shorter than the read's (ConnectTimeout): the call that
	// makes the new connection must not wait for the read.
	deadline := redisconn.ConnectTimeout / 2
	var errs []error
	for range 3 { // the first may find the old connection closed (EOF)
		ctx, cancel := context.WithTimeout(context.Background(), deadline)
		err := ping(ctx, c)
		cancel()
		if err == nil {
			break
		}
		errs = append(errs, err)
	}
	for _, err := range errs {
		if errors.Is(err, context.DeadlineExceeded) {
			t.Fatalf("a ping within %v: %v: the new connection waited for Secrets Manager", deadline, err)
		}
	}
	if len(errs) == 3 {
		t.Fatalf("no ping answered: %v", errs)
	}
	reached(t, &sm.calls, before+1, "reads of the secret begun") // beside the new connection
	if n := sm.calls.Load() - before; n != 1 {
		t.Fatalf("%d reads of the secret for the new connection, want 1", n)
	}
}

// TestSecretReadAfterClockBack: a clock that went back (NTP) since the password secret
// was read makes the next new connection read it again beside it, as a copy
// SecretRecheck old does: the copy was kept for as long as the step, and a rotated
// password refused meanwhile at every new connection.
func TestSecretReadAfterClockBack(t *testing.T) {
	const id = "arn:aws:secretsmanager:eu-west-1:123456789012:secret:stepped-AbCdEf"
	tests := []struct {
		name string
		step time.Duration // of the clock after the read at init
	}{
		{"SecretRecheck later", redisconn.SecretRecheck},
		{"a second back", -time.Second},
		{"an hour back", -time.Hour},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			srv, sm, clock, c := aliceBySecret(t, id)
			before := sm.calls.Load()
			clock.Add(int64(tt.step))
			if _, err := srv.Command(context.Background(), "CLIENT", "KILL", "USER", "alice"); err != nil {
				t.Fatal(err)
			}
			for i := range 3 { // the first may find the old connection closed (EOF)
				if err := ping(context.Background(), c); err == nil {
					break
				} else if i == 2 {
					t.Fatalf("no ping answered: %v", err)
				}
			}
			reached(t, &sm.calls, before+1, "reads of the secret begun") // beside the new connection
		})
	}
}

// aliceBySecret starts a server with the user alice (the default user stays on, for a
// test's CLIENT KILL) and a Secrets Manager holding her password under id, and returns
// them, the connection's clock (Unix ns) and the connection, pinged once; it closes the
// connection when t ends.
func aliceBySecret(t *testing.T, id string) (*redistest.Server, *secretsManager, *atomic.Int64, *redisconn.Conn) {
	t.Helper()
	srv := redistest.Start(t, "--user", "alice", "on", ">s3cret", "~*", "&*", "+@all")
	sm := startSecretsManager(t, map[string]map[string]any{id: {"SecretString": `{"username":"alice","password":"s3cret"}`}})
	clock := new(atomic.Int64)
	clock.Store(time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC).UnixNano())
	now := func() time.Time { return time.Unix(0, clock.Load()) }
	c, err := redisconn.New(redistest.Settings(t, map[string]string{"REDIS_ADDR": srv.Addr, "REDIS_PASSWORD_SECRET_ARN": id}),
		redisconn.WithAWSConfig(sm.awsConfig()), redisconn.WithClock(now))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(c.Close)
	if err := ping(context.Background(), c); err != nil {
		t.Fatal(err)
	}
	return srv, sm, clock, c
}
