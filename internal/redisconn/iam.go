package redisconn

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	v4 "github.com/aws/aws-sdk-go-v2/aws/signer/v4"
	"github.com/redis/rueidis"

	"github.com/bucketgate/bucketgate/internal/settings"
	"github.com/bucketgate/bucketgate/internal/wallclock"
)

// ElastiCache IAM authentication tokens: a SigV4-presigned "connect" request to the
// cache, minus its scheme, used as the password of the ElastiCache user.
const (
	// TokenLifetime is how long ElastiCache accepts a token for a new connection
	// (its X-Amz-Expires).
	TokenLifetime = 15 * time.Minute
	// TokenRenewal is how old a token gets before a new one replaces it; connections
	// re-authenticate with the new one then, well before TokenLifetime ends.
	TokenRenewal = 10 * time.Minute

	iamService       = "elasticache"
	iamAction        = "connect"
	serverlessType   = "ServerlessCache"
	emptyPayloadHash = "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855" // SHA-256 of ""
	presignScheme    = "http://"
)

// errNoRegion is returned when IAM tokens are wanted but no AWS region is known.
var errNoRegion = errors.New("no AWS region for IAM tokens: set AWS_REGION")

// TokenSigner makes ElastiCache IAM authentication tokens. The zero TokenSigner is not
// usable; fill every field.
type TokenSigner struct {
	// CacheName is the replication group or serverless cache the token is for.
	CacheName string
	// UserID is the ElastiCache user the token authenticates.
	UserID string
	// Serverless marks a serverless cache (ResourceType=ServerlessCache).
	Serverless bool
	// Region is the cache's AWS region.
	Region string
	// Credentials sign the token.
	Credentials aws.CredentialsProvider
}

// Token returns a token signed at now, valid for TokenLifetime.
func (ts TokenSigner) Token(ctx context.Context, now time.Time) (string, error) {
	q := url.Values{"Action": {iamAction}, "User": {ts.UserID}}
	if ts.Serverless {
		q.Set("ResourceType", serverlessType)
	}
	q.Set("X-Amz-Expires", strconv.FormatInt(int64(TokenLifetime/time.Second), 10))
	u := url.URL{Scheme: strings.TrimSuffix(presignScheme, "://"), Host: ts.CacheName, Path: "/", RawQuery: q.Encode()}
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, u.String(), nil)
	if err != nil {
		return "", fmt.Errorf("IAM token request for cache %q: %w", ts.CacheName, err)
	}
	creds, err := ts.Credentials.Retrieve(ctx)
	if err != nil {
		return "", fmt.Errorf("IAM token: AWS credentials: %w", err)
	}
	signed, _, err := v4.NewSigner().PresignHTTP(ctx, creds, req, emptyPayloadHash, iamService, ts.Region, now)
	if err != nil {
		return "", fmt.Errorf("IAM token: sign: %w", err)
	}
	return strings.TrimPrefix(signed, presignScheme), nil
}

// iamAuth hands rueidis a current token for every new connection and asks it to
// re-authenticate every connection when the token is renewed.
type iamAuth struct {
	signer TokenSigner
	now    func() time.Time

	mu     sync.Mutex
	token  string
	issued time.Time
}

// newIAMAuth prepares IAM tokens for s and signs the first one, so that missing
// credentials fail init.
func newIAMAuth(ctx context.Context, s settings.Settings, cfg aws.Config, now func() time.Time) (*iamAuth, error) {
	if cfg.Region == "" {
		return nil, errNoRegion
	}
	if cfg.Credentials == nil {
		return nil, fmt.Errorf("IAM token: no AWS credentials configured")
	}
	a := &iamAuth{
		signer: TokenSigner{CacheName: s.CacheName, UserID: s.Username, Serverless: s.Serverless, Region: cfg.Region, Credentials: cfg.Credentials},
		now:    now,
	}
	if _, err := a.current(ctx); err != nil {
		return nil, err
	}
	return a, nil
}

// current returns the token and when it was signed, signing a new one when the last
// is TokenRenewal old. Ages are told by the wall clock, as ElastiCache judges a token
// (its X-Amz-Date): the times keep no monotonic reading (Round(0)), which may stand
// still while a Lambda environment is frozen between invocations and would let a token
// past its TokenLifetime be handed to a new connection after a long freeze. A clock
// that went back since the signing signs a new one (see wallclock).
func (a *iamAuth) current(ctx context.Context) (rueidis.AuthCredentials, error) {
	a.mu.Lock()
	defer a.mu.Unlock()
	if now := a.now().Round(0); a.token == "" || !wallclock.Young(now, a.issued, TokenRenewal) {
		token, err := a.signer.Token(ctx, now)
		if err != nil {
			return rueidis.AuthCredentials{}, err
		}
		a.token, a.issued = token, now
	}
	return rueidis.AuthCredentials{Username: a.signer.UserID, Password: a.token, RefreshAfter: a.issued.Add(TokenRenewal)}, nil
}

// credentials is the rueidis AuthCredentialsFn.
func (a *iamAuth) credentials(rueidis.AuthCredentialsContext) (rueidis.AuthCredentials, error) {
	ctx, cancel := context.WithTimeout(context.Background(), InitTimeout)
	defer cancel()
	return a.current(ctx)
}
