// Package settings reads bucketgate's settings from the environment, once, at init:
// where the configuration document is, how to reach Redis, the failure policy, the API
// key header, logs, metrics and traces. It is the one package that knows the variables;
// package app hands their values down as option structs. Every variable is documented
// in docs/configuration.md with its default.
package settings

import (
	"cmp"
	"fmt"
	"log/slog"
	"slices"
	"strconv"
	"strings"
	"time"
)

// Environment variables. Each one's default and meaning is on its Settings field.
const (
	EnvRedisAddr         = "REDIS_ADDR"
	EnvCluster           = "REDIS_CLUSTER"
	EnvServerless        = "REDIS_SERVERLESS"
	EnvTLS               = "REDIS_TLS"
	EnvUsername          = "REDIS_USERNAME"
	EnvPassword          = "REDIS_PASSWORD"
	EnvPasswordSecretARN = "REDIS_PASSWORD_SECRET_ARN"
	EnvIAMAuth           = "REDIS_IAM_AUTH"
	EnvCacheName         = "REDIS_CACHE_NAME"
	EnvTimeoutMS         = "REDIS_TIMEOUT_MS"
	EnvFailMode          = "FAIL_MODE"
	EnvNamespace         = "METRICS_NAMESPACE"
	EnvDenyCacheSize     = "DENY_CACHE_SIZE"
	EnvConfigInline      = "RATE_LIMIT_CONFIG"
	EnvConfigFile        = "RATE_LIMIT_CONFIG_FILE"
	EnvAPIKeyHeader      = "API_KEY_HEADER"
	EnvLogLevel          = "LOG_LEVEL"
	EnvLambdaLogLevel    = "AWS_LAMBDA_LOG_LEVEL"
	EnvXRayDaemon        = "AWS_XRAY_DAEMON_ADDRESS"
	EnvIPv6Prefix        = "IPV6_PREFIX_LENGTH"
	EnvRegistryTable     = "REGISTRY_TABLE"
	EnvRegistryCacheMS   = "REGISTRY_CACHE_MS"
	EnvRegistryCacheSize = "REGISTRY_CACHE_SIZE"
	EnvRegistryTimeoutMS = "REGISTRY_TIMEOUT_MS"
	EnvStackName         = "STACK_NAME"
	EnvMetricsFlushMS    = "METRICS_FLUSH_MS"
	EnvEventBusName      = "EVENT_BUS_NAME"
	EnvEventsTimeoutMS   = "EVENTS_TIMEOUT_MS"
	EnvOperatorFunction  = "OPERATOR_FUNCTION"
	EnvUsageDays         = "USAGE_RETENTION_DAYS"
	EnvUsageOfAddresses  = "USAGE_OF_ADDRESSES"
	EnvIdempotencyMS     = "IDEMPOTENCY_TTL_MS"
)

