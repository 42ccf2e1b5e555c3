package redisconn_test

import (
	"context"
	"errors"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/redis/rueidis"

	"github.com/bucketgate/bucketgate/internal/guard"
	"github.com/bucketgate/bucketgate/internal/redisconn"
	"github.com/bucketgate/bucketgate/internal/testkit/redistest"
)

// slack bounds how long an operation that should be quick may take on a loaded
// machine: generous, it only catches an operation that waits for something it should not.
const slack = 2 * time.Second

// ping sends PING through the client conn hands out.
func ping(ctx context.Context, conn *redisconn.Conn) error {
	c, err := conn.Client(ctx)
	if err != nil {
		return err
	}
	return c.Do(ctx, c.B().Ping().Build()).Error()
}

func TestNoAddress(t *testing.T) {
	if _, err := redisconn.New(redistest.Settings(t, nil)); !errors.Is(err, redisconn.ErrNoAddress) {
		t.Fatalf("error %v, want ErrNoAddress", err)
	}
}

func TestTLS(t *testing.T) {
	srv, ca := redistest.StartTLS(t, redistest.ACLUser("app", "pw")...)
	env := map[string]string{"REDIS_ADDR": srv.Addr, "REDIS_TLS": "true", "REDIS_USERNAME": "app", "REDIS_PASSWORD": "pw"}

	t.Run("trusted CA", func(t *testing.T) {
		if got := whoami(t, redistest.Settings(t, env), redisconn.WithRootCAs(ca.Pool)); got != "app" {
			t.Fatalf("authenticated as %q over TLS", got)
		}
	})
	// A server that refuses the IAM token (here: any Redis, which knows no IAM) is an
	// init error naming the user id, the cache the token was signed for, and the kind
	// of cache it was signed as (a token of the other kind is refused too).
	for _, serverless := range []string{"false", "true"} {
		t.Run("refused IAM token, REDIS_SERVERLESS="+serverless, func(t *testing.T) {
			iam := redistest.Settings(t, map[string]string{"REDIS_ADDR": srv.Addr, "REDIS_TLS": "true", "REDIS_IAM_AUTH": "true",
				"REDIS_USERNAME": "app", "REDIS_CACHE_NAME": "orders-cache", "REDIS_SERVERLESS": serverless})
			creds := aws.CredentialsProviderFunc(func(context.Context) (aws.Credentials, error) {
				return aws.Credentials{AccessKeyID: "AKIDEXAMPLE", SecretAccessKey: "wJalrXUtnFEMI/K7MDENG+bPxRfiCYEXAMPLEKEY"}, nil
			})
			_, err := redisconn.New(iam, redisconn.WithRootCAs(ca.Pool), redisconn.WithAWSConfig(aws.Config{Region: "us-east-1", Credentials: creds}))
			if err == nil || !strings.Contains(err.Error(), "WRONGPASS") || !strings.Contains(err.Error(), "REDIS_USERNAME") ||
				!strings.Contains(err.Error(), "REDIS_CACHE_NAME") || !strings.Contains(err.Error(), "orders-cache") ||
				!strings.Contains(err.Error(), "REDIS_SERVERLESS="+serverless) || !strings.Contains(err.Error(), "the function's or the service's") {
				t.Fatalf("error %v: want WRONGPASS naming REDIS_USERNAME, REDIS_CACHE_NAME orders-cache, REDIS_SERVERLESS=%s, and the role of a function or a service", err, serverless)
			}
		})
	}
	t.Run("unknown CA is an init error", func(t *testing.T) {
		_, err := redisconn.New(redistest.Settings(t, env))
		if err == nil || !strings.Contains(err.Error(), "certificate") || !strings.Contains(err.Error(), srv.Addr) ||
			!strings.Contains(err.Error(), "REDIS_TLS") || !strings.Contains(err.Error(), "REDIS_ADDR") {
			t.Fatalf("error %v: want a certificate error naming %s, REDIS_TLS and REDIS_ADDR", err, srv.Addr)
		}
	})
}

