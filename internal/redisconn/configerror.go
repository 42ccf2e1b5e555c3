package redisconn

import (
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"strings"

	"github.com/redis/rueidis"

	"github.com/bucketgate/bucketgate/internal/settings"
)

// configErrorPrefixes start the Redis error replies that say the credentials are
// wrong, not that Redis is busy.
var configErrorPrefixes = []string{"WRONGPASS", "NOAUTH", "NOPERM"}

// isConfigError reports whether a connection attempt failed because of the
// configuration, so that retrying cannot help: credentials refused, a certificate not
// trusted, or the wrong cluster mode.
func isConfigError(err error) bool {
	var certErr *tls.CertificateVerificationError
	var authorityErr x509.UnknownAuthorityError
	var hostErr x509.HostnameError
	var recordErr tls.RecordHeaderError
	var redisErr *rueidis.RedisError
	switch {
	case errors.Is(err, ErrNotCluster),
		errors.As(err, &certErr), errors.As(err, &authorityErr), errors.As(err, &hostErr), errors.As(err, &recordErr):
		return true
	case !errors.As(err, &redisErr) || redisErr.IsNil():
		return false
	}
	return isAuthError(err) || strings.Contains(redisErr.Error(), clusterDisabled)
}

// isAuthError reports whether err is Redis refusing the credentials.
func isAuthError(err error) bool {
	var redisErr *rueidis.RedisError
	if !errors.As(err, &redisErr) || redisErr.IsNil() {
		return false
	}
	msg := redisErr.Error()
	for _, p := range configErrorPrefixes {
		if strings.HasPrefix(msg, p) {
			return true
		}
	}
	return false
}

// clusterDisabled is in the error a standalone server answers CLUSTER commands with.
const clusterDisabled = "cluster support disabled"

// hint adds what to do about a configuration error of s when it is not obvious: for
// refused credentials, the settings they came from.
func hint(err error, s settings.Settings) error {
	switch {
	case strings.Contains(err.Error(), clusterDisabled):
		return fmt.Errorf("%w (several addresses in %s mean cluster mode: give one address, or set %s=off)",
			err, settings.EnvRedisAddr, settings.EnvCluster)
	case !isAuthError(err):
		return err
	case s.IAMAuth:
		return fmt.Errorf("%w (an IAM token for %s, the ElastiCache user id, on %s %q: check both, and that the function's role may elasticache:Connect to them)",
			err, settings.EnvUsername, settings.EnvCacheName, s.CacheName)
	case s.PasswordSecretARN != "":
		return fmt.Errorf("%w (the password of %s's secret %s, and the user of %s or the secret's \"username\": check them)",
			err, settings.EnvPasswordSecretARN, s.PasswordSecretARN, settings.EnvUsername)
	}
	return fmt.Errorf("%w (the credentials of %s and %s: check them)", err, settings.EnvUsername, settings.EnvPassword)
}