// Defaults of the settings that have one.
const (
	// DefaultTimeout is the deadline of one decision when REDIS_TIMEOUT_MS is unset.
	DefaultTimeout = 50 * time.Millisecond
	// DefaultNamespace is the CloudWatch namespace when METRICS_NAMESPACE is unset.
	DefaultNamespace = "bucketgate"
	// DefaultStackName is the Stack dimension of the metrics when STACK_NAME is unset:
	// a run on this machine, not a deployed stack (the template sets the stack's name).
	DefaultStackName = "local"
	// DefaultDenyCacheSize is the deny cache's size in entries when DENY_CACHE_SIZE is unset.
	DefaultDenyCacheSize = 10_000
	// DefaultAPIKeyHeader is the header carrying the API key when API_KEY_HEADER is unset.
	DefaultAPIKeyHeader = "X-API-Key"
	// DefaultLogLevel is the log level when AWS_LAMBDA_LOG_LEVEL and LOG_LEVEL are
	// unset: info, so the one debug line per decision is off and every failure (warn,
	// error) is on.
	DefaultLogLevel = slog.LevelInfo
	// DefaultXRayDaemon is the X-Ray daemon's address when AWS_XRAY_DAEMON_ADDRESS is
	// unset (Lambda sets it for traced functions).
	DefaultXRayDaemon = "127.0.0.1:2000"
	// DefaultIPv6Prefix is the prefix length IPv6 sources are grouped by when
	// IPV6_PREFIX_LENGTH is unset: a subscriber holds a whole /64, one caller.
	DefaultIPv6Prefix = 64
	// DefaultRegistryCacheTTL is how long a registry read answers for its identity when
	// REGISTRY_CACHE_MS is unset: a revocation or plan change takes effect everywhere
	// within it.
	DefaultRegistryCacheTTL = 30 * time.Second
	// DefaultRegistryCacheSize is the registry cache's size in entries when
	// REGISTRY_CACHE_SIZE is unset: a few megabytes at most.
	DefaultRegistryCacheSize = 10_000
	// MaxRegistryCacheSize is the largest REGISTRY_CACHE_SIZE, in entries. An entry's
	// heap does not grow with the routes: at most 320 bytes for an API key on its plan,
	// 512 with an owner (5 MB at the default 10,000 entries, 512 MB at this bound: more
	// than the template's 256 MB function), 1.8 KB for one with 8 rules of its own,
	// 3.25 KB for the worst (a tenant's 1,000-byte key with 8 rules of its own, the
	// longest names, the longest owner an entry keeps): size it to the function's memory. A read that failed keeps a hold per identity
	// too, as many at most (its id and a time: 160 bytes for an API key, 1.25 KB for the
	// longest tenant key). make bench measures the entries
	// (BenchmarkCacheEntryBytes in internal/registry).
	MaxRegistryCacheSize = 1_000_000
	// DefaultRegistryTimeout is the deadline of one registry read when
	// REGISTRY_TIMEOUT_MS is unset.
	DefaultRegistryTimeout = 200 * time.Millisecond
	// DefaultUsageDays is how many UTC days of each identity's usage Redis keeps when
	// USAGE_RETENTION_DAYS is unset: 35, so that a monthly billing period is always
	// whole.
	DefaultUsageDays = 35
	// DefaultMetricsFlush is how often, at most, an instance writes the metrics it has
	// gathered while traffic flows, when METRICS_FLUSH_MS is unset: a second.
	DefaultMetricsFlush = time.Second
	// DefaultEventsTimeout is the deadline of sending an invocation's events when
	// EVENTS_TIMEOUT_MS is unset.
	DefaultEventsTimeout = 100 * time.Millisecond
)

// Bounds of the settings that size something. A value beyond one is an init error that
// names the bound.
const (
	// MaxTimeout is the longest decision deadline REDIS_TIMEOUT_MS may set: a minute,
	// far beyond any useful wait and well inside time.Duration.
	MaxTimeout = time.Minute
	// MaxDenyCacheSize is the largest deny cache DENY_CACHE_SIZE may ask for, in
	// entries: its tables are allocated at init (about 5 MB for 100,000 entries), and
	// its entries hold at most guard.DenyCacheMaxBytes (32 MiB) whatever their number,
	// identities and rules: together under a sixth of the template's 256 MB.
	MaxDenyCacheSize = 100_000
	// MaxNamespace is the longest METRICS_NAMESPACE, in bytes: CloudWatch's own limit.
	MaxNamespace = 255
	// MaxStackName is the longest STACK_NAME, in bytes: CloudFormation's longest stack
	// name. The name is on every metric line.
	MaxStackName = 128
	// MaxCacheName is the longest REDIS_CACHE_NAME, in bytes: ElastiCache's longest
	// replication group or serverless cache name.
	MaxCacheName = 40
	// MaxFunctionName is the longest OPERATOR_FUNCTION, in bytes: Lambda's longest
	// function ARN with a qualifier.
	MaxFunctionName = 170
	// MaxUsageDays is the most days USAGE_RETENTION_DAYS may keep: a year and a month,
	// the script's bound (bucket.MaxUsageDays).
	MaxUsageDays = 400
	// DefaultIdempotency is how long Redis remembers a requestId when
	// IDEMPOTENCY_TTL_MS is unset: 10 minutes.
	DefaultIdempotency = 10 * time.Minute
	// MaxRegistryCacheTTL is the longest REGISTRY_CACHE_MS: a day, beyond which a
	// revocation would hardly be one.
	MaxRegistryCacheTTL = 24 * time.Hour
	// MaxRegistryTimeout is the longest REGISTRY_TIMEOUT_MS: half of the functions'
	// timeout in template.yaml (5 s), so that a read of the table leaves the invocation
	// the time to ask Redis and answer. The function's own timeout is known only at run
	// time (the invocation's deadline): there, every read also ends
	// guard.DefaultMargin (20 ms) before it, and its check is answered by the failure
	// policy.
	MaxRegistryTimeout = 2500 * time.Millisecond
	// MaxMetricsFlush is the longest METRICS_FLUSH_MS: a minute, CloudWatch's period
	// of standard metrics (and what an instance that ends may lose of them).
	MaxMetricsFlush = time.Minute
	// MaxEventsTimeout is the longest EVENTS_TIMEOUT_MS: a second, which an
	// invocation that crossed a threshold may wait for EventBridge at most.
	MaxEventsTimeout = time.Second
)

