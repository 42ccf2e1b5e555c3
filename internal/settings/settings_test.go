package settings_test

import (
	"log/slog"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/bucketgate/bucketgate/internal/settings"
)

func env(m map[string]string) func(string) string { return func(k string) string { return m[k] } }

const serverlessAddr = "orders-cache-ab12cd.serverless.use1.cache.amazonaws.com:6379"

func TestLoadDefaults(t *testing.T) {
	s, err := settings.Load(env(nil))
	if err != nil {
		t.Fatal(err)
	}
	want := settings.Settings{
		Cluster:       settings.ClusterAuto,
		Timeout:       settings.DefaultTimeout,
		Namespace:     settings.DefaultNamespace,
		Stack:         settings.DefaultStackName,
		DenyCacheSize: settings.DefaultDenyCacheSize,
		APIKeyHeader:  settings.DefaultAPIKeyHeader,
		LogLevel:      settings.DefaultLogLevel,
		XRayDaemon:    settings.DefaultXRayDaemon,
		IPv6Prefix:    settings.DefaultIPv6Prefix,

		RegistryCacheTTL:  settings.DefaultRegistryCacheTTL,
		RegistryCacheSize: settings.DefaultRegistryCacheSize,
		RegistryTimeout:   settings.DefaultRegistryTimeout,
		UsageDays:         settings.DefaultUsageDays,
		UsageOfAddresses:  true,
		Idempotency:       settings.DefaultIdempotency,
		MetricsFlush:      settings.DefaultMetricsFlush,
		EventsTimeout:     settings.DefaultEventsTimeout,
	}
	if !reflect.DeepEqual(s, want) {
		t.Fatalf("defaults:\n got %+v\nwant %+v", s, want)
	}
}

// The log level follows Lambda's logging controls (AWS_LAMBDA_LOG_LEVEL, set from the
// function's LoggingConfig), with LOG_LEVEL as the fallback.
func TestLogLevel(t *testing.T) {
	tests := []struct {
		name       string
		lambda     string // AWS_LAMBDA_LOG_LEVEL
		value      string // LOG_LEVEL
		want       slog.Level
		wantErrFor string // the variable an error must name; "" for none
	}{
		{"unset", "", "", settings.DefaultLogLevel, ""},
		{"debug", "", "debug", slog.LevelDebug, ""},
		{"upper case", "", "WARN", slog.LevelWarn, ""},
		{"error", "", "error", slog.LevelError, ""},
		{"offset is not a level here", "", "info+2", 0, settings.EnvLogLevel},
		{"unknown", "", "verbose", 0, settings.EnvLogLevel},
		{"Lambda's level", "DEBUG", "", slog.LevelDebug, ""},
		{"Lambda's level wins over LOG_LEVEL", "ERROR", "debug", slog.LevelError, ""},
		{"Lambda's TRACE is below debug", "TRACE", "", slog.LevelDebug - 4, ""},
		{"Lambda's FATAL is above error", "FATAL", "", slog.LevelError + 4, ""},
		{"Lambda's level unknown", "VERBOSE", "debug", 0, settings.EnvLambdaLogLevel},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			s, err := settings.Load(env(map[string]string{settings.EnvLambdaLogLevel: tc.lambda, settings.EnvLogLevel: tc.value}))
			if tc.wantErrFor != "" {
				if err == nil || !strings.Contains(err.Error(), tc.wantErrFor+"=") {
					t.Fatalf("error = %v, want one naming %s", err, tc.wantErrFor)
				}
				return
			}
			if err != nil || s.LogLevel != tc.want {
				t.Fatalf("LogLevel = %v, %v; want %v", s.LogLevel, err, tc.want)
			}
		})
	}
}

