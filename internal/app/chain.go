package app

import (
	"errors"
	"fmt"
	"log/slog"
	"time"

	"github.com/bucketgate/bucketgate/internal/bucket"
	"github.com/bucketgate/bucketgate/internal/guard"
	"github.com/bucketgate/bucketgate/internal/redisconn"
	"github.com/bucketgate/bucketgate/internal/settings"
	"github.com/bucketgate/bucketgate/internal/telemetry"
	"github.com/bucketgate/bucketgate/internal/tracing"
)

// NewGuard connects to the Redis of s and returns the decision chain over it, with the
// connection (close it when done): the engine, an X-Ray subsegment per Redis call,
// inside the failure policy of s. A bad X-Ray daemon address turns subsegments off with
// a warning in log; decisions never depend on it. Once connected, a Redis node whose
// eviction policy is not noeviction is a warning in log and, with metrics (nil: none),
// counted in RedisEvictionPolicy; on ElastiCache Serverless, whose policy cannot be
// changed, an info line saying what to watch instead. A decision's error that is Redis
// refusing the credentials or the user's ACL says what to check (Conn.Explain). Its
// error names the variable to fix.
func NewGuard(s settings.Settings, log *slog.Logger, metrics *telemetry.Emitter) (*guard.Guard, *redisconn.Conn, error) {
	conn, err := redisconn.New(s, redisconn.WithEvictionPolicy(evictionReport(log, metrics, s.Serverless)))
	if errors.Is(err, redisconn.ErrNoAddress) {
		return nil, nil, fmt.Errorf("%w to the host:port of the Redis or ElastiCache endpoint (comma-separated seeds for cluster mode)", err)
	}
	if err != nil { // it names the address, and the variables at fault
		return nil, nil, err
	}
	daemon, err := tracing.ParseDaemonAddress(s.XRayDaemon)
	if err != nil {
		log.Warn(tracing.MsgBadDaemonAddress, slog.String(telemetry.AttrError, fmt.Sprintf("%s: %v", settings.EnvXRayDaemon, err)))
	}
	engine := tracing.New(bucket.NewLazy(conn.Client, bucket.Usage(s.UsageDays), bucket.UsageOfAddresses(s.UsageOfAddresses), bucket.Idempotency(s.Idempotency)), tracing.Options{Daemon: daemon, Log: log})
	opts := GuardOptions(s)
	opts.Cluster, opts.Explain = conn.Cluster, conn.Explain
	return guard.New(engine, opts), conn, nil
}

// GuardOptions returns the failure policy of s: its deadline, failure mode and deny
// cache (asking Redis for the first denial after an admission when s sends events),
// with the default circuit breaker and margin before the invocation's deadline.
// NewGuard adds the connection's cluster mode, for a circuit per range of
// hash slots.
func GuardOptions(s settings.Settings) guard.Options {
	return guard.Options{
		Timeout:        s.Timeout,
		Margin:         guard.DefaultMargin,
		FailOpen:       s.FailOpen,
		FailuresToOpen: guard.DefaultFailuresToOpen,
		ProbeInterval:  guard.DefaultProbeInterval,
		DenyCacheSize:  s.DenyCacheSize,
		AskFirstDenial: s.EventBusName != "", // its Rate Limited event is Redis's to report
	}
}

// Log messages and attribute keys about Redis's eviction policy.
const (
	MsgEvictionPolicy           = "Redis evicts keys under memory pressure: exhausted buckets and quotas come back full; set maxmemory-policy noeviction"
	MsgEvictionPolicyServerless = "ElastiCache Serverless evicts keys at its data storage maximum: exhausted buckets and quotas come back full; keep the maximum above the data stored (CacheMaxDataStorageGB) and watch the cache's Evictions (CacheEvictionsAlarm)"
	MsgEvictionPolicyUnknown    = "Redis eviction policy unknown"
	AttrNode                    = "node"
	AttrPolicy                  = "policy"
)

// evictionReport returns what a connection reports each node's eviction policy to: a
// warning, and a count in metrics (when not nil), for a policy other than noeviction;
// a debug line when it could not be read (miniredis, a server whose INFO lacks it, an
// ACL that refuses INFO): nothing to act on. On ElastiCache Serverless (serverless),
// which has no parameter group and evicts at its data storage maximum whatever one
// asks, such a policy is an info line saying what applies there, and no count: a
// warning and an alarm at every cold start that nothing can silence would teach one to
// ignore both.
func evictionReport(log *slog.Logger, metrics *telemetry.Emitter, serverless bool) func(node, policy string, err error) {
	return func(node, policy string, err error) {
		switch {
		case err != nil:
			log.Debug(MsgEvictionPolicyUnknown, slog.String(AttrNode, node), slog.String(telemetry.AttrError, err.Error()))
		case policy != redisconn.NoEviction && serverless:
			log.Info(MsgEvictionPolicyServerless, slog.String(AttrNode, node), slog.String(AttrPolicy, policy))
		case policy != redisconn.NoEviction:
			log.Warn(MsgEvictionPolicy, slog.String(AttrNode, node), slog.String(AttrPolicy, policy))
			if metrics == nil {
				return
			}
			if err := metrics.EmitEvictionPolicy(time.Now(), policy); err != nil {
				log.Warn("metrics not written", slog.String(telemetry.AttrError, err.Error()))
			}
		}
	}
}