// FAIL_MODE values.
const (
	FailClosed = "closed"
	FailOpen   = "open"
)

// ClusterMode says how the client finds out whether Redis runs in cluster mode.
type ClusterMode string

// REDIS_CLUSTER values.
const (
	// ClusterAuto asks the server (CLUSTER SLOTS) and follows its answer; a single
	// standalone address works, several seeds must be cluster nodes.
	ClusterAuto ClusterMode = "auto"
	// ClusterOn requires cluster mode: a standalone server is an init error.
	ClusterOn ClusterMode = "on"
	// ClusterOff talks to the one address as a standalone server and never asks.
	ClusterOff ClusterMode = "off"
)

// Settings are the environment's settings, validated. The zero Settings has no Redis
// address; use Load.
type Settings struct {
	// RedisAddrs are the Redis seed addresses, host:port (REDIS_ADDR, comma-separated;
	// no default: redisconn.New refuses an empty list).
	RedisAddrs []string
	// Cluster says how cluster mode is chosen (REDIS_CLUSTER: auto, on or off; default auto).
	Cluster ClusterMode
	// Serverless reports an ElastiCache Serverless cache: TLS on by default and IAM
	// tokens for a serverless cache (REDIS_SERVERLESS: true or false; default true when
	// an address is an endpoint *.serverless.<region>.cache.amazonaws.com[.cn]).
	Serverless bool
	// TLS connects with TLS, verifying the server against the system roots (REDIS_TLS:
	// true or false; default: Serverless).
	TLS bool
	// Username is the ACL user (REDIS_USERNAME; default empty: Redis's default user).
	// With IAM authentication it is the ElastiCache user id.
	Username string
	// Password is the ACL password (REDIS_PASSWORD; default empty: no AUTH).
	Password string
	// PasswordSecretARN names a Secrets Manager secret holding the password, read once
	// at init (REDIS_PASSWORD_SECRET_ARN; an ARN or name; default empty). The secret is
	// the password itself, or JSON with "password" and optionally "username".
	PasswordSecretARN string
	// IAMAuth authenticates with ElastiCache IAM tokens instead of a password
	// (REDIS_IAM_AUTH: true or false; default false). It needs Username and CacheName.
	IAMAuth bool
	// CacheName is the ElastiCache replication group or serverless cache name that IAM
	// tokens are signed for (REDIS_CACHE_NAME; default empty).
	CacheName string
	// Timeout is the deadline of one decision (REDIS_TIMEOUT_MS, whole milliseconds > 0;
	// default DefaultTimeout).
	Timeout time.Duration
	// FailOpen allows requests (reason degraded) when Redis cannot decide (FAIL_MODE:
	// closed or open; default closed).
	FailOpen bool
	// Namespace is the CloudWatch namespace of the metrics (METRICS_NAMESPACE: 1 to
	// MaxNamespace bytes of printable ASCII, not only spaces, not under "AWS/"; default
	// DefaultNamespace).
	Namespace string
	// Stack is the Stack dimension of every metric: the CloudFormation stack the
	// functions belong to, so that two stacks in one account and Region never share a
	// metric, an alarm or a dashboard (STACK_NAME, a stack name: a letter, then up to
	// MaxStackName letters, digits and hyphens in all; default DefaultStackName).
	Stack string
	// DenyCacheSize bounds the in-process deny cache, in entries; zero disables it
	// (DENY_CACHE_SIZE, whole number >= 0; default DefaultDenyCacheSize).
	DenyCacheSize int
	// ConfigInline is the rate-limit configuration document itself, YAML or JSON
	// (RATE_LIMIT_CONFIG; default empty). At most one of ConfigInline and ConfigFile is
	// set; with neither, the built-in configuration applies.
	ConfigInline string
	// ConfigFile is the path of the configuration document (RATE_LIMIT_CONFIG_FILE;
	// default empty).
	ConfigFile string
	// APIKeyHeader is the request header carrying the API key, in any case
	// (API_KEY_HEADER; default DefaultAPIKeyHeader).
	APIKeyHeader string
	// LogLevel is the least severe level logged. It follows Lambda's logging controls:
	// AWS_LAMBDA_LOG_LEVEL, which Lambda sets from the function's LoggingConfig
	// (TRACE, DEBUG, INFO, WARN, ERROR or FATAL), and without it LOG_LEVEL (the same
	// names, any case); default DefaultLogLevel. TRACE is below debug and FATAL above
	// error: nothing bucketgate writes is at either.
	LogLevel slog.Level
	// XRayDaemon is the X-Ray daemon's address, "host:port" or "udp:host:port
	// tcp:host:port" (AWS_XRAY_DAEMON_ADDRESS; default DefaultXRayDaemon).
	XRayDaemon string
	// IPv6Prefix is the prefix length, in bits, that IPv6 sources are grouped by
	// (IPV6_PREFIX_LENGTH, 1 to 128; 128 counts addresses one by one; default
	// DefaultIPv6Prefix).
	IPv6Prefix int
	// RegistryTable is the DynamoDB table of API keys and tenants (REGISTRY_TABLE: a
	// table name, 3 to 255 letters, digits, '_', '-' or '.', blanks around it trimmed;
	// default empty: the configuration document's keys and tenants are the registry).
	// The AWS SDK finds the region, the credentials and any endpoint override
	// (AWS_ENDPOINT_URL_DYNAMODB) itself.
	RegistryTable string
	// RegistryCacheTTL is how long a registry read answers for its identity, found or
	// not (REGISTRY_CACHE_MS, whole milliseconds from 0 to MaxRegistryCacheTTL; 0 reads
	// on every request; default DefaultRegistryCacheTTL).
	RegistryCacheTTL time.Duration
	// RegistryCacheSize bounds the registry cache, in entries (REGISTRY_CACHE_SIZE, 1
	// to MaxRegistryCacheSize; default DefaultRegistryCacheSize).
	RegistryCacheSize int
	// RegistryTimeout is the deadline of one registry read (REGISTRY_TIMEOUT_MS, whole
	// milliseconds from 1 to MaxRegistryTimeout; default DefaultRegistryTimeout).
	RegistryTimeout time.Duration
	// MetricsFlush is how often, at most, an instance writes the EMF metrics of the
	// invocations it served (telemetry.FlushEvery): their sum, a line per outcome,
	// while traffic flows (METRICS_FLUSH_MS, whole milliseconds from 0 to
	// MaxMetricsFlush; 0 writes a line per invocation; default DefaultMetricsFlush).
	MetricsFlush time.Duration
	// EventBusName is the Amazon EventBridge event bus that a decision crossing a
	// threshold sends its event to, by name or ARN (EVENT_BUS_NAME: a bus name, 1 to
	// MaxEventBusName of letters, digits, '.', '-', '_' or '/', or a bus's ARN,
	// arn:<partition>:events:<region>:<account>:event-bus/<name>; blanks around it
	// trimmed; default empty: no events). The AWS SDK finds the region, the credentials
	// and any endpoint override (AWS_ENDPOINT_URL_EVENTBRIDGE) itself.
	EventBusName string
	// EventsTimeout is the deadline of sending an invocation's events
	// (EVENTS_TIMEOUT_MS, whole milliseconds from 1 to MaxEventsTimeout; default
	// DefaultEventsTimeout): past it the events are counted as failed, and the
	// invocation answers as it would have.
	EventsTimeout time.Duration
	// OperatorFunction, when set, makes the check function service-facing: it refuses
	// the operator's operations (resets, and every check naming one of the authorizer's
	// identities), each with an error saying to invoke this function instead, which
	// serves them (OPERATOR_FUNCTION: a Lambda function name, name:alias or ARN, at most
	// MaxFunctionName bytes of letters, digits, '-', '_', ':' or '.'; default empty:
	// every operation is served, as on this machine). The template sets it on the check
	// function to the operator function's name, so that a grant of lambda:InvokeFunction
	// on the check function never grants resets.
	OperatorFunction string
	// UsageDays is how many UTC days of each identity's usage Redis keeps, today
	// included (USAGE_RETENTION_DAYS, 0 to MaxUsageDays; 0 counts no usage; default
	// DefaultUsageDays). Every check that takes tokens counts, in its own script call,
	// in its identity's usage of the day (checks allowed, their cost, checks limited),
	// which the check function's op usage reports.
	UsageDays int
	// UsageOfAddresses is whether usage counts source addresses ("ip:" identities) as
	// well as keys, accounts and tenants (USAGE_OF_ADDRESSES, a boolean; default
	// true). Off, an address's key lives only as long as its buckets and quotas need,
	// not UsageDays, so that traffic from many addresses holds no memory for days; a
	// usage request for an address is then refused.
	UsageOfAddresses bool
	// Idempotency is how long Redis remembers a check's requestId for its identity
	// (IDEMPOTENCY_TTL_MS, 1000 to 86400000 ms; default DefaultIdempotency): the same
	// requestId within it answers the first decision and changes nothing.
	Idempotency time.Duration
}

