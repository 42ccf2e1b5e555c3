package redisconn

import (
	"context"
	"crypto/hmac"
	"crypto/sha256"
	"encoding/hex"
	"net/url"
	"regexp"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/redis/rueidis"

	"github.com/bucketgate/bucketgate/internal/settings"
)

// The example credentials of AWS's SigV4 documentation.
const (
	testAccessKey = "AKIDEXAMPLE"
	testSecretKey = "wJalrXUtnFEMI/K7MDENG+bPxRfiCYEXAMPLEKEY"
	testRegion    = "us-east-1"
)

var signedAt = time.Date(2024, 5, 6, 7, 8, 9, 0, time.UTC)

func staticCredentials(session string) aws.CredentialsProvider {
	return aws.CredentialsProviderFunc(func(context.Context) (aws.Credentials, error) {
		return aws.Credentials{AccessKeyID: testAccessKey, SecretAccessKey: testSecretKey, SessionToken: session}, nil
	})
}

func TestTokenStructure(t *testing.T) {
	tests := []struct {
		name       string
		serverless bool
		session    string
		wantKeys   []string
	}{
		{"node-based cache", false, "", nil},
		{"serverless cache", true, "", []string{"ResourceType"}},
		{"temporary credentials", false, "session/token+with=odd chars", []string{"X-Amz-Security-Token"}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			ts := TokenSigner{CacheName: "orders-cache", UserID: "app user", Serverless: tc.serverless, Region: testRegion, Credentials: staticCredentials(tc.session)}
			token, err := ts.Token(context.Background(), signedAt)
			if err != nil {
				t.Fatal(err)
			}
			if strings.Contains(token, "://") {
				t.Fatalf("token %q keeps a scheme", token)
			}
			host, rawQuery, ok := strings.Cut(token, "/?")
			if !ok || host != "orders-cache" {
				t.Fatalf("token %q: want orders-cache/?<query>", token)
			}
			q, err := url.ParseQuery(rawQuery)
			if err != nil {
				t.Fatal(err)
			}
			want := map[string]string{
				"Action":              "connect",
				"User":                "app user",
				"X-Amz-Algorithm":     "AWS4-HMAC-SHA256",
				"X-Amz-Credential":    testAccessKey + "/20240506/us-east-1/elasticache/aws4_request",
				"X-Amz-Date":          "20240506T070809Z",
				"X-Amz-Expires":       "900",
				"X-Amz-SignedHeaders": "host",
			}
			if tc.serverless {
				want["ResourceType"] = "ServerlessCache"
			}
			if tc.session != "" {
				want["X-Amz-Security-Token"] = tc.session
			}
			for k, v := range want {
				if got := q.Get(k); got != v {
					t.Errorf("%s = %q, want %q", k, got, v)
				}
			}
			if len(q) != len(want)+1 { // + X-Amz-Signature
				t.Errorf("query has %d parameters, want %d: %v", len(q), len(want)+1, q)
			}
			sig := q.Get("X-Amz-Signature")
			if !regexp.MustCompile(`^[0-9a-f]{64}$`).MatchString(sig) {
				t.Fatalf("signature %q: want 64 hex digits", sig)
			}
			if want := sigV4Presign(host, q); sig != want {
				t.Fatalf("signature %s, recomputed from the SigV4 specification %s", sig, want)
			}
		})
	}
}

// sigV4Presign computes the signature of a presigned GET of host "/" with query q (less
// its signature), following the SigV4 specification step by step.
func sigV4Presign(host string, q url.Values) string {
	keys := make([]string, 0, len(q))
	for k := range q {
		if k != "X-Amz-Signature" {
			keys = append(keys, k)
		}
	}
	sort.Strings(keys)
	pairs := make([]string, len(keys))
	for i, k := range keys {
		pairs[i] = uriEncode(k) + "=" + uriEncode(q.Get(k))
	}
	canonical := strings.Join([]string{
		"GET", "/", strings.Join(pairs, "&"), "host:" + host + "\n", "host",
		hex.EncodeToString(sha256Sum("")),
	}, "\n")
	date := q.Get("X-Amz-Date")
	scope := date[:8] + "/" + testRegion + "/elasticache/aws4_request"
	toSign := "AWS4-HMAC-SHA256\n" + date + "\n" + scope + "\n" + hex.EncodeToString(sha256Sum(canonical))
	key := []byte("AWS4" + testSecretKey)
	for _, part := range []string{date[:8], testRegion, "elasticache", "aws4_request"} {
		key = hmacSum(key, part)
	}
	return hex.EncodeToString(hmacSum(key, toSign))
}

// uriEncode is SigV4's URI encoding: every byte but A-Z a-z 0-9 - _ . ~ as %XX.
func uriEncode(s string) string {
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		c := s[i]
		if 'A' <= c && c <= 'Z' || 'a' <= c && c <= 'z' || '0' <= c && c <= '9' || strings.IndexByte("-_.~", c) >= 0 {
			b.WriteByte(c)
		} else {
			b.WriteString("%" + strings.ToUpper(hex.EncodeToString([]byte{c})))
		}
	}
	return b.String()
}

func sha256Sum(s string) []byte { h := sha256.Sum256([]byte(s)); return h[:] }

