package redisconn

import (
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"slices"
	"strings"

	"github.com/redis/rueidis"

	"github.com/bucketgate/bucketgate/internal/settings"
)

// credentialErrorPrefixes start the Redis error replies that refuse the credentials.
var credentialErrorPrefixes = []string{"WRONGPASS", "NOAUTH"}

// permissionErrors are in the Redis error replies that refuse a command to the user's
// ACL: NOPERM starts the refusal of a command sent; the refusal of a script's call says
// one of the others (Redis 7.0; Valkey and later Redis).
var permissionErrors = []string{"NOPERM", "can't run this command", "ACL failure in script"}

// MinimalACL is the least ACL, proven by tests, under which the functions' user runs
// every call of bucketgate: its keys alone, and no command but those it sends (the
// cluster's topology and ASKING, PING, TIME, the script, MULTI and EXEC (a batch's
// calls of one identity, and the usage's read), the secret's and the leases' keys) and
// those the script calls. The script's text must be
// allowed (EVAL, after a NOSCRIPT), so the user may run a script of its own, but only
// on the limiter's keys and with these commands. HELLO, AUTH and QUIT need no
// permission.
const MinimalACL = "on ~bg:* -@all +cluster -@dangerous +asking +ping +time +eval +evalsha +multi +exec +exists +get +set +del +pexpire +pexpireat +hget +hmget +hgetall +hkeys +hlen +hset +hsetnx +hdel +hincrby +zadd +zrange +zcard +zcount +zscore +zrem +zremrangebyrank +zremrangebyscore"

// isConfigError reports whether a connection attempt failed because of the
// configuration, so that retrying cannot help: credentials refused, a certificate not
// trusted, or the wrong cluster mode.
func isConfigError(err error) bool {
	var recordErr tls.RecordHeaderError
	if errors.Is(err, ErrNotCluster) || isCertificateError(err) || errors.As(err, &recordErr) {
		return true
	}
	msg, ok := redisError(err)
	return ok && (isAuthError(err) || strings.Contains(msg, clusterDisabled))
}

// isCertificateError reports whether err is the server's certificate refused: not
// trusted, or not for the host.
func isCertificateError(err error) bool {
	var certErr *tls.CertificateVerificationError
	var authorityErr x509.UnknownAuthorityError
	var hostErr x509.HostnameError
	return errors.As(err, &certErr) || errors.As(err, &authorityErr) || errors.As(err, &hostErr)
}

// isAuthError reports whether err is Redis refusing the credentials, or a command to
// the user's ACL.
func isAuthError(err error) bool {
	msg, ok := redisError(err)
	return ok && (slices.ContainsFunc(credentialErrorPrefixes, func(p string) bool { return strings.HasPrefix(msg, p) }) ||
		isPermissionError(msg))
}

// isPermissionError reports whether the Redis error reply msg refuses a command to
// the user's ACL.
func isPermissionError(msg string) bool {
	return slices.ContainsFunc(permissionErrors, func(text string) bool { return strings.Contains(msg, text) })
}

// redisError returns the text of the Redis error reply err wraps.
func redisError(err error) (string, bool) {
	var redisErr *rueidis.RedisError
	if !errors.As(err, &redisErr) || redisErr.IsNil() {
		return "", false
	}
	return redisErr.Error(), true
}

// clusterDisabled is in the error a standalone server answers CLUSTER commands with.
const clusterDisabled = "cluster support disabled"

// hint adds what to do about a configuration error of s when it is not obvious: for
// refused credentials, the settings they came from.
func hint(err error, s settings.Settings) error {
	switch {
	case strings.Contains(err.Error(), clusterDisabled):
		return fmt.Errorf("%w (several addresses in %s mean cluster mode: give a standalone server's one address alone)",
			err, settings.EnvRedisAddr)
	case isCertificateError(err):
		return fmt.Errorf("%w (%s verifies the server's certificate against the system roots: it must be issued for the host of %s)",
			err, settings.EnvTLS, settings.EnvRedisAddr)
	case !isAuthError(err):
		return err
	case isPermissionError(err.Error()):
		return fmt.Errorf("%w (the ACL of the user of %s lacks a command or key bucketgate uses: give it at least %s)",
			err, settings.EnvUsername, MinimalACL)
	case s.IAMAuth:
		kind := "a replication group's"
		if s.Serverless {
			kind = "a serverless cache's"
		}
		return fmt.Errorf("%w (an IAM token for %s, the ElastiCache user id, on %s %q, signed as %s (%s=%t): check them, and that the role that signs the token, the function's or the service's, may elasticache:Connect to them)",
			err, settings.EnvUsername, settings.EnvCacheName, s.CacheName, kind, settings.EnvServerless, s.Serverless)
	case s.PasswordSecretARN != "":
		return fmt.Errorf("%w (the password of %s's secret %s, and the user of %s or the secret's \"username\": check them)",
			err, settings.EnvPasswordSecretARN, s.PasswordSecretARN, settings.EnvUsername)
	}
	return fmt.Errorf("%w (the credentials of %s and %s: check them)", err, settings.EnvUsername, settings.EnvPassword)
}
