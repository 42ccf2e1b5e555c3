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
	msg := redisErr.Error()
	for _, p := range configErrorPrefixes {
		if strings.HasPrefix(msg, p) {
			return true
		}
	}
	return strings.Contains(msg, clusterDisabled)
}

// clusterDisabled is in the error a standalone server answers CLUSTER commands with.
const clusterDisabled = "cluster support disabled"

// hint adds what to do about a configuration error when it is not obvious.
func hint(err error) error {
	if strings.Contains(err.Error(), clusterDisabled) {
		return fmt.Errorf("%w (several addresses in %s mean cluster mode: give one address, or set %s=off)",
			err, settings.EnvRedisAddr, settings.EnvCluster)
	}
	return err
}