func TestLoad(t *testing.T) {
	tests := []struct {
		name  string
		env   map[string]string
		check func(settings.Settings) bool
	}{
		{"seeds trimmed", map[string]string{"REDIS_ADDR": " 10.0.0.1:6379, ,10.0.0.2:6380 "},
			func(s settings.Settings) bool {
				return reflect.DeepEqual(s.RedisAddrs, []string{"10.0.0.1:6379", "10.0.0.2:6380"})
			}},
		{"serverless endpoint turns TLS on", map[string]string{"REDIS_ADDR": serverlessAddr},
			func(s settings.Settings) bool { return s.Serverless && s.TLS }},
		{"serverless endpoint with TLS said on", map[string]string{"REDIS_ADDR": serverlessAddr, "REDIS_TLS": "yes"},
			func(s settings.Settings) bool { return s.Serverless && s.TLS }},
		{"node endpoint leaves TLS off", map[string]string{"REDIS_ADDR": "master.orders.ab12cd.use1.cache.amazonaws.com:6379"},
			func(s settings.Settings) bool { return !s.Serverless && !s.TLS }},
		{"TLS on", map[string]string{"REDIS_ADDR": "127.0.0.1:6379", "REDIS_TLS": "on"},
			func(s settings.Settings) bool { return s.TLS && !s.Serverless }},
		{"serverless declared for an alias", map[string]string{"REDIS_ADDR": "redis.internal:6379", "REDIS_SERVERLESS": "true"},
			func(s settings.Settings) bool { return s.Serverless && s.TLS }},
		{"cluster off", map[string]string{"REDIS_CLUSTER": "OFF"},
			func(s settings.Settings) bool { return s.Cluster == settings.ClusterOff }},
		{"timeout", map[string]string{"REDIS_TIMEOUT_MS": "25"},
			func(s settings.Settings) bool { return s.Timeout == 25*time.Millisecond }},
		{"fail open", map[string]string{"FAIL_MODE": "open"},
			func(s settings.Settings) bool { return s.FailOpen }},
		// Enumerated values are read as the booleans and REDIS_CLUSTER are: any case,
		// blanks around them trimmed (a console's paste, a YAML block's newline).
		{"fail open in capitals with blanks", map[string]string{"FAIL_MODE": " Open\n"},
			func(s settings.Settings) bool { return s.FailOpen }},
		{"fail closed in capitals", map[string]string{"FAIL_MODE": "CLOSED"},
			func(s settings.Settings) bool { return !s.FailOpen }},
		{"deny cache off", map[string]string{"DENY_CACHE_SIZE": "0"},
			func(s settings.Settings) bool { return s.DenyCacheSize == 0 }},
		{"usage off", map[string]string{"USAGE_RETENTION_DAYS": "0"},
			func(s settings.Settings) bool { return s.UsageDays == 0 }},
		{"usage kept longest", map[string]string{"USAGE_RETENTION_DAYS": "400"},
			func(s settings.Settings) bool { return s.UsageDays == settings.MaxUsageDays }},
		{"password", map[string]string{"REDIS_USERNAME": "app", "REDIS_PASSWORD": "pw"},
			func(s settings.Settings) bool { return s.Username == "app" && s.Password == "pw" }},
		{"password to your own Redis without TLS", map[string]string{"REDIS_ADDR": "redis.internal:6379", "REDIS_PASSWORD": "pw"},
			func(s settings.Settings) bool { return s.Password == "pw" && !s.TLS }},
		{"password to ElastiCache over TLS", map[string]string{"REDIS_ADDR": "master.orders.ab12cd.use1.cache.amazonaws.com:6379", "REDIS_TLS": "true", "REDIS_PASSWORD": "pw"},
			func(s settings.Settings) bool { return s.Password == "pw" && s.TLS }},
		{"secret", map[string]string{"REDIS_PASSWORD_SECRET_ARN": " arn:aws:secretsmanager:us-east-1:1:secret:x "},
			func(s settings.Settings) bool {
				return s.PasswordSecretARN == "arn:aws:secretsmanager:us-east-1:1:secret:x"
			}},
		{"IAM", map[string]string{"REDIS_IAM_AUTH": "true", "REDIS_TLS": "true", "REDIS_USERNAME": "app", "REDIS_CACHE_NAME": "orders"},
			func(s settings.Settings) bool { return s.IAMAuth && s.CacheName == "orders" }},
		{"IAM on a serverless cache, TLS by default", map[string]string{"REDIS_ADDR": serverlessAddr, "REDIS_IAM_AUTH": "on", "REDIS_USERNAME": "app", "REDIS_CACHE_NAME": "orders"},
			func(s settings.Settings) bool { return s.IAMAuth && s.TLS }},
		{"highest port", map[string]string{"REDIS_ADDR": "10.0.0.1:65535"},
			func(s settings.Settings) bool { return s.RedisAddrs[0] == "10.0.0.1:65535" }},
		{"largest deny cache", map[string]string{"DENY_CACHE_SIZE": "100000"},
			func(s settings.Settings) bool { return s.DenyCacheSize == settings.MaxDenyCacheSize }},
		{"longest timeout", map[string]string{"REDIS_TIMEOUT_MS": "60000"},
			func(s settings.Settings) bool { return s.Timeout == settings.MaxTimeout }},
		{"inline configuration", map[string]string{"RATE_LIMIT_CONFIG": "defaultPlan: x"},
			func(s settings.Settings) bool { return s.ConfigInline == "defaultPlan: x" && s.ConfigFile == "" }},
		{"configuration file", map[string]string{"RATE_LIMIT_CONFIG_FILE": "/opt/limits.yaml"},
			func(s settings.Settings) bool { return s.ConfigFile == "/opt/limits.yaml" && s.ConfigInline == "" }},
		{"API key header", map[string]string{"API_KEY_HEADER": "X-Tenant-Key"},
			func(s settings.Settings) bool { return s.APIKeyHeader == "X-Tenant-Key" }},
		{"X-Ray daemon", map[string]string{"AWS_XRAY_DAEMON_ADDRESS": "169.254.79.129:2000"},
			func(s settings.Settings) bool { return s.XRayDaemon == "169.254.79.129:2000" }},
		{"IPv6 one by one", map[string]string{"IPV6_PREFIX_LENGTH": "128"},
			func(s settings.Settings) bool { return s.IPv6Prefix == 128 }},
		{"registry", map[string]string{"REGISTRY_TABLE": " keys ", "REGISTRY_CACHE_MS": "1500", "REGISTRY_CACHE_SIZE": "1000000", "REGISTRY_TIMEOUT_MS": "80"},
			func(s settings.Settings) bool {
				return s.RegistryTable == "keys" && s.RegistryCacheTTL == 1500*time.Millisecond && s.RegistryCacheSize == 1_000_000 && s.RegistryTimeout == 80*time.Millisecond
			}},
		{"registry read on every request", map[string]string{"REGISTRY_CACHE_MS": "0"},
			func(s settings.Settings) bool { return s.RegistryCacheTTL == 0 }},
		{"stack", map[string]string{"STACK_NAME": "orders-prod2"},
			func(s settings.Settings) bool { return s.Stack == "orders-prod2" }},
		{"longest stack name", map[string]string{"STACK_NAME": "S" + strings.Repeat("-", 127)},
			func(s settings.Settings) bool { return len(s.Stack) == settings.MaxStackName }},
		{"metrics a line per invocation", map[string]string{"METRICS_FLUSH_MS": "0"},
			func(s settings.Settings) bool { return s.MetricsFlush == 0 }},
		{"metrics once a minute", map[string]string{"METRICS_FLUSH_MS": "60000"},
			func(s settings.Settings) bool { return s.MetricsFlush == settings.MaxMetricsFlush }},
		{"event bus by name", map[string]string{"EVENT_BUS_NAME": " bucketgate-events ", "EVENTS_TIMEOUT_MS": "1"},
			func(s settings.Settings) bool {
				return s.EventBusName == "bucketgate-events" && s.EventsTimeout == time.Millisecond
			}},
		{"the default event bus", map[string]string{"EVENT_BUS_NAME": "default"},
			func(s settings.Settings) bool { return s.EventBusName == "default" }},
		{"a partner event bus", map[string]string{"EVENT_BUS_NAME": "aws.partner/example.com/1234/billing"},
			func(s settings.Settings) bool { return s.EventBusName == "aws.partner/example.com/1234/billing" }},
		{"event bus by ARN, in another partition", map[string]string{"EVENT_BUS_NAME": "arn:aws-us-gov:events:us-gov-west-1:123456789012:event-bus/limits"},
			func(s settings.Settings) bool { return strings.HasSuffix(s.EventBusName, "/limits") }},
		{"longest event bus name, longest events timeout", map[string]string{"EVENT_BUS_NAME": strings.Repeat("b", 256), "EVENTS_TIMEOUT_MS": "1000"},
			func(s settings.Settings) bool {
				return len(s.EventBusName) == settings.MaxEventBusName && s.EventsTimeout == settings.MaxEventsTimeout
			}},
		{"operator function", map[string]string{"OPERATOR_FUNCTION": " bucketgate-operator "},
			func(s settings.Settings) bool { return s.OperatorFunction == "bucketgate-operator" }},
		{"operator function by its alias's ARN", map[string]string{"OPERATOR_FUNCTION": "arn:aws:lambda:us-east-1:123456789012:function:bucketgate-operator:live"},
			func(s settings.Settings) bool { return strings.HasSuffix(s.OperatorFunction, ":live") }},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			s, err := settings.Load(env(tc.env))
			if err != nil {
				t.Fatal(err)
			}
			if !tc.check(s) {
				t.Fatalf("%+v", s)
			}
		})
	}
}