// Load reads the settings through getenv (os.Getenv in production) and validates them;
// an error names the variable.
func Load(getenv func(string) string) (Settings, error) {
	s := Settings{
		Cluster:       ClusterAuto,
		Timeout:       DefaultTimeout,
		Namespace:     DefaultNamespace,
		Stack:         cmp.Or(getenv(EnvStackName), DefaultStackName),
		DenyCacheSize: DefaultDenyCacheSize,
		Username:      getenv(EnvUsername),
		Password:      getenv(EnvPassword),
		CacheName:     getenv(EnvCacheName),
		// A secret's ARN never holds meaningful spaces; trim what a template adds.
		PasswordSecretARN: strings.TrimSpace(getenv(EnvPasswordSecretARN)),
		ConfigInline:      getenv(EnvConfigInline),
		ConfigFile:        getenv(EnvConfigFile),
		APIKeyHeader:      cmp.Or(getenv(EnvAPIKeyHeader), DefaultAPIKeyHeader),
		XRayDaemon:        cmp.Or(getenv(EnvXRayDaemon), DefaultXRayDaemon),
		RegistryTable:     strings.TrimSpace(getenv(EnvRegistryTable)),
		OperatorFunction:  strings.TrimSpace(getenv(EnvOperatorFunction)),
		EventBusName:      strings.TrimSpace(getenv(EnvEventBusName)),
	}
	if s.ConfigInline != "" && s.ConfigFile != "" {
		return s, fmt.Errorf("set %s or %s, not both", EnvConfigInline, EnvConfigFile)
	}
	var err error
	if s.LogLevel, err = logLevel(getenv); err != nil {
		return s, err
	}
	if s.RedisAddrs, err = parseAddrs(getenv(EnvRedisAddr)); err != nil {
		return s, err
	}
	if s.Cluster, err = parseCluster(getenv(EnvCluster)); err != nil {
		return s, err
	}
	if s.Cluster == ClusterOff && len(s.RedisAddrs) > 1 {
		return s, fmt.Errorf("%s has %d addresses and %s=%s talks to one, the first: give that one alone, or unset %s for a cluster's seeds",
			EnvRedisAddr, len(s.RedisAddrs), EnvCluster, ClusterOff, EnvCluster)
	}
	if s.Serverless, err = parseBool(getenv, EnvServerless, anyServerless(s.RedisAddrs)); err != nil {
		return s, err
	}
	if s.TLS, err = parseBool(getenv, EnvTLS, s.Serverless); err != nil {
		return s, err
	}
	if s.IAMAuth, err = parseBool(getenv, EnvIAMAuth, false); err != nil {
		return s, err
	}
	if s.Timeout, err = parseMillis(getenv, EnvTimeoutMS, DefaultTimeout, time.Millisecond, MaxTimeout); err != nil {
		return s, err
	}
	if err := s.loadRegistry(getenv); err != nil {
		return s, err
	}
	if s.FailOpen, err = parseFailMode(getenv(EnvFailMode)); err != nil {
		return s, err
	}
	if v := getenv(EnvNamespace); v != "" {
		if err := checkNamespace(v); err != nil {
			return s, err
		}
		s.Namespace = v
	}
	if err := checkStackName(s.Stack); err != nil {
		return s, err
	}
	if s.MetricsFlush, err = parseMillis(getenv, EnvMetricsFlushMS, DefaultMetricsFlush, 0, MaxMetricsFlush); err != nil {
		return s, err
	}
	if s.EventsTimeout, err = parseMillis(getenv, EnvEventsTimeoutMS, DefaultEventsTimeout, time.Millisecond, MaxEventsTimeout); err != nil {
		return s, err
	}
	if err := checkEventBus(s.EventBusName); err != nil {
		return s, err
	}
	if err := checkFunctionName(s.OperatorFunction); err != nil {
		return s, err
	}
	if v := getenv(EnvDenyCacheSize); v != "" {
		n, err := strconv.Atoi(v)
		if err != nil || n < 0 || n > MaxDenyCacheSize {
			return s, fmt.Errorf("%s=%q: want a whole number of entries from 0 (no cache) to %d", EnvDenyCacheSize, v, MaxDenyCacheSize)
		}
		s.DenyCacheSize = n
	}
	if s.UsageDays, err = parseWhole(getenv, EnvUsageDays, DefaultUsageDays, 0, MaxUsageDays, "days"); err != nil {
		return s, err
	}
	if s.UsageOfAddresses, err = parseBool(getenv, EnvUsageOfAddresses, true); err != nil {
		return s, err
	}
	ms, err := parseWhole(getenv, EnvIdempotencyMS, int(DefaultIdempotency.Milliseconds()), 1000, 86_400_000, "milliseconds")
	if err != nil {
		return s, err
	}
	s.Idempotency = time.Duration(ms) * time.Millisecond
	if err := s.validateTLS(); err != nil {
		return s, err
	}
	return s, s.validateAuth()
}

