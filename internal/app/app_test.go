package app_test

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-lambda-go/events"
	"github.com/aws/aws-lambda-go/lambda"

	"github.com/bucketgate/bucketgate"
	"github.com/bucketgate/bucketgate/internal/app"
	"github.com/bucketgate/bucketgate/internal/bucket"
	"github.com/bucketgate/bucketgate/internal/config"
	"github.com/bucketgate/bucketgate/internal/guard"
	"github.com/bucketgate/bucketgate/internal/redisconn"
	"github.com/bucketgate/bucketgate/internal/registry"
	"github.com/bucketgate/bucketgate/internal/settings"
	"github.com/bucketgate/bucketgate/internal/telemetry"
	"github.com/bucketgate/bucketgate/internal/testkit/redistest"
	"github.com/bucketgate/bucketgate/internal/testkit/samples"
	"github.com/bucketgate/bucketgate/internal/tracing"
)

func env(kv map[string]string) func(string) string { return func(k string) string { return kv[k] } }

// withMini returns kv with REDIS_ADDR pointing at a fresh miniredis and a deadline a
// loaded machine never misses.
func withMini(t *testing.T, kv map[string]string) map[string]string {
	t.Helper()
	m, _ := redistest.Mini(t)
	all := map[string]string{settings.EnvRedisAddr: m.Addr(), settings.EnvTimeoutMS: "2000"}
	for k, v := range kv {
		all[k] = v
	}
	return all
}

// aliasBomb is a configuration document of 8 KB whose aliases would make it some 80,000
// values: a plan of a hundred rules, and 200 plans that are aliases of it.
func aliasBomb() string {
	var b strings.Builder
	b.WriteString("defaultPlan: p0\nplans:\n  p0: &r [" + strings.Repeat("{name: b, capacity: 1, refillPerSecond: 1}, ", 100) + "]\n")
	for i := 1; i <= 200; i++ {
		fmt.Fprintf(&b, "  p%d: *r\n", i)
	}
	return b.String()
}