func hmacSum(key []byte, msg string) []byte {
	m := hmac.New(sha256.New, key)
	m.Write([]byte(msg))
	return m.Sum(nil)
}

func TestIAMTokenRenewal(t *testing.T) {
	now := signedAt
	a := testIAMAuth(t, func() time.Time { return now })
	first, err := a.credentials(rueidis.AuthCredentialsContext{})
	if err != nil {
		t.Fatal(err)
	}
	if first.Username != "app" || !strings.HasPrefix(first.Password, "orders-cache/?") {
		t.Fatalf("credentials %+v", first)
	}
	if !first.RefreshAfter.Equal(signedAt.Add(TokenRenewal)) || TokenRenewal >= TokenLifetime {
		t.Fatalf("refresh after %v: want %v, before the token's %v run out", first.RefreshAfter, signedAt.Add(TokenRenewal), TokenLifetime)
	}
	now = signedAt.Add(TokenRenewal - time.Second)
	if again, _ := a.credentials(rueidis.AuthCredentialsContext{}); again.Password != first.Password {
		t.Fatal("a token younger than TokenRenewal was replaced")
	}
	now = signedAt.Add(TokenRenewal)
	renewed, err := a.credentials(rueidis.AuthCredentialsContext{})
	if err != nil {
		t.Fatal(err)
	}
	if renewed.Password == first.Password || !strings.Contains(renewed.Password, "X-Amz-Date=20240506T071809Z") {
		t.Fatalf("token not renewed at %v: %s", now, renewed.Password)
	}
	if !renewed.RefreshAfter.Equal(now.Add(TokenRenewal)) {
		t.Fatalf("renewed refresh after %v, want %v", renewed.RefreshAfter, now.Add(TokenRenewal))
	}
}

// A token's age is told by the wall clock, as ElastiCache tells it: the clock's times
// come with a monotonic reading (time.Now's), which may stand still while a Lambda
// environment is frozen, and neither the time a token was signed nor RefreshAfter keeps
// it (a Time's String shows "m=" when it does).
func TestIAMTokenAgeByWallClock(t *testing.T) {
	a := testIAMAuth(t, time.Now)
	c, err := a.credentials(rueidis.AuthCredentialsContext{})
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(time.Now().String(), " m=") {
		t.Fatal("time.Now has no monotonic reading here: this test proves nothing")
	}
	for name, at := range map[string]time.Time{"signed": a.issued, "RefreshAfter": c.RefreshAfter} {
		if strings.Contains(at.String(), " m=") {
			t.Errorf("%s %v keeps a monotonic reading: a token's age would not be the wall clock's", name, at)
		}
	}
}

// TestIAMTokenClockBack: a clock that went back (NTP) since the token was signed makes
// a new one at once, as one TokenRenewal old does: the token was kept, and handed to new
// connections with its RefreshAfter, for as long as the step, past its TokenLifetime by
// ElastiCache's clock after a step longer than TokenLifetime - TokenRenewal.
func TestIAMTokenClockBack(t *testing.T) {
	tests := []struct {
		name    string
		after   time.Duration // from the first token's signing
		renewed bool
	}{
		{"within TokenRenewal", TokenRenewal - time.Second, false},
		{"TokenRenewal later", TokenRenewal, true},
		{"a second back", -time.Second, true},
		{"an hour back", -time.Hour, true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			now := signedAt
			a := testIAMAuth(t, func() time.Time { return now })
			first, err := a.credentials(rueidis.AuthCredentialsContext{})
			if err != nil {
				t.Fatal(err)
			}
			now = signedAt.Add(tt.after)
			got, err := a.credentials(rueidis.AuthCredentialsContext{})
			if err != nil {
				t.Fatal(err)
			}
			if renewed := got.Password != first.Password; renewed != tt.renewed {
				t.Fatalf("renewed %v, want %v: refresh after %v", renewed, tt.renewed, got.RefreshAfter)
			}
			if tt.renewed && !got.RefreshAfter.Equal(now.Add(TokenRenewal)) {
				t.Errorf("refresh after %v, want %v", got.RefreshAfter, now.Add(TokenRenewal))
			}
		})
	}
}

func TestIAMNeedsRegionAndCredentials(t *testing.T) {
	s := settings.Settings{Username: "app", CacheName: "orders-cache", IAMAuth: true}
	if _, err := newIAMAuth(context.Background(), s, aws.Config{Credentials: staticCredentials("")}, time.Now); err == nil || !strings.Contains(err.Error(), "AWS_REGION") {
		t.Fatalf("no region: %v", err)
	}
	if _, err := newIAMAuth(context.Background(), s, aws.Config{Region: testRegion}, time.Now); err == nil {
		t.Fatal("no credentials: no error")
	}
}

// testIAMAuth returns the IAM authentication of the user app to the cache orders-cache
// in testRegion, on static credentials and the clock now.
func testIAMAuth(t *testing.T, now func() time.Time) *iamAuth {
	t.Helper()
	s := settings.Settings{Username: "app", CacheName: "orders-cache", IAMAuth: true}
	a, err := newIAMAuth(context.Background(), s, aws.Config{Region: testRegion, Credentials: staticCredentials("")}, now)
	if err != nil {
		t.Fatal(err)
	}
	return a
}
