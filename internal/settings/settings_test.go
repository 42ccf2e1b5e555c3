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
		DenyCacheSize: settings.DefaultDenyCacheSize,
		APIKeyHeader:  settings.DefaultAPIKeyHeader,
		LogLevel:      settings.DefaultLogLevel,
		XRayDaemon:    settings.DefaultXRayDaemon,
		IPv6Prefix:    settings.DefaultIPv6Prefix,

		RegistryCacheTTL:  settings.DefaultRegistryCacheTTL,
		RegistryCacheSize: settings.DefaultRegistryCacheSize,
		RegistryTimeout:   settings.DefaultRegistryTimeout,
	}
	if !reflect.DeepEqual(s, want) {
		t.Fatalf("defaults:\n got %+v\nwant %+v", s, want)
	}
}

func TestLogLevel(t *testing.T) {
	tests := []struct {
		name    string
		value   string
		want    slog.Level
		wantErr bool
	}{
		{"unset", "", settings.DefaultLogLevel, false},
		{"debug", "debug", slog.LevelDebug, false},
		{"upper case", "WARN", slog.LevelWarn, false},
		{"error", "error", slog.LevelError, false},
		{"offset is not a level here", "info+2", 0, true},
		{"unknown", "verbose", 0, true},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			s, err := settings.Load(env(map[string]string{settings.EnvLogLevel: tc.value}))
			if tc.wantErr {
				if err == nil || !strings.Contains(err.Error(), settings.EnvLogLevel) {
					t.Fatalf("error = %v, want one naming %s", err, settings.EnvLogLevel)
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
		{"serverless endpoint with TLS forced off", map[string]string{"REDIS_ADDR": serverlessAddr, "REDIS_TLS": "false"},
			func(s settings.Settings) bool { return s.Serverless && !s.TLS }},
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
		{"deny cache off", map[string]string{"DENY_CACHE_SIZE": "0"},
			func(s settings.Settings) bool { return s.DenyCacheSize == 0 }},
		{"password", map[string]string{"REDIS_USERNAME": "app", "REDIS_PASSWORD": "pw"},
			func(s settings.Settings) bool { return s.Username == "app" && s.Password == "pw" }},
		{"secret", map[string]string{"REDIS_PASSWORD_SECRET_ARN": " arn:aws:secretsmanager:us-east-1:1:secret:x "},
			func(s settings.Settings) bool {
				return s.PasswordSecretARN == "arn:aws:secretsmanager:us-east-1:1:secret:x"
			}},
		{"IAM", map[string]string{"REDIS_IAM_AUTH": "true", "REDIS_USERNAME": "app", "REDIS_CACHE_NAME": "orders"},
			func(s settings.Settings) bool { return s.IAMAuth && s.CacheName == "orders" }},
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

func TestLoadErrorsNameTheVariable(t *testing.T) {
	tests := []struct {
		name string
		env  map[string]string
		want string
	}{
		{"address without port", map[string]string{"REDIS_ADDR": "10.0.0.1"}, "REDIS_ADDR"},
		{"address with empty host", map[string]string{"REDIS_ADDR": ":6379"}, "REDIS_ADDR"},
		{"URL instead of address", map[string]string{"REDIS_ADDR": "rediss://h:6379"}, "REDIS_ADDR"},
		{"cluster mode", map[string]string{"REDIS_CLUSTER": "maybe"}, "REDIS_CLUSTER"},
		{"TLS", map[string]string{"REDIS_TLS": "sometimes"}, "REDIS_TLS"},
		{"serverless", map[string]string{"REDIS_SERVERLESS": "2"}, "REDIS_SERVERLESS"},
		{"IAM flag", map[string]string{"REDIS_IAM_AUTH": "y"}, "REDIS_IAM_AUTH"},
		{"timeout zero", map[string]string{"REDIS_TIMEOUT_MS": "0"}, "REDIS_TIMEOUT_MS"},
		{"timeout unit", map[string]string{"REDIS_TIMEOUT_MS": "50ms"}, "REDIS_TIMEOUT_MS"},
		{"fail mode", map[string]string{"FAIL_MODE": "closed-ish"}, "FAIL_MODE"},
		{"deny cache negative", map[string]string{"DENY_CACHE_SIZE": "-1"}, "DENY_CACHE_SIZE"},
		{"password twice", map[string]string{"REDIS_PASSWORD": "pw", "REDIS_PASSWORD_SECRET_ARN": "arn"}, "REDIS_PASSWORD_SECRET_ARN"},
		{"IAM with password", map[string]string{"REDIS_IAM_AUTH": "true", "REDIS_USERNAME": "u", "REDIS_CACHE_NAME": "c", "REDIS_PASSWORD": "pw"}, "REDIS_PASSWORD"},
		{"IAM without user", map[string]string{"REDIS_IAM_AUTH": "true", "REDIS_CACHE_NAME": "c"}, "REDIS_USERNAME"},
		{"IAM without cache", map[string]string{"REDIS_IAM_AUTH": "true", "REDIS_USERNAME": "u"}, "REDIS_CACHE_NAME"},
		{"configuration twice", map[string]string{"RATE_LIMIT_CONFIG": "a", "RATE_LIMIT_CONFIG_FILE": "/b"}, "RATE_LIMIT_CONFIG_FILE"},
		{"IPv6 prefix zero", map[string]string{"IPV6_PREFIX_LENGTH": "0"}, "IPV6_PREFIX_LENGTH"},
		{"IPv6 prefix too long", map[string]string{"IPV6_PREFIX_LENGTH": "129"}, "IPV6_PREFIX_LENGTH"},
		{"IPv6 prefix with slash", map[string]string{"IPV6_PREFIX_LENGTH": "/64"}, "IPV6_PREFIX_LENGTH"},
		{"registry cache negative", map[string]string{"REGISTRY_CACHE_MS": "-1"}, "REGISTRY_CACHE_MS"},
		{"registry cache seconds", map[string]string{"REGISTRY_CACHE_MS": "30s"}, "REGISTRY_CACHE_MS"},
		{"registry cache empty", map[string]string{"REGISTRY_CACHE_SIZE": "0"}, "REGISTRY_CACHE_SIZE"},
		{"registry cache above the bound", map[string]string{"REGISTRY_CACHE_SIZE": "1000001"}, "REGISTRY_CACHE_SIZE"},
		{"registry timeout zero", map[string]string{"REGISTRY_TIMEOUT_MS": "0"}, "REGISTRY_TIMEOUT_MS"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			_, err := settings.Load(env(tc.env))
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("error %v, want one naming %s", err, tc.want)
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