// validateTLS refuses what would send a secret in clear text or cannot connect at all:
// IAM tokens (valid 15 minutes) over plain TCP, an AUTH password to an ElastiCache
// endpoint over plain TCP, and TLS off for an ElastiCache Serverless cache, which
// accepts TLS only. A password to another host (a Redis of your own, a local one) may
// go without TLS.
func (s Settings) validateTLS() error {
	switch {
	case s.TLS:
		return nil
	case s.IAMAuth:
		return fmt.Errorf("%s=true sends a signed IAM token, valid 15 minutes, on every connection, and %s is off: set %s=true (ElastiCache IAM authentication needs TLS)", EnvIAMAuth, EnvTLS, EnvTLS)
	case s.Serverless:
		return fmt.Errorf("%s=false for an ElastiCache Serverless cache (%s), which accepts TLS connections only: unset %s or set it to true", EnvTLS, serverlessWhy(s.RedisAddrs), EnvTLS)
	case s.Password != "" || s.PasswordSecretARN != "":
		if addr, ok := elastiCacheAddr(s.RedisAddrs); ok {
			return fmt.Errorf("an AUTH password (%s or %s) would go to the ElastiCache endpoint %s in clear text: set %s=true (ElastiCache takes AUTH over TLS only)", EnvPassword, EnvPasswordSecretARN, addr, EnvTLS)
		}
	}
	return nil
}