func TestBuildErrorsSayWhatToSet(t *testing.T) {
	badDefault := "defaultPlan: gold\nplans: {free: [{name: burst, capacity: 10, refillPerSecond: 1}]}"
	tests := []struct {
		name string
		f    app.Function
		env  map[string]string
		want []string
	}{
		{"no Redis address", app.Check, map[string]string{}, []string{settings.EnvRedisAddr, "host:port"}},
		{"no Redis address, authorizer", app.Authorizer, map[string]string{}, []string{"set " + settings.EnvRedisAddr}},
		{"bad fail mode", app.Check, map[string]string{settings.EnvRedisAddr: "127.0.0.1:1", settings.EnvFailMode: "ajar"}, []string{`FAIL_MODE="ajar"`}},
		{"bad timeout", app.Check, map[string]string{settings.EnvRedisAddr: "127.0.0.1:1", settings.EnvTimeoutMS: "-5"}, []string{settings.EnvTimeoutMS}},
		{"bad log level", app.Check, map[string]string{settings.EnvLogLevel: "loud"}, []string{settings.EnvLogLevel}},
		// The configuration is checked before any connection: the unreachable address
		// is not what the error is about.
		{"bad configuration", app.Check, map[string]string{settings.EnvRedisAddr: "127.0.0.1:1", settings.EnvConfigInline: badDefault},
			[]string{`RATE_LIMIT_CONFIG: rate-limit configuration: defaultPlan (line 1, column 14): unknown plan "gold"`}},
		{"misspelt field in an inline configuration", app.Authorizer, map[string]string{settings.EnvRedisAddr: "127.0.0.1:1",
			settings.EnvConfigInline: "{defaultPlan: pro, plans: {pro: [{name: burst, capacity: 100, refillPerSecond: 50}, {name: daily, capacity: 100000, refilPerSecond: 1}]}}"},
			[]string{"plans.pro[1].refilPerSecond (line 1, column 117): unknown field; did you mean refillPerSecond?"}},
		{"zero-padded capacity", app.Check, map[string]string{settings.EnvRedisAddr: "127.0.0.1:1",
			settings.EnvConfigInline: "defaultPlan: free\nplans: {free: [{name: burst, capacity: 0100, refillPerSecond: 1}]}"},
			[]string{`plans.free[0].capacity (line 2, column 40): "0100": want a whole decimal number`}},
		{"alias bomb", app.Check, map[string]string{settings.EnvRedisAddr: "127.0.0.1:1", settings.EnvConfigInline: aliasBomb()},
			[]string{"RATE_LIMIT_CONFIG: rate-limit configuration: plans.p", "the document has more than 50000 values"}},
		{"route that would be a peek", app.Authorizer, map[string]string{settings.EnvRedisAddr: "127.0.0.1:1",
			settings.EnvConfigInline: "defaultPlan: free\nplans: {free: [{name: burst, capacity: 10, refillPerSecond: 1}]}\nroutes: [{path: /health, cost: 0}]"},
			[]string{"routes[0] (line 3, column 10): cost 0 would make the route a peek"}},
		{"refill the script would refuse", app.Check, map[string]string{settings.EnvRedisAddr: "127.0.0.1:1",
			settings.EnvConfigInline: "defaultPlan: free\nplans: {free: [{name: burst, capacity: 10, refillPerSecond: 1e19}]}"},
			[]string{"refillPerSecond 1e+19: want a number above 0 and at most 1e+09"}},
		{"refill too slow to fill within any duration", app.Check, map[string]string{settings.EnvRedisAddr: "127.0.0.1:1",
			settings.EnvConfigInline: "defaultPlan: free\nplans: {free: [{name: burst, capacity: 10, refillPerSecond: 1e-300}]}"},
			[]string{"refillPerSecond 1e-300 fills capacity 10 in 1e+301s: want at most 8784h0m0s"}},
		{"bad configuration, authorizer", app.Authorizer, map[string]string{settings.EnvConfigInline: "plans: {}", settings.EnvRedisAddr: "127.0.0.1:1"}, []string{settings.EnvConfigInline}},
		{"missing configuration file", app.Check, map[string]string{settings.EnvConfigFile: "/nonexistent/bucketgate.yaml"}, []string{"RATE_LIMIT_CONFIG_FILE=/nonexistent/bucketgate.yaml"}},
		{"bad API key header", app.Authorizer, map[string]string{settings.EnvAPIKeyHeader: "X Key", settings.EnvRedisAddr: "127.0.0.1:1"}, []string{settings.EnvAPIKeyHeader}},
		{"port out of range", app.Authorizer, map[string]string{settings.EnvRedisAddr: "127.0.0.1:99999"}, []string{settings.EnvRedisAddr, "1 to 65535"}},
		{"IAM tokens without TLS", app.Check, map[string]string{settings.EnvRedisAddr: "10.0.0.1:6379", settings.EnvIAMAuth: "true", settings.EnvUsername: "u", settings.EnvCacheName: "c"},
			[]string{settings.EnvIAMAuth, settings.EnvTLS + "=true"}},
		{"serverless cache with TLS off", app.Authorizer, map[string]string{settings.EnvRedisAddr: "orders-ab12cd.serverless.use1.cache.amazonaws.com:6379", settings.EnvTLS: "false"},
			[]string{settings.EnvTLS + "=false", "accepts TLS connections only"}},
		{"deny cache too large to allocate", app.Authorizer, map[string]string{settings.EnvRedisAddr: "127.0.0.1:1", settings.EnvDenyCacheSize: "100000000"}, []string{settings.EnvDenyCacheSize, "100000"}},
		{"bad Lambda log level", app.Check, map[string]string{settings.EnvLambdaLogLevel: "LOUD"}, []string{settings.EnvLambdaLogLevel}},
		{"event bus that is no bus", app.Authorizer, map[string]string{settings.EnvRedisAddr: "127.0.0.1:1", settings.EnvEventBusName: "arn:aws:sns:us-east-1:123456789012:limits"},
			[]string{settings.EnvEventBusName, "not the ARN of an event bus"}},
		{"events timeout beyond a second", app.Check, map[string]string{settings.EnvRedisAddr: "127.0.0.1:1", settings.EnvEventsTimeoutMS: "5000"},
			[]string{settings.EnvEventsTimeoutMS, "1 to 1000"}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			h, log, err := app.Build(tc.f, env(tc.env), &bytes.Buffer{}, &bytes.Buffer{})
			if err == nil || h != nil {
				t.Fatalf("Build = %v, %v; want an error", h, err)
			}
			if log == nil {
				t.Fatal("no logger, not even to log the error with")
			}
			for _, w := range tc.want {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("error %q does not mention %q", err, w)
				}
			}
		})
	}
}

