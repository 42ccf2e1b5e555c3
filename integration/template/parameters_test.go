package template_test

import (
	"maps"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"gopkg.in/yaml.v3"

	"github.com/bucketgate/bucketgate/internal/identity"
	"github.com/bucketgate/bucketgate/internal/localgw"
	"github.com/bucketgate/bucketgate/internal/settings"
)

// narrowed are the Number parameters whose MaxValue is below the bound of their
// variable on purpose, with the deadline that bounds them: a decision's deadline with
// the registry's read must end inside the functions' timeout, or Lambda kills the
// invocation (and its instance) before the limiter answers. Rules cannot compare
// numbers, so the parameter's own bound refuses it, as early.
var narrowed = map[string]time.Duration{
	"RedisTimeoutMs": settings.DefaultRegistryTimeout, // the template sets no REGISTRY_TIMEOUT_MS
}

// Every Number parameter that sets a function's environment variable has the bounds
// settings.Load enforces on that variable, so that a value sam deploy accepts never
// stops the functions at init: its MinValue and MaxValue load, one beyond either fails;
// but a narrowed parameter's MaxValue, which with its companion's deadline ends before
// the functions' Timeout, at least a second before it. That Timeout is the deadline make
// run gives its functions (localgw.FunctionTimeout).
func TestTemplateNumberParametersHoldTheSettingsBounds(t *testing.T) {
	tpl := loadTemplate(t, limiter)
	var globals struct {
		Globals struct {
			Function struct {
				Timeout int64 `yaml:"Timeout"`
			} `yaml:"Function"`
		} `yaml:"Globals"`
	}
	if err := yaml.Unmarshal([]byte(readFile(t, limiter)), &globals); err != nil || globals.Globals.Function.Timeout == 0 {
		t.Fatalf("Globals.Function.Timeout: %v (%v)", globals.Globals.Function.Timeout, err)
	}
	timeout := time.Duration(globals.Globals.Function.Timeout) * time.Second
	if timeout != localgw.FunctionTimeout {
		t.Errorf("Globals.Function.Timeout %v, and localgw.FunctionTimeout %v: make run's functions would run under another deadline than the deployed ones", timeout, localgw.FunctionTimeout)
	}
	checked := map[string]bool{}
	for _, name := range goFunctions(t) {
		vars := tpl.function(t, tpl.Resources[logicalID(name)]).Environment.Variables
		for _, env := range slices.Sorted(maps.Keys(vars)) {
			ref, _ := vars[env].(string) // !Ref Param decodes as "Param"
			p, ok := tpl.Parameters[ref]
			if !ok || p.Type != "Number" || checked[ref] {
				continue
			}
			checked[ref] = true
			if p.MinValue == nil || p.MaxValue == nil {
				t.Errorf("parameter %s (%s of %s) lacks MinValue or MaxValue: want both, the bounds of %s", ref, env, name, env)
				continue
			}
			load := func(v int64) error {
				_, err := settingsWith(env, strconv.FormatInt(v, 10))
				return err
			}
			for _, v := range []int64{*p.MinValue, *p.MaxValue} {
				if err := load(v); err != nil {
					t.Errorf("parameter %s allows %d, which stops the functions at init: %v", ref, v, err)
				}
			}
			beyond := []int64{*p.MinValue - 1, *p.MaxValue + 1}
			if companion, ok := narrowed[ref]; ok {
				beyond = beyond[:1]
				if deadline := time.Duration(*p.MaxValue)*time.Millisecond + companion; deadline > timeout-time.Second {
					t.Errorf("parameter %s allows %d ms, which with %v more ends at %v, not a second before the functions' Timeout %v", ref, *p.MaxValue, companion, deadline, timeout)
				}
			}
			for _, v := range beyond {
				if load(v) == nil {
					t.Errorf("parameter %s refuses %d, which %s accepts: its bounds are narrower than the code's", ref, v, env)
				}
			}
		}
	}
	if len(checked) < 2 {
		t.Fatalf("checked %v, want every Number parameter that sets a variable: is the template read right?", slices.Sorted(maps.Keys(checked)))
	}
}

// ExistingRegistryTable's AllowedPattern takes exactly the names REGISTRY_TABLE loads
// with (and the empty default, which creates a table), so that sam deploy refuses a name
// that would stop the functions at init instead of deploying them.
func TestTemplateRegistryTablePatternHoldsTheSettingsRule(t *testing.T) {
	pattern := allowedPattern(t, "ExistingRegistryTable")
	tests := []struct {
		name, table string
	}{
		{"the default: create one", ""},
		{"a plain name", "bucketgate-keys"},
		{"every kind of byte", "Keys_v2.prod-1"},
		{"the shortest", "abc"},
		{"the longest", strings.Repeat("k", 255)},
		{"too short", "ab"},
		{"too long", strings.Repeat("k", 256)},
		{"a space", "my keys"},
		{"an ARN", "arn:aws:dynamodb:us-east-1:123456789012:table/keys"},
		{"a slash", "keys/v2"},
		{"not ASCII", "schlüssel"},
	}
	for _, tc := range tests {
		_, err := settingsWith(settings.EnvRegistryTable, tc.table)
		if loads, allowed := err == nil, pattern.MatchString(tc.table); loads != allowed {
			t.Errorf("%s: %q: the pattern allows it %v, settings loads it %v (%v)", tc.name, tc.table, allowed, loads, err)
		}
	}
}

