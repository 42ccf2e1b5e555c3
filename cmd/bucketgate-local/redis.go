package main

import (
	"fmt"

	"github.com/alicebob/miniredis/v2"

	"github.com/bucketgate/bucketgate/internal/settings"
)

// withRedis returns getenv unchanged when it names a Redis (REDIS_ADDR), else getenv
// with REDIS_ADDR pointing at an embedded Redis that stop shuts down. where says which.
//
// The embedded Redis is a miniredis on a free loopback port that runs on the wall
// clock: SetTime is never called, so TIME (the buckets' clock, read inside the script)
// answers the current time and buckets refill in real time; ClockTTL makes keys expire
// as that clock passes, as on a real server.
func withRedis(getenv func(string) string) (env func(string) string, where string, stop func(), err error) {
	if addr := getenv(settings.EnvRedisAddr); addr != "" {
		return getenv, fmt.Sprintf("Redis at %s=%s", settings.EnvRedisAddr, addr), func() {}, nil
	}
	m := miniredis.NewMiniRedis()
	m.ClockTTL(true)
	if err := m.Start(); err != nil {
		return nil, "", nil, fmt.Errorf("embedded Redis: %w", err)
	}
	env = func(k string) string {
		if k == settings.EnvRedisAddr {
			return m.Addr()
		}
		return getenv(k)
	}
	return env, fmt.Sprintf("embedded Redis (miniredis) on %s; set %s for a real one", m.Addr(), settings.EnvRedisAddr), m.Close, nil
}
