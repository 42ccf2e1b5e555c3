package redisconn

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/secretsmanager"

	"github.com/bucketgate/bucketgate/internal/settings"
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

// parseSecret reads a secret's text: JSON when it starts with '{', else the password.
func parseSecret(id, text string) (username, password string, err error) {
	if !strings.HasPrefix(strings.TrimSpace(text), "{") {
		if text == "" {
			return "", "", fmt.Errorf("%s: secret %s: %w: it is empty", settings.EnvPasswordSecretARN, id, errSecretShape)
		}
		return "", text, nil
	}
	var s secretJSON
	if json.Unmarshal([]byte(text), &s) != nil { // the parser's message would quote the secret
		return "", "", fmt.Errorf("%s: secret %s: %w: it starts with '{' but is not a JSON object", settings.EnvPasswordSecretARN, id, errSecretShape)
	}
	if s.Password == nil || *s.Password == "" {
		return "", "", fmt.Errorf("%s: secret %s: %w: its JSON has no \"password\"", settings.EnvPasswordSecretARN, id, errSecretShape)
	}
	return s.Username, *s.Password, nil
}
