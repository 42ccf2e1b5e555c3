package main

import (
	"fmt"
	"time"

	"github.com/alicebob/miniredis/v2"

	"github.com/bucketgate/bucketgate/internal/settings"
)

// embeddedTimeoutMS is REDIS_TIMEOUT_MS with the embedded Redis when none is set: it
// runs in this process, on a laptop's spare time, and its first call compiles the
// script, which the production default of 50 ms may not cover (the first answer would
// be unavailable).
const embeddedTimeoutMS = "1000"

// withRedis returns getenv unchanged when it names a Redis (REDIS_ADDR), else getenv
// with REDIS_ADDR pointing at an embedded Redis that stop shuts down, and
// REDIS_TIMEOUT_MS embeddedTimeoutMS unless set. where says which.
//
// The embedded Redis is a miniredis on a free loopback port that runs on the wall
// clock: SetTime is never called, so TIME (the buckets' clock, read inside the script)
// answers the current time and buckets refill in real time. Keys expire as that clock
// passes, as on a real server, but every ttlTick rather than at each command: miniredis
// advances TTLs by walking every key (ClockTTL does so at each command, and each
// command of a script), which, with keys that live for days (usage) piling up over a
// long run, would make every decision slower.
func withRedis(getenv func(string) string) (env func(string) string, where string, stop func(), err error) {
	if addr := getenv(settings.EnvRedisAddr); addr != "" {
		return getenv, fmt.Sprintf("Redis at %s=%s", settings.EnvRedisAddr, addr), func() {}, nil
	}
	m := miniredis.NewMiniRedis()
	if err := m.Start(); err != nil {
		return nil, "", nil, fmt.Errorf("embedded Redis: %w", err)
	}
	done, exited := make(chan struct{}), make(chan struct{})
	go func() {
		defer close(exited)
		t := time.NewTicker(ttlTick)
		defer t.Stop()
		last := time.Now()
		for {
			select {
			case now := <-t.C:
				m.FastForward(now.Sub(last))
				last = now
			case <-done:
				return
			}
		}
	}()
	env = func(k string) string {
		switch v := getenv(k); {
		case k == settings.EnvRedisAddr:
			return m.Addr()
		case k == settings.EnvTimeoutMS && v == "":
			return embeddedTimeoutMS
		default:
			return v
		}
	}
	stop = func() {
		close(done)
		<-exited
		m.Close()
	}
	return env, fmt.Sprintf("embedded Redis (miniredis) on %s; set %s for a real one", m.Addr(), settings.EnvRedisAddr), stop, nil
}

// ttlTick is how often the embedded Redis advances its keys' TTLs: a key expires up to
// this late.
const ttlTick = 100 * time.Millisecond
