// Package settings reads bucketgate's connection and behaviour settings from the
// environment, once, at init. Every variable is documented in the README with its default.
package settings

import (
	"fmt"
	"strconv"
	"strings"
	"time"
)

// Environment variables and their defaults.
const (
	// EnvRedisAddr: host:port of Redis; several comma-separated seeds for cluster mode.
	EnvRedisAddr = "REDIS_ADDR"
	// EnvTimeoutMS: the deadline of one decision, in milliseconds.
	EnvTimeoutMS = "REDIS_TIMEOUT_MS"
	// EnvFailMode: "closed" (deny when Redis cannot decide) or "open" (allow, degraded).
	EnvFailMode = "FAIL_MODE"
	// EnvNamespace: the CloudWatch namespace of the metrics.
	EnvNamespace = "METRICS_NAMESPACE"

	DefaultTimeout   = 50 * time.Millisecond
	DefaultNamespace = "bucketgate"
	FailClosed       = "closed"
	FailOpen         = "open"
)

// Settings are the environment's settings, validated. The zero Settings has no Redis
// address; use Load.
type Settings struct {
	// RedisAddrs are the Redis seed addresses (host:port); empty means none configured.
	RedisAddrs []string
	// Timeout is the deadline of one decision.
	Timeout time.Duration
	// FailOpen allows requests (reason degraded) when Redis cannot decide.
	FailOpen bool
	// Namespace is the CloudWatch namespace of the metrics.
	Namespace string
}

// Load reads the settings through getenv (os.Getenv in production) and validates them;
// an error names the variable.
func Load(getenv func(string) string) (Settings, error) {
	s := Settings{Timeout: DefaultTimeout, Namespace: DefaultNamespace}
	for _, a := range strings.Split(getenv(EnvRedisAddr), ",") {
		if a = strings.TrimSpace(a); a != "" {
			s.RedisAddrs = append(s.RedisAddrs, a)
		}
	}
	if v := getenv(EnvTimeoutMS); v != "" {
		ms, err := strconv.Atoi(v)
		if err != nil || ms <= 0 {
			return s, fmt.Errorf("%s=%q: want a whole number of milliseconds > 0", EnvTimeoutMS, v)
		}
		s.Timeout = time.Duration(ms) * time.Millisecond
	}
	switch v := getenv(EnvFailMode); v {
	case "", FailClosed:
	case FailOpen:
		s.FailOpen = true
	default:
		return s, fmt.Errorf("%s=%q: want %q or %q", EnvFailMode, v, FailClosed, FailOpen)
	}
	if v := getenv(EnvNamespace); v != "" {
		s.Namespace = v
	}
	return s, nil
}
