package settings_test

import (
	"net"
	"strconv"
	"strings"
	"testing"

	"github.com/bucketgate/bucketgate/internal/settings"
)

// FuzzLoad feeds arbitrary values to the variables that take a format: Load never
// panics, and what it accepts is consistent.
func FuzzLoad(f *testing.F) {
	f.Add("10.0.0.1:6379,10.0.0.2:6379", "auto", "", "true", "", "50", "closed", "10000", "app", "", "")
	f.Add(serverlessAddr, "on", "", "", "true", "25", "open", "0", "app", "", "orders")
	f.Add("[::1]:6379", "OFF", "false", "off", "", "1", "", "", "", "pw", "")
	f.Add("h:1,,h:", "maybe", "2", "yes", "on", "-5", "x", "-1", "", "", "")
	f.Add("h:99999", "", "", "", "", "9999999999999", "", "100000000", "", "", "")
	f.Add(serverlessAddr, "", "", "false", "true", "", "", "", "u", "", "c")
	f.Add(serverlessAddr, "", "", "", "true", "", "", "", "u", "", "Orders")
	f.Fuzz(func(t *testing.T, addr, cluster, serverless, tls, iam, timeout, failMode, denyCache, user, password, cache string) {
		s, err := settings.Load(env(map[string]string{
			"REDIS_ADDR": addr, "REDIS_CLUSTER": cluster, "REDIS_SERVERLESS": serverless, "REDIS_TLS": tls,
			"REDIS_IAM_AUTH": iam, "REDIS_TIMEOUT_MS": timeout, "FAIL_MODE": failMode, "DENY_CACHE_SIZE": denyCache,
			"REDIS_USERNAME": user, "REDIS_PASSWORD": password, "REDIS_CACHE_NAME": cache,
		}))
		if err != nil {
			return
		}
		for _, a := range s.RedisAddrs {
			host, port, err := net.SplitHostPort(a)
			if n, perr := strconv.Atoi(port); err != nil || host == "" || perr != nil || n < 1 || n > 65535 {
				t.Fatalf("accepted address %q", a)
			}
		}
		switch {
		case s.Timeout <= 0, s.Timeout > settings.MaxTimeout, s.DenyCacheSize < 0, s.DenyCacheSize > settings.MaxDenyCacheSize:
			t.Fatalf("accepted %+v", s)
		case (s.IAMAuth || s.Serverless) && !s.TLS:
			t.Fatalf("IAM or a serverless cache accepted without TLS: %+v", s)
		case s.Cluster != settings.ClusterAuto && s.Cluster != settings.ClusterOn && s.Cluster != settings.ClusterOff:
			t.Fatalf("cluster mode %q", s.Cluster)
		case s.IAMAuth && (s.Username == "" || s.CacheName == "" || s.Password != ""):
			t.Fatalf("IAM accepted without its user and cache or with a password: %+v", s)
		case s.IAMAuth && (strings.ToLower(s.CacheName) != s.CacheName || len(s.CacheName) > settings.MaxCacheName):
			t.Fatalf("IAM accepted for a cache name ElastiCache does not store: %q", s.CacheName)
		}
	})
}