// iam is a complete IAM authentication setting, with TLS on.
var iam = map[string]string{"REDIS_IAM_AUTH": "true", "REDIS_TLS": "true", "REDIS_USERNAME": "u", "REDIS_CACHE_NAME": "c"}

// with returns a copy of base with the variables of more set.
func with(base map[string]string, more ...string) map[string]string {
	m := map[string]string{}
	for k, v := range base {
		m[k] = v
	}
	for i := 0; i+1 < len(more); i += 2 {
		m[more[i]] = more[i+1]
	}
	return m
}

// Every refusal names the variable, and where a bound is at fault, the bound; a
// boolean's lists every spelling it accepts.
func TestLoadErrorsNameTheVariable(t *testing.T) {
	tests := []struct {
		name string
		env  map[string]string
		want []string
	}{
		{"address without port", map[string]string{"REDIS_ADDR": "10.0.0.1"}, []string{"REDIS_ADDR"}},
		{"address with empty host", map[string]string{"REDIS_ADDR": ":6379"}, []string{"REDIS_ADDR"}},
		{"TLS URL instead of address", map[string]string{"REDIS_ADDR": "rediss://h:6379"}, []string{"REDIS_ADDR", "not a URL", `"h:6379"`, "REDIS_TLS=true"}},
		{"URL instead of address", map[string]string{"REDIS_ADDR": "10.0.0.1:6379,redis://h:6379/0"}, []string{"REDIS_ADDR", `"redis://h:6379/0"`, "not a URL", `"h:6379"`}},
		{"URL without port", map[string]string{"REDIS_ADDR": "redis://h"}, []string{"REDIS_ADDR", "not a URL", "host:port"}},
		{"port beyond 65535", map[string]string{"REDIS_ADDR": "127.0.0.1:99999"}, []string{"REDIS_ADDR", `port "99999"`, "1 to 65535"}},
		{"port not a number", map[string]string{"REDIS_ADDR": "127.0.0.1:abc"}, []string{"REDIS_ADDR", `port "abc"`}},
		{"port zero", map[string]string{"REDIS_ADDR": "127.0.0.1:0"}, []string{"REDIS_ADDR", `port "0"`}},
		{"negative port", map[string]string{"REDIS_ADDR": "127.0.0.1:-1"}, []string{"REDIS_ADDR", `port "-1"`}},
		{"signed port", map[string]string{"REDIS_ADDR": "127.0.0.1:+6379"}, []string{"REDIS_ADDR", `port "+6379"`}},
		{"second seed's port", map[string]string{"REDIS_ADDR": "10.0.0.1:6379,10.0.0.2:70000"}, []string{"REDIS_ADDR", "10.0.0.2:70000"}},
		{"cluster mode", map[string]string{"REDIS_CLUSTER": "maybe"}, []string{"REDIS_CLUSTER"}},
		{"several seeds, cluster mode off", map[string]string{"REDIS_ADDR": "10.0.0.1:6379,10.0.0.2:6379", "REDIS_CLUSTER": "off"}, []string{"REDIS_ADDR", "2 addresses", "REDIS_CLUSTER=off", "one"}},
		{"TLS", map[string]string{"REDIS_TLS": "perhaps"}, []string{"REDIS_TLS", `"perhaps"`, "true, on, 1, yes", "false, off, 0, no"}},
		{"serverless", map[string]string{"REDIS_SERVERLESS": "2"}, []string{"REDIS_SERVERLESS", "true, on, 1, yes"}},
		{"IAM flag", map[string]string{"REDIS_IAM_AUTH": "y"}, []string{"REDIS_IAM_AUTH", "false, off, 0, no"}},
		{"timeout zero", map[string]string{"REDIS_TIMEOUT_MS": "0"}, []string{"REDIS_TIMEOUT_MS"}},
		{"timeout unit", map[string]string{"REDIS_TIMEOUT_MS": "50ms"}, []string{"REDIS_TIMEOUT_MS"}},
		{"timeout beyond the bound", map[string]string{"REDIS_TIMEOUT_MS": "60001"}, []string{"REDIS_TIMEOUT_MS", "60000"}},
		{"timeout that would overflow", map[string]string{"REDIS_TIMEOUT_MS": "9223372036854"}, []string{"REDIS_TIMEOUT_MS", "60000"}},
		{"fail mode", map[string]string{"FAIL_MODE": "closed-ish"}, []string{`FAIL_MODE="closed-ish": want "closed" or "open" (any case)`}},
		{"cluster mode's values", map[string]string{"REDIS_CLUSTER": "yes"}, []string{`REDIS_CLUSTER="yes": want "auto", "on" or "off" (any case)`}},
		{"deny cache negative", map[string]string{"DENY_CACHE_SIZE": "-1"}, []string{"DENY_CACHE_SIZE"}},
		{"usage kept 401 days", map[string]string{"USAGE_RETENTION_DAYS": "401"}, []string{"USAGE_RETENTION_DAYS", "want a whole number of days from 0 to 400"}},
		{"usage kept -1 days", map[string]string{"USAGE_RETENTION_DAYS": "-1"}, []string{"USAGE_RETENTION_DAYS"}},
		{"usage kept a month", map[string]string{"USAGE_RETENTION_DAYS": "1M"}, []string{"USAGE_RETENTION_DAYS", `"1M"`}},
		{"idempotency below a second", map[string]string{"IDEMPOTENCY_TTL_MS": "999"}, []string{"IDEMPOTENCY_TTL_MS", "want a whole number of milliseconds from 1000 to 86400000"}},
		{"idempotency of a week", map[string]string{"IDEMPOTENCY_TTL_MS": "604800000"}, []string{"IDEMPOTENCY_TTL_MS"}},
		{"deny cache of 10^8", map[string]string{"DENY_CACHE_SIZE": "100000000"}, []string{"DENY_CACHE_SIZE", "100000"}},
		{"deny cache beyond int", map[string]string{"DENY_CACHE_SIZE": "99999999999999999999"}, []string{"DENY_CACHE_SIZE", "100000"}},
		{"namespace too long", map[string]string{"METRICS_NAMESPACE": strings.Repeat("n", 256)}, []string{"METRICS_NAMESPACE", "256 bytes", "255"}},
		{"namespace of spaces", map[string]string{"METRICS_NAMESPACE": "   "}, []string{"METRICS_NAMESPACE", "a character other than a space"}},
		{"namespace with a newline", map[string]string{"METRICS_NAMESPACE": "orders\n"}, []string{"METRICS_NAMESPACE", `"orders\n"`, "printable ASCII"}},
		{"namespace not ASCII", map[string]string{"METRICS_NAMESPACE": "débit"}, []string{"METRICS_NAMESPACE", "printable ASCII"}},
		{"namespace of AWS", map[string]string{"METRICS_NAMESPACE": "AWS/Lambda"}, []string{"METRICS_NAMESPACE", "AWS/"}},
		{"registry table with a space", map[string]string{"REGISTRY_TABLE": "my keys"}, []string{"REGISTRY_TABLE", `"my keys"`, "3 to 255"}},
		{"registry table too short", map[string]string{"REGISTRY_TABLE": "k"}, []string{"REGISTRY_TABLE", "3 to 255"}},
		{"registry table as an ARN", map[string]string{"REGISTRY_TABLE": "arn:aws:dynamodb:us-east-1:123456789012:table/keys"}, []string{"REGISTRY_TABLE", "a table name"}},
		{"password twice", map[string]string{"REDIS_PASSWORD": "pw", "REDIS_PASSWORD_SECRET_ARN": "arn"}, []string{"REDIS_PASSWORD_SECRET_ARN"}},
		{"IAM with password", with(iam, "REDIS_PASSWORD", "pw"), []string{"REDIS_PASSWORD"}},
		{"IAM without user", with(iam, "REDIS_USERNAME", ""), []string{"REDIS_USERNAME"}},
		{"IAM without cache", with(iam, "REDIS_CACHE_NAME", ""), []string{"REDIS_CACHE_NAME"}},
		{"IAM cache name in uppercase", with(iam, "REDIS_CACHE_NAME", "Orders-Prod"), []string{`REDIS_CACHE_NAME="Orders-Prod"`, "lowercase", "WRONGPASS", "REDIS_CACHE_NAME=orders-prod"}},
		{"IAM cache name with an underscore", with(iam, "REDIS_CACHE_NAME", "orders_prod"), []string{`REDIS_CACHE_NAME="orders_prod"`, "lowercase letters, digits and hyphens"}},
		{"IAM cache name starting with a digit", with(iam, "REDIS_CACHE_NAME", "1orders"), []string{"REDIS_CACHE_NAME", "a letter first"}},
		{"IAM cache name with two hyphens in a row", with(iam, "REDIS_CACHE_NAME", "orders--prod"), []string{"REDIS_CACHE_NAME", "two hyphens in a row"}},
		{"IAM cache name ending with a hyphen", with(iam, "REDIS_CACHE_NAME", "orders-"), []string{"REDIS_CACHE_NAME", "one at the end"}},
		{"IAM cache name too long", with(iam, "REDIS_CACHE_NAME", strings.Repeat("c", 41)), []string{"REDIS_CACHE_NAME", "1 to 40"}},
		{"IAM cache name in uppercase too long", with(iam, "REDIS_CACHE_NAME", strings.Repeat("C", 41)), []string{"REDIS_CACHE_NAME", "1 to 40"}},
		{"IAM without TLS", with(iam, "REDIS_TLS", ""), []string{"REDIS_IAM_AUTH", "REDIS_TLS"}},
		{"IAM with TLS off", with(iam, "REDIS_TLS", "false"), []string{"REDIS_IAM_AUTH", "REDIS_TLS"}},
		{"IAM with TLS off on a serverless cache", with(iam, "REDIS_TLS", "off", "REDIS_ADDR", serverlessAddr), []string{"REDIS_IAM_AUTH", "REDIS_TLS"}},
		{"serverless endpoint with TLS off", map[string]string{"REDIS_ADDR": serverlessAddr, "REDIS_TLS": "false"}, []string{"REDIS_TLS", "REDIS_ADDR " + serverlessAddr}},
		{"serverless seed among others with TLS off", map[string]string{"REDIS_ADDR": "10.0.0.1:6379," + serverlessAddr, "REDIS_TLS": "0"}, []string{"REDIS_TLS", serverlessAddr}},
		{"serverless declared with TLS off", map[string]string{"REDIS_ADDR": "redis.internal:6379", "REDIS_SERVERLESS": "true", "REDIS_TLS": "no"}, []string{"REDIS_TLS", "REDIS_SERVERLESS=true"}},
		{"configuration twice", map[string]string{"RATE_LIMIT_CONFIG": "a", "RATE_LIMIT_CONFIG_FILE": "/b"}, []string{"RATE_LIMIT_CONFIG_FILE"}},
		{"password to ElastiCache in clear text", map[string]string{"REDIS_ADDR": "master.orders.ab12cd.use1.cache.amazonaws.com:6379", "REDIS_PASSWORD": "pw"}, []string{"REDIS_TLS=true", "REDIS_PASSWORD"}},
		{"password secret to ElastiCache in clear text", map[string]string{"REDIS_ADDR": "orders.ab12cd.clustercfg.use1.cache.amazonaws.com.cn:6379", "REDIS_PASSWORD_SECRET_ARN": "arn"}, []string{"REDIS_TLS=true"}},
		{"Lambda log level", map[string]string{"AWS_LAMBDA_LOG_LEVEL": "LOUD"}, []string{"AWS_LAMBDA_LOG_LEVEL", "trace, debug, info, warn, error or fatal"}},
		{"IPv6 prefix zero", map[string]string{"IPV6_PREFIX_LENGTH": "0"}, []string{"IPV6_PREFIX_LENGTH", "1 to 128"}},
		{"IPv6 prefix too long", map[string]string{"IPV6_PREFIX_LENGTH": "129"}, []string{"IPV6_PREFIX_LENGTH", "1 to 128"}},
		{"IPv6 prefix with slash", map[string]string{"IPV6_PREFIX_LENGTH": "/64"}, []string{"IPV6_PREFIX_LENGTH"}},
		{"registry cache negative", map[string]string{"REGISTRY_CACHE_MS": "-1"}, []string{"REGISTRY_CACHE_MS", "0 to 86400000"}},
		{"registry cache seconds", map[string]string{"REGISTRY_CACHE_MS": "30s"}, []string{"REGISTRY_CACHE_MS"}},
		{"registry cache that would overflow", map[string]string{"REGISTRY_CACHE_MS": "9223372036854"}, []string{"REGISTRY_CACHE_MS", "86400000"}},
		{"registry cache empty", map[string]string{"REGISTRY_CACHE_SIZE": "0"}, []string{"REGISTRY_CACHE_SIZE", "1 to 1000000"}},
		{"registry cache above the bound", map[string]string{"REGISTRY_CACHE_SIZE": "1000001"}, []string{"REGISTRY_CACHE_SIZE", "1000000"}},
		{"stack name too long", map[string]string{"STACK_NAME": strings.Repeat("s", 129)}, []string{"STACK_NAME", "128 bytes at most"}},
		{"stack name starting with a digit", map[string]string{"STACK_NAME": "2orders"}, []string{"STACK_NAME", `"2orders"`, "a letter"}},
		{"stack name with an underscore", map[string]string{"STACK_NAME": "orders_prod"}, []string{"STACK_NAME", "hyphens"}},
		{"stack name of spaces", map[string]string{"STACK_NAME": " "}, []string{"STACK_NAME"}},
		{"registry timeout zero", map[string]string{"REGISTRY_TIMEOUT_MS": "0"}, []string{"REGISTRY_TIMEOUT_MS", "1 to 2500"}},
		// A read that could outlast the function's own timeout (the template's: 5 s).
		{"registry timeout beyond the function's", map[string]string{"REGISTRY_TIMEOUT_MS": "60000"}, []string{"REGISTRY_TIMEOUT_MS=\"60000\"", "1 to 2500", "function timeout", "the middleware alike"}},
		{"registry timeout just beyond the bound", map[string]string{"REGISTRY_TIMEOUT_MS": "2501"}, []string{"REGISTRY_TIMEOUT_MS", "2500"}},
		{"metrics flush beyond a minute", map[string]string{"METRICS_FLUSH_MS": "60001"}, []string{"METRICS_FLUSH_MS", "0 to 60000"}},
		{"metrics flush negative", map[string]string{"METRICS_FLUSH_MS": "-1"}, []string{"METRICS_FLUSH_MS"}},
		{"metrics flush in seconds", map[string]string{"METRICS_FLUSH_MS": "1s"}, []string{"METRICS_FLUSH_MS"}},
		{"event bus name with a space", map[string]string{"EVENT_BUS_NAME": "bucketgate events"}, []string{"EVENT_BUS_NAME", `"bucketgate events"`, "event bus name"}},
		{"event bus name too long", map[string]string{"EVENT_BUS_NAME": strings.Repeat("b", 257)}, []string{"EVENT_BUS_NAME", "256"}},
		{"event bus ARN of another service", map[string]string{"EVENT_BUS_NAME": "arn:aws:sqs:us-east-1:123456789012:queue"}, []string{"EVENT_BUS_NAME", "not the ARN of an event bus"}},
		{"event bus ARN of a rule", map[string]string{"EVENT_BUS_NAME": "arn:aws:events:us-east-1:123456789012:rule/limits"}, []string{"EVENT_BUS_NAME", "event-bus/<name>"}},
		{"event bus ARN without a name", map[string]string{"EVENT_BUS_NAME": "arn:aws:events:us-east-1:123456789012:event-bus/"}, []string{"EVENT_BUS_NAME"}},
		{"event bus ARN with a short account", map[string]string{"EVENT_BUS_NAME": "arn:aws:events:us-east-1:1234:event-bus/limits"}, []string{"EVENT_BUS_NAME"}},
		{"event bus URL", map[string]string{"EVENT_BUS_NAME": "https://events.us-east-1.amazonaws.com"}, []string{"EVENT_BUS_NAME"}},
		{"events timeout zero", map[string]string{"EVENTS_TIMEOUT_MS": "0"}, []string{"EVENTS_TIMEOUT_MS", "1 to 1000"}},
		{"events timeout beyond a second", map[string]string{"EVENTS_TIMEOUT_MS": "1001"}, []string{"EVENTS_TIMEOUT_MS", "1 to 1000"}},
		{"events timeout in seconds", map[string]string{"EVENTS_TIMEOUT_MS": "0.1"}, []string{"EVENTS_TIMEOUT_MS"}},
		{"operator function with a space", map[string]string{"OPERATOR_FUNCTION": "bucketgate operator"}, []string{"OPERATOR_FUNCTION", `"bucketgate operator"`, "name:alias or ARN"}},
		{"operator function too long", map[string]string{"OPERATOR_FUNCTION": strings.Repeat("f", 171)}, []string{"OPERATOR_FUNCTION", "at most 170"}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			_, err := settings.Load(env(tc.env))
			if err == nil {
				t.Fatalf("loaded; want an error naming %q", tc.want)
			}
			for _, want := range tc.want {
				if !strings.Contains(err.Error(), want) {
					t.Errorf("error %q does not name %q", err, want)
				}
			}
		})
	}
}