// CacheName and RedisIamAuthCacheName (AllowedPattern and MaxLength) take exactly the
// names the functions sign IAM tokens for (REDIS_CACHE_NAME with REDIS_IAM_AUTH), and
// empty (a name made up, or no IAM authentication), so that sam deploy refuses a name
// that would stop the functions at init instead of deploying them.
func TestTemplateCacheNamePatternsHoldTheSettingsRule(t *testing.T) {
	params := loadTemplate(t, limiter).Parameters
	for _, param := range []string{"CacheName", "RedisIamAuthCacheName"} {
		pattern, maxLength := allowedPattern(t, param), params[param].MaxLength
		if maxLength == nil {
			t.Fatalf("%s has no MaxLength", param)
		}
		for _, tc := range []struct{ name, cache string }{
			{"a plain name", "orders-cache"},
			{"one letter", "c"},
			{"the longest", strings.Repeat("c", settings.MaxCacheName)},
			{"too long", strings.Repeat("c", settings.MaxCacheName+1)},
			{"in uppercase", "Orders-Cache"},
			{"a digit first", "1orders"},
			{"two hyphens in a row", "orders--cache"},
			{"a hyphen at the end", "orders-"},
			{"an underscore", "orders_cache"},
			{"an ARN", "arn:aws:elasticache:us-east-1:123456789012:replicationgroup:orders-cache"},
		} {
			_, err := settings.Load(func(k string) string {
				return map[string]string{settings.EnvIAMAuth: "true", settings.EnvTLS: "true", settings.EnvUsername: "app", settings.EnvCacheName: tc.cache}[k]
			})
			if loads, allowed := err == nil, pattern.MatchString(tc.cache) && len(tc.cache) <= *maxLength; loads != allowed {
				t.Errorf("%s %s: %q: the parameter allows it %v, settings loads it %v (%v)", param, tc.name, tc.cache, allowed, loads, err)
			}
		}
		if !pattern.MatchString("") {
			t.Errorf("%s refuses its empty default", param)
		}
	}
}

// ApiKeyHeader's AllowedPattern takes exactly the header names the authorizer starts
// with (API_KEY_HEADER; empty is the default header), so that sam deploy refuses a name
// that would stop the authorizer at init, every request of the APIs then failing,
// instead of deploying it.
func TestTemplateApiKeyHeaderPatternHoldsTheResolversRule(t *testing.T) {
	pattern := allowedPattern(t, "ApiKeyHeader")
	tests := []struct {
		name, header string
	}{
		{"the default", "X-API-Key"},
		{"empty: the default header", ""},
		{"every kind of byte", "x_key.v2!#$%&'*+^`|~9"},
		{"a space", "X API Key"},
		{"a colon", "X-API-Key:"},
		{"a slash", "api/key"},
		{"quoted", `"X-API-Key"`},
		{"not ASCII", "Schlüssel"},
		{"a new line", "X-API-Key\nX"},
	}
	for _, tc := range tests {
		s, err := settingsWith(settings.EnvAPIKeyHeader, tc.header)
		if err == nil {
			_, err = identity.NewResolver(s.APIKeyHeader, s.IPv6Prefix)
		}
		if starts, allowed := err == nil, pattern.MatchString(tc.header); starts != allowed {
			t.Errorf("%s: %q: the pattern allows it %v, the authorizer starts with it %v (%v)", tc.name, tc.header, allowed, starts, err)
		}
	}
}

// RedisEndpoint's AllowedPattern takes only addresses REDIS_ADDR loads with (seeds of
// host:port, or the empty default, which creates the cache), so that sam deploy refuses
// one that would stop the functions at init (a missing port, a scheme, credentials)
// instead of deploying them; and it takes the endpoints ElastiCache gives. An IPv6
// literal, which REDIS_ADDR takes (a Redis of your own, locally or beside a service), the
// template refuses, and its refusal says so: the functions in the VPC reach no IPv6
// address (their security group's way out to RedisEndpoint is IPv4, on the port after
// the first ":" of its first seed, and the functions are not allowed IPv6 traffic).
func TestTemplateRedisEndpointPatternHoldsTheSettingsRule(t *testing.T) {
	pattern := allowedPattern(t, "RedisEndpoint")
	tests := []struct {
		name, addr     string
		allowed, loads bool
	}{
		{"the default: create the cache", "", true, true},
		{"a serverless cache", "c-abc123.serverless.use1.cache.amazonaws.com:6379", true, true},
		{"a cluster's seeds", "a.cache.amazonaws.com:6379,b.cache.amazonaws.com:6380", true, true},
		{"an address", "10.0.1.7:6379", true, true},
		{"the highest port", "redis.internal:65535", true, true},
		{"an IPv6 literal", "[fd00::7]:6379", false, true},
		{"a seed with an IPv6 literal", "a.internal:6379,[fd00::7]:6379", false, true},
		{"no port", "redis.internal", false, false},
		{"port 0", "redis.internal:0", false, false},
		{"a port too high", "redis.internal:65536", false, false},
		{"a scheme", "rediss://redis.internal:6379", false, false},
		{"credentials", "user:secret@redis.internal:6379", false, false},
		{"a seed without a port", "a.internal:6379,b.internal", false, false},
		{"no host", ":6379", false, false},
	}
	for _, tc := range tests {
		_, err := settingsWith(settings.EnvRedisAddr, tc.addr)
		allowed := pattern.MatchString(tc.addr)
		if loads := err == nil; allowed != tc.allowed || loads != tc.loads {
			t.Errorf("%s: %q: the pattern allows it %v (want %v), settings loads it %v (want %v: %v)", tc.name, tc.addr, allowed, tc.allowed, loads, tc.loads, err)
		}
	}
	if c := loadTemplate(t, limiter).Parameters["RedisEndpoint"].ConstraintDescription; !strings.Contains(c, "IPv6") {
		t.Errorf("RedisEndpoint's ConstraintDescription %q: want it to say why an IPv6 literal is refused", c)
	}
}