// A Redis that refuses the credentials was reached at its address: the init error
// names the variables the credentials came from, and does not send the operator to
// REDIS_ADDR.
func TestBuildRefusedRedisCredentials(t *testing.T) {
	m, _ := redistest.Mini(t)
	m.RequireAuth("s3cret")
	_, _, err := app.Build(app.Authorizer, env(map[string]string{settings.EnvRedisAddr: m.Addr(), settings.EnvPassword: "guess"}), &bytes.Buffer{}, &bytes.Buffer{})
	if err == nil {
		t.Fatal("Build with a refused password: no error")
	}
	for _, w := range []string{"WRONGPASS", settings.EnvUsername, settings.EnvPassword} {
		if !strings.Contains(err.Error(), w) {
			t.Errorf("error %q does not mention %q", err, w)
		}
	}
	for _, w := range []string{"check " + settings.EnvRedisAddr, "guess"} {
		if strings.Contains(err.Error(), w) {
			t.Errorf("error %q says %q", err, w)
		}
	}
}

// The wiring main uses for the authorizer, end to end: environment in, EMF on the
// metrics writer, answer out.
func TestBuildAuthorizer(t *testing.T) {
	var metrics, logs bytes.Buffer
	h, _, err := app.Build(app.Authorizer, env(withMini(t, map[string]string{
		settings.EnvNamespace:    "acme/limits",
		settings.EnvAPIKeyHeader: "X-Tenant-Key",
		settings.EnvConfigFile:   samples.Path("authorizer-config.yaml"),
		settings.EnvLogLevel:     "debug",
	})), &metrics, &logs)
	if err != nil {
		t.Fatal(err)
	}
	resp := invokeSampleREST(t, h, func(ev map[string]any) {
		ev["headers"] = map[string]string{"x-tenant-key": "bg-sample-pro-key"}
	})
	if resp.PrincipalID != "key:"+bucketgate.KeyDigest("bg-sample-pro-key") || resp.Context["plan"] != "pro" {
		t.Errorf("principal %q context %v: the custom header or the configuration file was not used", resp.PrincipalID, resp.Context)
	}
	if !strings.Contains(metrics.String(), `"Namespace":"acme/limits"`) || !strings.Contains(metrics.String(), `"Function":"authorizer"`) {
		t.Errorf("EMF not in the configured namespace and function: %s", &metrics)
	}
	if !strings.Contains(logs.String(), `"msg":"decision"`) {
		t.Errorf("no debug decision line at LOG_LEVEL=debug: %s", &logs)
	}
}

// IPV6_PREFIX_LENGTH reaches the authorizer: an IPv6 source is limited by its /64 by
// default, by the configured prefix otherwise (128: the address itself); an IPv4
// source is one caller whatever the prefix.
func TestBuildAuthorizerIPv6Prefix(t *testing.T) {
	tests := []struct {
		name, prefix, source, want string
	}{
		{"default /64", "", "2001:db8:1:2:aaaa::7", "ip:2001:db8:1:2::/64"},
		{"48", "48", "2001:db8:1:2:aaaa::7", "ip:2001:db8:1::/48"},
		{"128 counts addresses", "128", "2001:db8:1:2:aaaa::7", "ip:2001:db8:1:2:aaaa::7"},
		{"IPv4 under 48", "48", "192.0.2.7", "ip:192.0.2.7"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			vars := map[string]string{}
			if tc.prefix != "" {
				vars[settings.EnvIPv6Prefix] = tc.prefix
			}
			h, _, err := app.Build(app.Authorizer, env(withMini(t, vars)), &bytes.Buffer{}, &bytes.Buffer{})
			if err != nil {
				t.Fatal(err)
			}
			resp := invokeSampleREST(t, h, func(ev map[string]any) {
				ev["requestContext"].(map[string]any)["identity"].(map[string]any)["sourceIp"] = tc.source
			})
			if resp.PrincipalID != tc.want {
				t.Fatalf("principal %q, want %q", resp.PrincipalID, tc.want)
			}
		})
	}
}

// invokeSampleREST invokes h with the sample REST authorizer event as edit leaves it and
// returns the authorizer's answer.
func invokeSampleREST(t *testing.T, h lambda.Handler, edit func(ev map[string]any)) events.APIGatewayCustomAuthorizerResponse {
	t.Helper()
	var ev map[string]any
	if err := json.Unmarshal(samples.Read(t, "authorizer-rest.json"), &ev); err != nil {
		t.Fatal(err)
	}
	edit(ev)
	payload, err := json.Marshal(ev)
	if err != nil {
		t.Fatal(err)
	}
	out, err := h.Invoke(context.Background(), payload)
	if err != nil {
		t.Fatal(err)
	}
	var resp events.APIGatewayCustomAuthorizerResponse
	if err := json.Unmarshal(out, &resp); err != nil {
		t.Fatal(err)
	}
	return resp
}