func TestIsServerlessEndpoint(t *testing.T) {
	tests := []struct {
		host string
		want bool
	}{
		{"orders-cache-ab12cd.serverless.use1.cache.amazonaws.com", true},
		{"ORDERS-CACHE-AB12CD.SERVERLESS.USE1.CACHE.AMAZONAWS.COM.", true},
		{"orders-ab12cd.serverless.cnn1.cache.amazonaws.com.cn", true},
		{"master.orders.ab12cd.use1.cache.amazonaws.com", false},
		{"clustercfg.orders.ab12cd.use1.cache.amazonaws.com", false},
		{"a.b.serverless.use1.cache.amazonaws.com", false},
		{"serverless.use1.cache.amazonaws.com", false},
		{"orders.serverless.use1.cache.amazonaws.com.evil.example", false},
		{"127.0.0.1", false},
	}
	for _, tc := range tests {
		if got := settings.IsServerlessEndpoint(tc.host); got != tc.want {
			t.Errorf("IsServerlessEndpoint(%q) = %v, want %v", tc.host, got, tc.want)
		}
	}
}

// A REDIS_ADDR written as a URL with credentials, or with a user and password before
// the host, is refused naming the variable and where the password goes, and the error
// never quotes the credentials: an init error lands in the function's log.
func TestRedisAddrCredentialsNeverEchoed(t *testing.T) {
	for _, addr := range []string{
		"rediss://user:s3cret-pw@host.example:6379",
		"redis://:s3cret-pw@host.example:6379",
		"user:s3cret-pw@host.example:6379",
		"s3cret-pw@host.example:6379",
		"10.0.0.1:6379,rediss://app:s3cret-pw@10.0.0.2:6379",
		// A comma in the password (ElastiCache AUTH tokens may hold one) splits it in
		// two seeds: neither half may be quoted.
		"rediss://user:s3cret,pw@host.example:6379",
		"user:s3cret,pw@host.example:6379",
		":s3cret,pw@host.example:6379",
		"10.0.0.2:6379,rediss://user:s3cret,pw@host.example:6379",
		// A password holding an '@' given in place of the address: what follows the
		// '@' is no host:port, so it is not quoted either.
		"pw@s3cret",
	} {
		t.Run(addr, func(t *testing.T) {
			_, err := settings.Load(env(map[string]string{"REDIS_ADDR": addr}))
			if err == nil {
				t.Fatal("loaded; want an error")
			}
			msg := err.Error()
			if strings.Contains(msg, "s3cret") || !strings.Contains(msg, "REDIS_ADDR") || !strings.Contains(msg, "REDIS_PASSWORD") || !strings.Contains(msg, "host:port") {
				t.Fatalf("error %q: want REDIS_ADDR, host:port and REDIS_PASSWORD named, the password nowhere", msg)
			}
		})
	}
}