func TestACL(t *testing.T) {
	srv := redistest.Start(t, redistest.ACLUser("alice", "s3cret")...)
	tests := []struct {
		name, user, password, wantErr string
	}{
		{"right password", "alice", "s3cret", ""},
		{"wrong password", "alice", "guess", "WRONGPASS"},
		{"unknown user", "mallory", "s3cret", "WRONGPASS"},
		{"no credentials", "", "", "NOAUTH"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			s := redistest.Settings(t, map[string]string{"REDIS_ADDR": srv.Addr, "REDIS_USERNAME": tc.user, "REDIS_PASSWORD": tc.password})
			if tc.wantErr == "" {
				if got := whoami(t, s); got != tc.user {
					t.Fatalf("authenticated as %q", got)
				}
				return
			}
			start := time.Now()
			_, err := redisconn.New(s)
			if err == nil || !strings.Contains(err.Error(), tc.wantErr) || !strings.Contains(err.Error(), srv.Addr) || !strings.Contains(err.Error(), tc.user) {
				t.Fatalf("error %v: want an init error naming %s and user %q with %s", err, srv.Addr, tc.user, tc.wantErr)
			}
			if !strings.Contains(err.Error(), "REDIS_USERNAME") || !strings.Contains(err.Error(), "REDIS_PASSWORD") {
				t.Fatalf("error %v: want it to name REDIS_USERNAME and REDIS_PASSWORD, where the credentials came from", err)
			}
			if tc.password != "" && strings.Contains(err.Error(), tc.password) {
				t.Fatalf("error %v quotes the password", err)
			}
			if d := time.Since(start); d > slack {
				t.Fatalf("refused credentials took %v to report", d)
			}
		})
	}
}

// TestTLSMismatch: REDIS_TLS on (the template's RedisTls default) towards a
// Redis without TLS, which accepts the connection and never answers the handshake:
// the decisions fail closed by timeout, as docs/operations.md says, and their error
// says to check REDIS_TLS, not only that a deadline passed.
//
// And the converse, REDIS_TLS off towards a Redis that wants TLS, which closes the
// connection at its first command: redis_error, saying to check REDIS_TLS.
func TestTLSMismatch(t *testing.T) {
	plain := redistest.Start(t)
	withTLS, _ := redistest.StartTLS(t)
	tests := []struct {
		name   string
		srv    *redistest.Server
		tls    string
		reason guard.Failure
		want   string
	}{
		{"TLS on towards a Redis without it", plain, "true", guard.FailureTimeout, "did not answer the TLS handshake"},
		{"TLS off towards a Redis that wants it", withTLS, "false", guard.FailureRedisError, "closed the connection"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			c, err := redisconn.New(redistest.Settings(t, map[string]string{"REDIS_ADDR": tc.srv.Addr, "REDIS_TLS": tc.tls}))
			if err != nil {
				t.Fatalf("init failed: %v", err)
			}
			defer c.Close()
			ctx, cancel := context.WithTimeout(context.Background(), redisconn.ConnectTimeout+slack)
			defer cancel()
			_, attempt := c.Client(ctx) // waits for the attempt under way
			// A decision's deadline, which may end before the next attempt does.
			decision, cancelDecision := context.WithTimeout(context.Background(), 50*time.Millisecond)
			defer cancelDecision()
			_, decided := c.Client(decision)
			for _, err := range []error{attempt, decided} {
				if !errors.Is(err, redisconn.ErrNotConnected) || guard.Classify(err) != tc.reason ||
					!strings.Contains(err.Error(), "REDIS_TLS") || !strings.Contains(err.Error(), tc.want) || !strings.Contains(err.Error(), tc.srv.Addr) {
					t.Errorf("error %v: want ErrNotConnected, reason %s, naming %s, REDIS_TLS and %q", err, tc.reason, tc.srv.Addr, tc.want)
				}
			}
		})
	}
}

func TestColdStartWhileRedisIsDown(t *testing.T) {
	srv := redistest.Start(t)
	srv.Stop()
	start := time.Now()
	c, err := redisconn.New(redistest.Settings(t, map[string]string{"REDIS_ADDR": srv.Addr}))
	if err != nil {
		t.Fatalf("init failed while Redis is down: %v", err)
	}
	defer c.Close()
	if c.Mode() != redisconn.ModeNotConnected || c.Cluster() {
		t.Fatalf("mode %q (cluster %v) before connecting", c.Mode(), c.Cluster())
	}
	ctx, cancel := context.WithTimeout(context.Background(), 50*time.Millisecond)
	defer cancel()
	if err := ping(ctx, c); !errors.Is(err, redisconn.ErrNotConnected) {
		t.Fatalf("command while down: %v, want ErrNotConnected", err)
	}
	if d := time.Since(start); d > slack {
		t.Fatalf("init and a command while Redis is down took %v", d)
	}

	if err := srv.Restart(); err != nil {
		t.Fatal(err)
	}
	deadline := time.Now().Add(redisconn.RetryInterval + slack)
	for ping(context.Background(), c) != nil {
		if time.Now().After(deadline) {
			t.Fatalf("not connected %v after Redis came up", redisconn.RetryInterval+slack)
		}
		time.Sleep(20 * time.Millisecond)
	}
	if c.Mode() != rueidis.ClientModeStandalone {
		t.Fatalf("mode %q once connected", c.Mode())
	}
}