// serverlessWhy says why a cache is taken for ElastiCache Serverless: its address, or
// REDIS_SERVERLESS.
func serverlessWhy(addrs []string) string {
	for _, a := range addrs {
		if host, _, err := splitHostPort(a); err == nil && IsServerlessEndpoint(host) {
			return fmt.Sprintf("%s %s", EnvRedisAddr, a)
		}
	}
	return EnvServerless + "=true"
}

// validateAuth reports a contradictory or incomplete choice of authentication.
func (s Settings) validateAuth() error {
	switch {
	case s.Password != "" && s.PasswordSecretARN != "":
		return fmt.Errorf("%s and %s are both set: choose one", EnvPassword, EnvPasswordSecretARN)
	case !s.IAMAuth:
		return nil
	case s.Password != "" || s.PasswordSecretARN != "":
		return fmt.Errorf("%s=true authenticates with IAM tokens: unset %s and %s", EnvIAMAuth, EnvPassword, EnvPasswordSecretARN)
	case s.Username == "":
		return fmt.Errorf("%s=true needs %s: the ElastiCache user id", EnvIAMAuth, EnvUsername)
	case s.CacheName == "":
		return fmt.Errorf("%s=true needs %s: the replication group or serverless cache name", EnvIAMAuth, EnvCacheName)
	}
	return checkCacheName(s.CacheName)
}

