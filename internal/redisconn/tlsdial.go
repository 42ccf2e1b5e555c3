package redisconn

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"net"

	"github.com/bucketgate/bucketgate/internal/settings"
)

// dialTLS is rueidis's dial with TLS (its DialCtxFn): the connection to dst, then the
// TLS handshake with cfg, the dialer's timeout bounding both, as rueidis's own. A
// handshake the server left unanswered says what to check: a Redis without TLS reads
// the handshake as the start of a command and waits for the rest of it, so REDIS_TLS
// on towards it is a timeout, not an error reply.
func dialTLS(ctx context.Context, dst string, d *net.Dialer, cfg *tls.Config) (net.Conn, error) {
	if d.Timeout > 0 {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, d.Timeout)
		defer cancel()
	}
	raw, err := d.DialContext(ctx, "tcp", dst)
	if err != nil {
		return nil, err
	}
	if cfg.ServerName == "" {
		if host, _, err := net.SplitHostPort(dst); err == nil {
			cfg = cfg.Clone()
			cfg.ServerName = host
		}
	}
	conn := tls.Client(raw, cfg)
	if err := conn.HandshakeContext(ctx); err != nil {
		raw.Close()
		if errors.Is(err, context.DeadlineExceeded) {
			return nil, fmt.Errorf("%s accepted the connection but did not answer the TLS handshake (a Redis without TLS never does: check %s): %w",
				dst, settings.EnvTLS, err)
		}
		return nil, err
	}
	return conn, nil
}