func TestClusterModes(t *testing.T) {
	cluster := redistest.StartCluster(t, 3, 0)
	a, b := redistest.Start(t), redistest.Start(t)
	tests := []struct {
		name     string
		env      map[string]string
		wantMode rueidis.ClientMode
		wantErr  string
	}{
		{"seeds, auto", map[string]string{"REDIS_ADDR": strings.Join(cluster.Seeds(), ",")}, rueidis.ClientModeCluster, ""},
		{"one seed, auto", map[string]string{"REDIS_ADDR": cluster.Seeds()[1]}, rueidis.ClientModeCluster, ""},
		{"one seed, on", map[string]string{"REDIS_ADDR": cluster.Seeds()[0], "REDIS_CLUSTER": "on"}, rueidis.ClientModeCluster, ""},
		{"standalone, auto", map[string]string{"REDIS_ADDR": a.Addr}, rueidis.ClientModeStandalone, ""},
		{"standalone, off", map[string]string{"REDIS_ADDR": a.Addr, "REDIS_CLUSTER": "off"}, rueidis.ClientModeStandalone, ""},
		{"standalone, on", map[string]string{"REDIS_ADDR": a.Addr, "REDIS_CLUSTER": "on"}, "", "REDIS_CLUSTER=on"},
		{"two standalone seeds", map[string]string{"REDIS_ADDR": a.Addr + "," + b.Addr}, "", "one address alone"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			c, err := redisconn.New(redistest.Settings(t, tc.env))
			if tc.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
					t.Fatalf("error %v, want one mentioning %s", err, tc.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			defer c.Close()
			if c.Mode() != tc.wantMode || c.Cluster() != (tc.wantMode == rueidis.ClientModeCluster) {
				t.Fatalf("mode %q (cluster %v), want %q", c.Mode(), c.Cluster(), tc.wantMode)
			}
			if err := ping(context.Background(), c); err != nil {
				t.Fatal(err)
			}
			// The client handed out builds commands for its own mode: a keyed command
			// reaches the node that serves the key.
			client, err := c.Client(context.Background())
			if err != nil {
				t.Fatal(err)
			}
			if err := client.Do(context.Background(), client.B().Set().Key("bg:{early}").Value("1").Build()).Error(); err != nil {
				t.Fatalf("a keyed command: %v", err)
			}
		})
	}
}

// TestEvictionPolicyReported: once connected, every node's eviction policy is read
// from INFO memory (which ElastiCache answers where CONFIG GET is refused) and
// reported: real servers started with volatile-lru, allkeys-lru and the default,
// noeviction; and each node of a cluster.
func TestEvictionPolicyReported(t *testing.T) {
	type report struct{ node, policy string }
	check := func(t *testing.T, env map[string]string) []report {
		t.Helper()
		var (
			mu  sync.Mutex
			got []report
		)
		c, err := redisconn.New(redistest.Settings(t, env), redisconn.WithEvictionPolicy(func(node, policy string, err error) {
			if err != nil {
				t.Errorf("node %s: %v", node, err)
			}
			mu.Lock()
			got = append(got, report{node, policy})
			mu.Unlock()
		}))
		if err != nil {
			t.Fatal(err)
		}
		defer c.Close()
		if err := ping(context.Background(), c); err != nil {
			t.Fatal(err)
		}
		mu.Lock()
		defer mu.Unlock()
		return got
	}
	for _, policy := range []string{"volatile-lru", "allkeys-lru", ""} {
		t.Run("standalone "+policy, func(t *testing.T) {
			var srv *redistest.Server
			want := policy
			if policy == "" {
				srv, want = redistest.Start(t), redisconn.NoEviction
			} else {
				srv = redistest.Start(t, "--maxmemory-policy", policy)
			}
			if got := check(t, map[string]string{"REDIS_ADDR": srv.Addr}); len(got) != 1 || got[0] != (report{srv.Addr, want}) {
				t.Fatalf("reports %v, want one: %s %s", got, srv.Addr, want)
			}
		})
	}
	t.Run("cluster", func(t *testing.T) {
		cluster := redistest.StartCluster(t, 3, 0)
		got := check(t, map[string]string{"REDIS_ADDR": strings.Join(cluster.Seeds(), ",")})
		if len(got) != 3 {
			t.Fatalf("reports %v, want one per node", got)
		}
		for _, r := range got {
			if r.policy != redisconn.NoEviction || !slices.Contains(cluster.Seeds(), r.node) {
				t.Fatalf("report %v: want a node of the cluster, noeviction", r)
			}
		}
	})
}