// loadRegistry reads the IPv6 prefix length and the registry's variables, and checks
// the registry table's name.
func (s *Settings) loadRegistry(getenv func(string) string) error {
	var err error
	if s.IPv6Prefix, err = parseWhole(getenv, EnvIPv6Prefix, DefaultIPv6Prefix, 1, 128, "bits"); err != nil {
		return err
	}
	if s.RegistryCacheTTL, err = parseMillis(getenv, EnvRegistryCacheMS, DefaultRegistryCacheTTL, 0, MaxRegistryCacheTTL); err != nil {
		return err
	}
	if s.RegistryCacheSize, err = parseWhole(getenv, EnvRegistryCacheSize, DefaultRegistryCacheSize, 1, MaxRegistryCacheSize, "entries"); err != nil {
		return err
	}
	if s.RegistryTimeout, err = parseMillis(getenv, EnvRegistryTimeoutMS, DefaultRegistryTimeout, time.Millisecond, MaxRegistryTimeout); err != nil {
		return fmt.Errorf("%w (at most half the template's 5 s function timeout, for the functions and the middleware alike: a read must leave the decision time to ask Redis and answer)", err)
	}
	if s.RegistryTable != "" {
		return checkTable(s.RegistryTable)
	}
	return nil
}

// parseMillis reads name as whole milliseconds from least to most; def when it is
// unset.
func parseMillis(getenv func(string) string, name string, def, least, most time.Duration) (time.Duration, error) {
	v := getenv(name)
	if v == "" {
		return def, nil
	}
	ms, err := strconv.ParseInt(v, 10, 64)
	if err != nil || ms < least.Milliseconds() || ms > most.Milliseconds() {
		return 0, fmt.Errorf("%s=%q: want a whole number of milliseconds from %d to %d", name, v, least.Milliseconds(), most.Milliseconds())
	}
	return time.Duration(ms) * time.Millisecond, nil
}

// parseWhole reads name as a whole number of unit from least to most; def when it is
// unset.
func parseWhole(getenv func(string) string, name string, def, least, most int, unit string) (int, error) {
	v := getenv(name)
	if v == "" {
		return def, nil
	}
	n, err := strconv.Atoi(v)
	if err != nil || n < least || n > most {
		return 0, fmt.Errorf("%s=%q: want a whole number of %s from %d to %d", name, v, unit, least, most)
	}
	return n, nil
}

// parseAddrs splits a comma-separated list of host:port seeds. A list with credentials
// in it (a URL's user:password@, or anything before an '@': no host name holds one) is
// refused without quoting them, since init errors are logged: the whole list is looked
// at before it is split, as a password may hold a comma, which would split it into
// seeds quoted as they are; what follows the last '@' is quoted only when it is seeds,
// not the rest of a password that holds an '@'.
func parseAddrs(v string) ([]string, error) {
	if at := strings.LastIndexByte(v, '@'); at >= 0 {
		shown := "credentials hidden"
		if _, err := splitAddrs(v[at+1:]); err == nil {
			shown = fmt.Sprintf("%q, all before the last '@' hidden", "***"+strings.TrimSpace(v[at:]))
		}
		return nil, fmt.Errorf("%s: %s: want host:port alone: put the password in %s (or %s) and the user in %s",
			EnvRedisAddr, shown, EnvPassword, EnvPasswordSecretARN, EnvUsername)
	}
	return splitAddrs(v)
}