func TestBuildCheck(t *testing.T) {
	var metrics, logs bytes.Buffer
	h, _, err := app.Build(app.Check, env(withMini(t, map[string]string{settings.EnvLogLevel: "debug"})), &metrics, &logs)
	if err != nil {
		t.Fatal(err)
	}
	out, err := h.Invoke(context.Background(), samples.Read(t, "check-single.json"))
	if err != nil {
		t.Fatal(err)
	}
	want := `{"allowed":true,"reason":"ok","limit":100,"remaining":99,"retryAfterMs":0,"resetAfterMs":20,"rule":"burst","plan":"pro"}`
	if string(out) != want {
		t.Errorf("answer %s, want %s", out, want)
	}
	if !strings.Contains(metrics.String(), `"Function":"check"`) || !strings.Contains(logs.String(), `"msg":"decision"`) {
		t.Fatalf("metrics %q and logs %q: want an EMF line of function check and a debug decision line", &metrics, &logs)
	}
}

// OPERATOR_FUNCTION makes the check function service-facing, as the template's check
// function is: a reset is refused, naming the function that serves it (which is built
// without the variable, and serves it).
func TestBuildCheckServiceFacing(t *testing.T) {
	reset := []byte(`{"key":"tenant-1","plan":"free","op":"reset"}`)
	tests := []struct {
		name, operator string
		refused        bool
	}{
		{"the check function", "bucketgate-operator", true},
		{"the operator function", "", false},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			h, _, err := app.Build(app.Check, env(withMini(t, map[string]string{settings.EnvOperatorFunction: tc.operator})), &bytes.Buffer{}, &bytes.Buffer{})
			if err != nil {
				t.Fatal(err)
			}
			_, err = h.Invoke(context.Background(), reset)
			if refused := err != nil && strings.Contains(err.Error(), "invoke bucketgate-operator"); refused != tc.refused || !tc.refused && err != nil {
				t.Fatalf("reset: %v; want refused %v", err, tc.refused)
			}
		})
	}
}

// The log level follows Lambda's logging controls: AWS_LAMBDA_LOG_LEVEL, which the
// template's LoggingConfig sets, wins over LOG_LEVEL.
func TestBuildFollowsLambdaLogLevel(t *testing.T) {
	tests := []struct {
		name         string
		env          map[string]string
		wantDecision bool
	}{
		{"Lambda's DEBUG over LOG_LEVEL error", map[string]string{settings.EnvLambdaLogLevel: "DEBUG", settings.EnvLogLevel: "error"}, true},
		{"Lambda's INFO over LOG_LEVEL debug", map[string]string{settings.EnvLambdaLogLevel: "INFO", settings.EnvLogLevel: "debug"}, false},
		{"LOG_LEVEL without Lambda's", map[string]string{settings.EnvLogLevel: "debug"}, true},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			_, logs, err := invokeCheck(t, tc.env, samples.Read(t, "check-single.json"))
			if err != nil {
				t.Fatal(err)
			}
			if got := strings.Contains(logs, `"msg":"decision"`); got != tc.wantDecision {
				t.Errorf("decision line written: %v, want %v; logs %q", got, tc.wantDecision, logs)
			}
		})
	}
}

// invokeCheck builds the check function from vars (on a fresh miniredis) and invokes it
// once with payload, returning its answer and its logs.
func invokeCheck(t *testing.T, vars map[string]string, payload []byte) (out []byte, logs string, err error) {
	t.Helper()
	var buf bytes.Buffer
	h, _, err := app.Build(app.Check, env(withMini(t, vars)), &bytes.Buffer{}, &buf)
	if err != nil {
		t.Fatal(err)
	}
	out, err = h.Invoke(context.Background(), payload)
	return out, buf.String(), err
}

func TestLoadConfig(t *testing.T) {
	tests := []struct {
		name string
		env  map[string]string
		plan string
	}{
		{"nothing set: built-in default", nil, "free"},
		{"inline", map[string]string{settings.EnvConfigInline: "defaultPlan: x\nplans: {x: [{name: b, capacity: 1, refillPerSecond: 1}]}"}, "x"},
		{"file", map[string]string{settings.EnvConfigFile: samples.Path("authorizer-config.yaml")}, "free"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			out, _, err := invokeCheck(t, tc.env, []byte(`{"key": "k", "cost": 0}`))
			if err != nil || !strings.Contains(string(out), `"plan":"`+tc.plan+`"`) {
				t.Fatalf("answer %s, %v; want plan %s", out, err, tc.plan)
			}
		})
	}
}

