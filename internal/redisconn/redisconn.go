// Package redisconn builds the rueidis client for Redis or ElastiCache from Settings,
// once per execution environment.
package redisconn

import (
	"errors"
	"fmt"

	"github.com/redis/rueidis"

	"github.com/bucketgate/bucketgate/internal/settings"
)

// ErrNoAddress is returned when no Redis address is configured.
var ErrNoAddress = errors.New("no Redis address: set " + settings.EnvRedisAddr)

// New returns a client for s.RedisAddrs with client-side caching off (ElastiCache and
// miniredis do not support tracking).
func New(s settings.Settings) (rueidis.Client, error) {
	if len(s.RedisAddrs) == 0 {
		return nil, ErrNoAddress
	}
	c, err := rueidis.NewClient(rueidis.ClientOption{InitAddress: s.RedisAddrs, DisableCache: true})
	if err != nil {
		return nil, fmt.Errorf("connect to Redis at %v: %w", s.RedisAddrs, err)
	}
	return c, nil
}