// splitAddrs splits v, a comma-separated list without credentials, into its host:port
// seeds.
func splitAddrs(v string) ([]string, error) {
	var addrs []string
	for _, a := range strings.Split(v, ",") {
		if a = strings.TrimSpace(a); a == "" {
			continue
		}
		if scheme, rest, ok := strings.Cut(a, "://"); ok {
			return nil, urlError(a, scheme, rest)
		}
		if _, _, err := splitHostPort(a); err != nil {
			return nil, fmt.Errorf("%s: %q: want host:port: %w", EnvRedisAddr, a, err)
		}
		addrs = append(addrs, a)
	}
	return addrs, nil
}

// urlError is the error for the seed a, a URL of scheme: the host:port it names
// (rest up to its path), and REDIS_TLS for a rediss:// URL.
func urlError(a, scheme, rest string) error {
	hostPort, _, _ := strings.Cut(rest, "/")
	give := "host:port"
	if _, _, err := splitHostPort(hostPort); err == nil {
		give = strconv.Quote(hostPort)
	}
	if strings.EqualFold(scheme, "rediss") {
		give += fmt.Sprintf(" with %s=true", EnvTLS)
	}
	return fmt.Errorf("%s: %q: want host:port, not a URL: give %s", EnvRedisAddr, a, give)
}

// parseCluster reads REDIS_CLUSTER's value v, any case, blanks around it trimmed.
func parseCluster(v string) (ClusterMode, error) {
	switch m := ClusterMode(strings.ToLower(strings.TrimSpace(v))); m {
	case "":
		return ClusterAuto, nil
	case ClusterAuto, ClusterOn, ClusterOff:
		return m, nil
	}
	return "", fmt.Errorf("%s=%q: want %q, %q or %q (any case)", EnvCluster, v, ClusterAuto, ClusterOn, ClusterOff)
}

// parseFailMode reads FAIL_MODE's value v, any case, blanks around it trimmed: whether
// to fail open.
func parseFailMode(v string) (bool, error) {
	switch strings.ToLower(strings.TrimSpace(v)) {
	case "", FailClosed:
		return false, nil
	case FailOpen:
		return true, nil
	}
	return false, fmt.Errorf("%s=%q: want %q or %q (any case)", EnvFailMode, v, FailClosed, FailOpen)
}

// Levels of Lambda's logging controls that slog does not name: below debug and above
// error, four steps away as slog's own levels are.
const (
	levelTrace = slog.LevelDebug - 4
	levelFatal = slog.LevelError + 4
)

// logLevel reads AWS_LAMBDA_LOG_LEVEL, else LOG_LEVEL, else gives DefaultLogLevel.
func logLevel(getenv func(string) string) (slog.Level, error) {
	name := EnvLambdaLogLevel
	v := getenv(name)
	if v == "" {
		name, v = EnvLogLevel, getenv(EnvLogLevel)
	}
	switch strings.ToLower(strings.TrimSpace(v)) {
	case "":
		return DefaultLogLevel, nil
	case "trace":
		return levelTrace, nil
	case "debug":
		return slog.LevelDebug, nil
	case "info":
		return slog.LevelInfo, nil
	case "warn":
		return slog.LevelWarn, nil
	case "error":
		return slog.LevelError, nil
	case "fatal":
		return levelFatal, nil
	}
	return 0, fmt.Errorf("%s=%q: want trace, debug, info, warn, error or fatal (any case)", name, v)
}

// Spellings of a boolean variable's values, any case.
var (
	trueWords  = []string{"true", "on", "1", "yes"}
	falseWords = []string{"false", "off", "0", "no"}
)

// parseBool reads a boolean variable (true/on/1/yes or false/off/0/no, any case), or
// def when unset.
func parseBool(getenv func(string) string, name string, def bool) (bool, error) {
	v := strings.ToLower(strings.TrimSpace(getenv(name)))
	switch {
	case v == "":
		return def, nil
	case slices.Contains(trueWords, v):
		return true, nil
	case slices.Contains(falseWords, v):
		return false, nil
	}
	return false, fmt.Errorf("%s=%q: want %s for true or %s for false (any case)", name, getenv(name),
		strings.Join(trueWords, ", "), strings.Join(falseWords, ", "))
}