// A file's name given as the document (RATE_LIMIT_CONFIG=config.yaml, a middleware's
// Options.Config too) is refused with a hint at RATE_LIMIT_CONFIG_FILE; a document that
// is wrong otherwise, a slash in it or not, gets no such hint.
func TestLoadConfigFileNameForDocument(t *testing.T) {
	hint := settings.EnvConfigFile + " names its file"
	for _, tc := range []struct {
		name, doc string
		hint      bool
	}{
		{"a YAML file's name", "config.yaml", true},
		{"a .yml file's name", "bucketgate.yml", true},
		{"a JSON file's path", "/etc/bucketgate/config.json", true},
		{"a relative path", "./conf/limits", true},
		{"a quoted path", `"config/limits.yaml"`, true},
		{"a word", "limits", false},
		{"a mapping with a slash", "defaultPlan: a/b\nplans: {}", false},
		{"a list of paths", "[a.yaml, b.yaml]", false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := app.LoadConfig(redistest.Settings(t, map[string]string{settings.EnvConfigInline: tc.doc}))
			if !errors.Is(err, config.ErrConfig) || strings.Contains(err.Error(), hint) != tc.hint {
				t.Fatalf("LoadConfig(%q) = %v, want ErrConfig with the hint %q: %v", tc.doc, err, hint, tc.hint)
			}
		})
	}
}

// A route's ttlMs that no rule of the document uses is an error when the document is
// the whole registry (no REGISTRY_TABLE), naming the variable and the field; with a
// table, an identity's own concurrency rule may use it, and the document loads.
func TestLoadConfigAlone(t *testing.T) {
	const doc = "defaultPlan: x\nplans: {x: [{name: b, capacity: 10, refillPerSecond: 1}]}\nroutes: [{path: /v1/stream, ttlMs: 60000}]"
	_, err := app.LoadConfig(redistest.Settings(t, map[string]string{settings.EnvConfigInline: doc}))
	want := settings.EnvConfigInline + ": " + config.ErrConfig.Error() + ": routes[0].ttlMs (line 3, column 36): only with reserve or a concurrency rule"
	if !errors.Is(err, config.ErrConfig) || !strings.HasPrefix(err.Error(), want) || !strings.HasSuffix(err.Error(), "("+settings.EnvRegistryTable+" is not set: the document is the registry)") {
		t.Fatalf("LoadConfig without a table: %v, want %q...", err, want)
	}
	c, err := app.LoadConfig(redistest.Settings(t, map[string]string{settings.EnvConfigInline: doc, settings.EnvRegistryTable: "keys"}))
	if err != nil {
		t.Fatalf("LoadConfig with a table: %v", err)
	}
	if c.CheckAlone() == nil {
		t.Fatal("CheckAlone() = nil, want the route's ttlMs named")
	}
}

func TestNewGuardDecides(t *testing.T) {
	m, _ := redistest.Mini(t)
	s := redistest.Settings(t, map[string]string{
		settings.EnvRedisAddr: m.Addr(),
		settings.EnvFailMode:  settings.FailOpen,
		settings.EnvTimeoutMS: "2000", // generous: a loaded machine must not turn this into degraded
	})
	g, conn, err := app.NewGuard(s, slog.New(slog.DiscardHandler), nil)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	limits := config.Default().Limits(config.Default().DefaultPlan(), "GET", "/")
	r, err := g.Decide(context.Background(), bucketgate.Request{Identity: "ip:192.0.2.1", Rules: limits.Rules, Cost: limits.Cost})
	if err != nil || !r.Allowed || r.Reason != bucketgate.ReasonOK || r.Remaining != 9 {
		t.Fatalf("Decide = %+v, %v", r, err)
	}
	if !m.Exists(bucket.Key("ip:192.0.2.1")) {
		t.Fatalf("no bucket written; keys %v", m.Keys())
	}
}

func TestGuardOptions(t *testing.T) {
	s := redistest.Settings(t, map[string]string{settings.EnvTimeoutMS: "30", settings.EnvFailMode: "open", settings.EnvDenyCacheSize: "7"})
	o := app.GuardOptions(s)
	if o.Timeout != 30*time.Millisecond || !o.FailOpen || o.DenyCacheSize != 7 ||
		o.FailuresToOpen != guard.DefaultFailuresToOpen || o.ProbeInterval > time.Second {
		t.Fatalf("GuardOptions: %+v", o)
	}
}

