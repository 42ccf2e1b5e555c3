package redisconn

import (
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"sync"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/secretsmanager"
	"github.com/redis/rueidis"

	"github.com/bucketgate/bucketgate/internal/settings"
	"github.com/bucketgate/bucketgate/internal/wallclock"
)

// errSecretShape is wrapped by the errors about a secret that holds no usable password.
var errSecretShape = errors.New("secret holds no password")

// secretJSON is the JSON form of a password secret, as ElastiCache's user-password
// rotation writes it: {"username": "...", "password": "...", ...}.
type secretJSON struct {
	Username string  `json:"username"`
	Password *string `json:"password"`
}

// readSecret reads the password secret id (an ARN or name) from Secrets Manager. The
// secret is either the password itself, or a JSON object with "password" and optionally
// "username" (empty when absent).
func readSecret(ctx context.Context, cfg aws.Config, id string) (username, password string, err error) {
	out, err := secretsmanager.NewFromConfig(cfg).GetSecretValue(ctx, &secretsmanager.GetSecretValueInput{SecretId: aws.String(id)})
	if err != nil {
		return "", "", fmt.Errorf("%s: read secret %s: %w", settings.EnvPasswordSecretARN, id, err)
	}
	if out.SecretString == nil {
		return "", "", fmt.Errorf("%s: secret %s: %w: it has no SecretString (binary secrets are not supported)",
			settings.EnvPasswordSecretARN, id, errSecretShape)
	}
	return parseSecret(id, *out.SecretString)
}

// parseSecret reads a secret's text: JSON when it starts with '{', else the password,
// less the line endings it ends with: a secret uploaded from a file (--secret-string
// file://...) ends with the file's, which no ElastiCache password holds, and Redis
// refused the password with them (WRONGPASS).
func parseSecret(id, text string) (username, password string, err error) {
	if !strings.HasPrefix(strings.TrimSpace(text), "{") {
		if text = strings.TrimRight(text, "\r\n"); text == "" {
			return "", "", fmt.Errorf("%s: secret %s: %w: it is empty", settings.EnvPasswordSecretARN, id, errSecretShape)
		}
		return "", text, nil
	}
	var s secretJSON
	if err := json.Unmarshal([]byte(text), &s); err != nil { // the parser's message would quote the secret
		if typeErr := (*json.UnmarshalTypeError)(nil); errors.As(err, &typeErr) && typeErr.Field != "" {
			return "", "", fmt.Errorf("%s: secret %s: %w: its %q is not a string", settings.EnvPasswordSecretARN, id, errSecretShape, typeErr.Field)
		}
		return "", "", fmt.Errorf("%s: secret %s: %w: it starts with '{' but is not a JSON object", settings.EnvPasswordSecretARN, id, errSecretShape)
	}
	if s.Password == nil || *s.Password == "" {
		return "", "", fmt.Errorf("%s: secret %s: %w: its JSON has no \"password\"", settings.EnvPasswordSecretARN, id, errSecretShape)
	}
	return s.Username, *s.Password, nil
}

// secretAuth hands rueidis the password of the secret for every new connection, reading
// the secret again, beside the connection, when its copy is SecretRecheck old: after a
// rotation, a connection made once that read is done (after a failover, a connection
// Redis closed) authenticates with the new password, and Secrets Manager is asked at
// most once per SecretRecheck, only when a connection is made.
type secretAuth struct {
	cfg      aws.Config
	id       string // REDIS_PASSWORD_SECRET_ARN
	username string // REDIS_USERNAME, which wins over the secret's
	now      func() time.Time

	mu       sync.Mutex
	user     string
	password string
	read     time.Time // when the last read of the copy began
	reading  bool      // a read of the copy is under way
}

// newSecretAuth reads the secret of s once, so that a secret that cannot be read or
// holds no password fails init.
func newSecretAuth(ctx context.Context, s settings.Settings, cfg aws.Config, now func() time.Time) (*secretAuth, error) {
	read := now().Round(0)
	user, password, err := readSecret(ctx, cfg, s.PasswordSecretARN)
	if err != nil {
		return nil, err
	}
	return &secretAuth{cfg: cfg, id: s.PasswordSecretARN, username: s.Username, now: now,
		user: cmp.Or(s.Username, user), password: password, read: read}, nil
}

// credentials is the rueidis AuthCredentialsFn: the copy, at once. A copy
// SecretRecheck old is read again in the background, for the connections after this one:
// rueidis gives the callback no deadline, and a read on this connection's way would hold
// the call that makes it (a decision, with its REDIS_TIMEOUT_MS and its invocation's
// deadline) for as long as Secrets Manager takes, up to ConnectTimeout. The copy's age
// is told by the wall clock (see wallclock): a clock that went back reads it again.
func (a *secretAuth) credentials(rueidis.AuthCredentialsContext) (rueidis.AuthCredentials, error) {
	a.mu.Lock()
	defer a.mu.Unlock()
	if now := a.now().Round(0); !a.reading && !wallclock.Young(now, a.read, SecretRecheck) {
		a.reading, a.read = true, now
		go a.refresh()
	}
	return rueidis.AuthCredentials{Username: a.user, Password: a.password}, nil
}

// refresh reads the secret into the copy, within ConnectTimeout. A secret that cannot be
// read leaves the copy as it was, until the next try SecretRecheck after this one began:
// Redis's refusal of the copy says more than the read's error.
func (a *secretAuth) refresh() {
	ctx, cancel := context.WithTimeout(context.Background(), ConnectTimeout)
	defer cancel()
	user, password, err := readSecret(ctx, a.cfg, a.id)
	a.mu.Lock()
	defer a.mu.Unlock()
	a.reading = false
	if err == nil {
		a.user, a.password = cmp.Or(a.username, user), password
	}
}
