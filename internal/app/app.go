// Package app wires what both Lambda functions decide with, from the environment: the
// settings, the rate-limit configuration, the Redis client and the decision chain
// (engine, X-Ray subsegment, failure policy). Each function's main calls NewDecider
// once at init and fails init with its error, which says what to set.
package app

import (
	"errors"
	"fmt"

	"github.com/redis/rueidis"

	"github.com/bucketgate/bucketgate/internal/bucket"
	"github.com/bucketgate/bucketgate/internal/config"
	"github.com/bucketgate/bucketgate/internal/guard"
	"github.com/bucketgate/bucketgate/internal/redisconn"
	"github.com/bucketgate/bucketgate/internal/settings"
	"github.com/bucketgate/bucketgate/internal/tracing"
)

// NewDecider reads the settings and the rate-limit configuration through getenv
// (os.Getenv in production), connects to Redis and returns the decision chain with the
// configuration and settings it was built from. Its error names the variable to set or
// fix; the configuration is checked before any connection is tried.
func NewDecider(getenv func(string) string) (*guard.Guard, *config.Config, settings.Settings, error) {
	s, err := settings.Load(getenv)
	if err != nil {
		return nil, nil, s, fmt.Errorf("settings: %w", err)
	}
	cfg, err := config.Load(getenv)
	if err != nil {
		return nil, nil, s, err
	}
	client, err := redisconn.New(s)
	if errors.Is(err, redisconn.ErrNoAddress) {
		return nil, nil, s, fmt.Errorf("%w to the host:port of the Redis or ElastiCache endpoint (comma-separated seeds for cluster mode)", err)
	}
	if err != nil {
		return nil, nil, s, fmt.Errorf("%w (check %s)", err, settings.EnvRedisAddr)
	}
	return NewGuard(client, s), cfg, s, nil
}

// NewGuard returns the decision chain over client: the engine, traced with an X-Ray
// subsegment per Redis call, inside the failure policy and deadline of s.
func NewGuard(client rueidis.Client, s settings.Settings) *guard.Guard {
	return guard.New(tracing.Wrap(bucket.New(client)), guard.OptionsFor(s))
}