// TestRefusedAfterColdStart: an instance that started while Redis was down, and whose
// credentials Redis refuses once it is up, fails each call with an error that names
// the variables the credentials came from, as init would have, without the password.
func TestRefusedAfterColdStart(t *testing.T) {
	srv := redistest.Start(t, redistest.ACLUser("alice", "s3cret")...)
	srv.Stop()
	c, err := redisconn.New(redistest.Settings(t, map[string]string{"REDIS_ADDR": srv.Addr, "REDIS_USERNAME": "alice", "REDIS_PASSWORD": "guess-again"}))
	if err != nil {
		t.Fatalf("init failed while Redis is down: %v", err)
	}
	defer c.Close()
	if err := srv.Restart(); err != nil {
		t.Fatal(err)
	}
	deadline := time.Now().Add(redisconn.RetryInterval + slack)
	for {
		err := ping(context.Background(), c)
		if err != nil && strings.Contains(err.Error(), "WRONGPASS") {
			for _, want := range []string{"REDIS_USERNAME", "REDIS_PASSWORD", srv.Addr, `"alice"`} {
				if !strings.Contains(err.Error(), want) {
					t.Errorf("error %v does not name %s", err, want)
				}
			}
			if strings.Contains(err.Error(), "guess-again") {
				t.Errorf("error %v quotes the password", err)
			}
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("no WRONGPASS %v after Redis came up: %v", redisconn.RetryInterval+slack, err)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// TestIAMTokenOfReconnection: a connection made after the first token's TokenLifetime
// (here after a Lambda freeze of 20 minutes, by the clock passed in) authenticates
// with a token signed then: a real server that takes the two tokens as the user's
// passwords, the first one removed before the reconnection.
func TestIAMTokenOfReconnection(t *testing.T) {
	creds := aws.CredentialsProviderFunc(func(context.Context) (aws.Credentials, error) {
		return aws.Credentials{AccessKeyID: "AKIDEXAMPLE", SecretAccessKey: "wJalrXUtnFEMI/K7MDENG+bPxRfiCYEXAMPLEKEY"}, nil
	})
	// Times from now: rueidis re-authenticates a connection at RefreshAfter, by the
	// real clock.
	start := time.Now().Round(0).Truncate(time.Second)
	later := start.Add(20 * time.Minute)
	signer := redisconn.TokenSigner{CacheName: "orders-cache", UserID: "app", Region: "us-east-1", Credentials: creds}
	first, err := signer.Token(context.Background(), start)
	if err != nil {
		t.Fatal(err)
	}
	fresh, err := signer.Token(context.Background(), later)
	if err != nil {
		t.Fatal(err)
	}
	// The default user stays on, for the test's ACL commands.
	srv, ca := redistest.StartTLS(t, "--user", "app", "on", ">"+first, ">"+fresh, "~*", "+@all")
	var clock atomic.Int64
	clock.Store(start.UnixNano())
	s := redistest.Settings(t, map[string]string{"REDIS_ADDR": srv.Addr, "REDIS_TLS": "true", "REDIS_IAM_AUTH": "true",
		"REDIS_USERNAME": "app", "REDIS_CACHE_NAME": "orders-cache"})
	c, err := redisconn.New(s, redisconn.WithRootCAs(ca.Pool), redisconn.WithAWSConfig(aws.Config{Region: "us-east-1", Credentials: creds}),
		redisconn.WithClock(func() time.Time { return time.Unix(0, clock.Load()) }))
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	if err := ping(context.Background(), c); err != nil {
		t.Fatal(err)
	}
	for _, cmd := range [][]string{{"ACL", "SETUSER", "app", "<" + first}, {"CLIENT", "KILL", "USER", "app"}} {
		if _, err := srv.Command(context.Background(), cmd...); err != nil {
			t.Fatal(err)
		}
	}
	clock.Store(later.UnixNano())
	_ = ping(context.Background(), c) // finds the connection closed (EOF)
	if err := ping(context.Background(), c); err != nil {
		t.Fatalf("reconnection %v later: %v, want it authenticated with a token signed then", later.Sub(start), err)
	}
}