// The decision chain sends its subsegments to AWS_XRAY_DAEMON_ADDRESS, as Lambda sets it.
func TestXRayDaemonFromSettings(t *testing.T) {
	daemon, err := net.ListenUDP("udp", &net.UDPAddr{IP: net.IPv4(127, 0, 0, 1)})
	if err != nil {
		t.Fatal(err)
	}
	defer daemon.Close()
	s := redistest.Settings(t, withMini(t, map[string]string{settings.EnvXRayDaemon: daemon.LocalAddr().String()}))
	g, conn, err := app.NewGuard(s, slog.New(slog.DiscardHandler), nil)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	const traceID = "1-5759e988-bd862e3fe1be46a994272793"
	ctx := context.WithValue(context.Background(), tracing.LambdaHeaderKey, "Root="+traceID+";Parent=53995c3f42cd8ad8;Sampled=1") //nolint:staticcheck // aws-lambda-go's own key
	if _, err := g.Decide(ctx, bucketgate.Request{Identity: "x", Rules: config.Default().DefaultPlan().Rules, Cost: 1}); err != nil {
		t.Fatal(err)
	}
	_ = daemon.SetReadDeadline(time.Now().Add(10 * time.Second))
	buf := make([]byte, 64<<10)
	n, err := daemon.Read(buf)
	if err != nil || !strings.Contains(string(buf[:n]), traceID) {
		t.Fatalf("the daemon got %q, %v; want a subsegment of trace %s", buf[:n], err, traceID)
	}
}

// A bad AWS_XRAY_DAEMON_ADDRESS turns subsegments off with one warning naming it;
// decisions go on.
// A document whose settings are valid but likely not what is meant (anonymous: refuse
// with unknownKeys: ip lets a made-up key through; a tenant that is an API key
// bucketgate made, which no check matches) is a warning at init naming the fields and
// what to set, never quoting such a key, and the function starts; refusing both, or
// neither, is none.
func TestBuildWarnsOfCaveats(t *testing.T) {
	const made = "bg_s3cr3tAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA"
	plans := "plans: {free: [{name: burst, capacity: 10, refillPerSecond: 1}]}\n"
	tests := []struct {
		name, doc string
		caveat    string // what the warning says; "" for none
	}{
		{"anonymous refused, unknown keys by address", "defaultPlan: free\nanonymous: refuse\n" + plans, "set unknownKeys: refuse"},
		{"both refused", "defaultPlan: free\nanonymous: refuse\nunknownKeys: refuse\n" + plans, ""},
		{"neither", "defaultPlan: free\n" + plans, ""},
		{"a tenant that is an API key bucketgate made", "defaultPlan: free\n" + plans + "tenants: {acme: free, " + made + ": free}\n", "tenants: 1 entry is or holds an API key bucketgate made (bg_..., not shown)"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			var logs bytes.Buffer
			if _, _, err := app.Build(app.Check, env(withMini(t, map[string]string{settings.EnvConfigInline: tc.doc})), &bytes.Buffer{}, &logs); err != nil {
				t.Fatal(err)
			}
			warned := strings.Contains(logs.String(), `"level":"WARN","msg":"`+registry.MsgConfigCaveat+`"`)
			if warned != (tc.caveat != "") || !strings.Contains(logs.String(), tc.caveat) || strings.Contains(logs.String(), "s3cr3t") {
				t.Fatalf("warned %v, want %q, never the key; log:\n%s", warned, tc.caveat, &logs)
			}
		})
	}
}

// A bad AWS_XRAY_DAEMON_ADDRESS turns subsegments off with one warning naming it;
// decisions go on.
func TestBadXRayDaemonWarnsOnce(t *testing.T) {
	var logs bytes.Buffer
	h, _, err := app.Build(app.Check, env(withMini(t, map[string]string{settings.EnvXRayDaemon: "no port here"})), &bytes.Buffer{}, &logs)
	if err != nil {
		t.Fatal(err)
	}
	if out, err := h.Invoke(context.Background(), []byte(`{"key": "k"}`)); err != nil || !strings.Contains(string(out), `"allowed":true`) {
		t.Fatalf("answer %s, %v", out, err)
	}
	lines := strings.Split(strings.TrimSpace(logs.String()), "\n")
	if len(lines) != 1 || !strings.Contains(lines[0], `"level":"WARN"`) || !strings.Contains(lines[0], tracing.MsgBadDaemonAddress) ||
		!strings.Contains(lines[0], settings.EnvXRayDaemon) {
		t.Fatalf("log %q, want one warning naming %s", &logs, settings.EnvXRayDaemon)
	}
}

// A Redis that evicts keys under memory pressure (volatile-lru, the default of
// ElastiCache's node-based parameter groups) is found when the function connects: a
// warning naming the policy and the node, and one RedisEvictionPolicy count by Policy on
// the metrics writer. A noeviction Redis (the servers' default) gets neither.
func TestEvictionPolicyWarned(t *testing.T) {
	for _, policy := range []string{"volatile-lru", "noeviction"} {
		t.Run(policy, func(t *testing.T) {
			srv := redistest.Start(t, "--maxmemory-policy", policy)
			var metrics, logs bytes.Buffer
			h, _, err := app.Build(app.Check, env(map[string]string{settings.EnvRedisAddr: srv.Addr}), &metrics, &logs)
			if err != nil {
				t.Fatal(err)
			}
			if _, err := h.Invoke(context.Background(), []byte(`{"key":"k","plan":"free"}`)); err != nil {
				t.Fatal(err)
			}
			warned := strings.Contains(logs.String(), `"level":"WARN","msg":"`+app.MsgEvictionPolicy+`","node":"`+srv.Addr+`","policy":"`+policy+`"`)
			counted := strings.Contains(metrics.String(), `"Policy":"`+policy+`","RedisEvictionPolicy":1`)
			if want := policy != "noeviction"; warned != want || counted != want {
				t.Fatalf("warned %v, counted %v; want %v:\n%s\n%s", warned, counted, want, &logs, &metrics)
			}
		})
	}
}

// TestEvictionPolicyOnServerless: ElastiCache Serverless has no parameter group, so its
// policy (volatile-lru) is not the user's to set: the connection's report of a real
// volatile-lru server says so at info level, names what applies there (the data storage
// maximum, CacheEvictionsAlarm), and counts nothing; anywhere else it is the warning
// that says to set noeviction, and a count.
func TestEvictionPolicyOnServerless(t *testing.T) {
	srv := redistest.Start(t, "--maxmemory-policy", "volatile-lru")
	for _, tc := range []struct {
		name       string
		serverless bool
		level, msg string
		counted    bool
	}{
		{"ElastiCache Serverless", true, "INFO", app.MsgEvictionPolicyServerless, false},
		{"a Redis of one's own", false, "WARN", app.MsgEvictionPolicy, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var metrics, logs bytes.Buffer
			report := app.EvictionReport(telemetry.NewLogger(&logs, slog.LevelDebug), telemetry.NewEmitter(&metrics, "ns", "stack", "check"), tc.serverless)
			conn, err := redisconn.New(redistest.Settings(t, map[string]string{settings.EnvRedisAddr: srv.Addr}), redisconn.WithEvictionPolicy(report))
			if err != nil {
				t.Fatal(err)
			}
			defer conn.Close()
			if want := `"level":"` + tc.level + `","msg":"` + tc.msg + `","node":"` + srv.Addr + `","policy":"volatile-lru"`; !strings.Contains(logs.String(), want) {
				t.Errorf("log %s, want %s", &logs, want)
			}
			if tc.serverless && strings.Contains(logs.String(), "maxmemory-policy") {
				t.Errorf("log %s tells a Serverless user to set a policy it cannot set", &logs)
			}
			if counted := strings.Contains(metrics.String(), `"RedisEvictionPolicy":1`); counted != tc.counted {
				t.Errorf("counted %v, want %v: %s", counted, tc.counted, &metrics)
			}
		})
	}
}

// Without EVENT_BUS_NAME there is no sender; with one, a sender is made at init without
// a request (the bus is first reached when a decision crosses a threshold).
func TestNewEvents(t *testing.T) {
	s, err := settings.Load(env(map[string]string{}))
	if err != nil {
		t.Fatal(err)
	}
	if e, err := app.NewEvents(s, slog.New(slog.DiscardHandler)); e != nil || err != nil {
		t.Fatalf("NewEvents without a bus = %v, %v; want none", e, err)
	}
	t.Setenv("AWS_ENDPOINT_URL_EVENTBRIDGE", "http://127.0.0.1:1") // nothing answers there
	t.Setenv("AWS_REGION", "us-east-1")
	s, err = settings.Load(env(map[string]string{settings.EnvEventBusName: "bucketgate-events"}))
	if err != nil {
		t.Fatal(err)
	}
	if e, err := app.NewEvents(s, slog.New(slog.DiscardHandler)); e == nil || err != nil {
		t.Fatalf("NewEvents = %v, %v; want a sender", e, err)
	}
}

// A function whose bus or table has no AWS region (nor an endpoint of its own) stops at
// init naming the variable and AWS_REGION: every event, or every read, would fail.
func TestBuildWithoutAWSRegion(t *testing.T) {
	for _, k := range []string{"AWS_REGION", "AWS_DEFAULT_REGION", "AWS_PROFILE", "AWS_ENDPOINT_URL", "AWS_ENDPOINT_URL_EVENTBRIDGE", "AWS_ENDPOINT_URL_DYNAMODB"} {
		t.Setenv(k, "")
	}
	t.Setenv("AWS_CONFIG_FILE", os.DevNull)
	t.Setenv("AWS_SHARED_CREDENTIALS_FILE", os.DevNull)
	t.Setenv("AWS_EC2_METADATA_DISABLED", "true")
	for _, tc := range []struct {
		name, variable string
	}{
		{"event bus", settings.EnvEventBusName},
		{"registry table", settings.EnvRegistryTable},
	} {
		for _, f := range []app.Function{app.Authorizer, app.Check} {
			t.Run(tc.name+"/"+f.Name, func(t *testing.T) {
				_, _, err := app.Build(f, env(withMini(t, map[string]string{tc.variable: "bucketgate-x"})), &bytes.Buffer{}, &bytes.Buffer{})
				if !errors.Is(err, app.ErrNoRegion) || !strings.Contains(err.Error(), tc.variable+"=bucketgate-x: ") {
					t.Fatalf("Build = %v; want ErrNoRegion, naming %s", err, tc.variable)
				}
			})
		}
	}
}

// TestRefusedAfterInit: once an instance has connected, Redis refusing a new
// connection's credentials (here after the password changed and the connection was
// closed) or a command the user's ACL lacks (here TIME, which usage needs) fails the
// decision closed as redis_error, with an error that says what to check: the variables
// the credentials came from, or the user's ACL; never the password.
func TestRefusedAfterInit(t *testing.T) {
	tests := []struct {
		name  string
		acl   string // an ACL SETUSER change of user app after init
		kill  bool   // close app's connections after the change
		wants []string
	}{
		{"password changed", ">other resetpass", true, []string{"WRONGPASS", settings.EnvUsername, settings.EnvPassword, `"app"`}},
		{"command not allowed", "-time", false, []string{"ACL", settings.EnvUsername, `"app"`, "~bg:*"}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			// The default user stays on, for the test's ACL commands.
			srv := redistest.Start(t, "--user", "app", "on", ">s3cret-pw", "~*", "+@all")
			s := redistest.Settings(t, map[string]string{settings.EnvRedisAddr: srv.Addr, settings.EnvUsername: "app", settings.EnvPassword: "s3cret-pw",
				settings.EnvTimeoutMS: "2000"})
			g, conn, err := app.NewGuard(s, slog.New(slog.DiscardHandler), nil)
			if err != nil {
				t.Fatal(err)
			}
			defer conn.Close()
			limits := config.Default().Limits(config.Default().DefaultPlan(), "GET", "/")
			q := bucketgate.Request{Identity: "ip:192.0.2.1", Rules: limits.Rules, Cost: limits.Cost}
			if r, err := g.Decide(context.Background(), q); err != nil || r.Failure != guard.FailureNone {
				t.Fatalf("Decide before the change = %+v, %v", r, err)
			}
			if _, err := srv.Command(context.Background(), append([]string{"ACL", "SETUSER", "app"}, strings.Fields(tc.acl)...)...); err != nil {
				t.Fatal(err)
			}
			if tc.kill {
				if _, err := srv.Command(context.Background(), "CLIENT", "KILL", "USER", "app"); err != nil {
					t.Fatal(err)
				}
			}
			var r guard.Result
			for range 3 { // the first call may meet the closed connection (EOF)
				if r, err = g.Decide(context.Background(), q); err != nil {
					t.Fatal(err)
				}
				if r.Err != nil && strings.Contains(r.Err.Error(), tc.wants[0]) {
					break
				}
			}
			if r.Failure != guard.FailureRedisError || r.Allowed || r.Err == nil {
				t.Fatalf("Decide after the change = %+v: want denied, redis_error", r)
			}
			for _, want := range tc.wants {
				if !strings.Contains(r.Err.Error(), want) {
					t.Errorf("error %q does not say %s", r.Err, want)
				}
			}
			if strings.Contains(r.Err.Error(), "s3cret-pw") {
				t.Errorf("error %q quotes the password", r.Err)
			}
		})
	}
}
