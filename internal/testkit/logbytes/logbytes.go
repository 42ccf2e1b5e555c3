// Package logbytes measures what an authorizer invocation costs in CloudWatch Logs: the
// bytes the function writes (its EMF metric lines on stdout, its log lines on stderr)
// and the lines Lambda writes for it, per invocation, averaged over an instance serving a
// steady rate of requests. CloudWatch Logs bills every one of those bytes.
//
// An instance is the authorizer as app.Build makes it for Lambda, with the template's
// environment (a registry table, the stack's name, the log level), on an embedded Redis,
// driven by a clock of its own: a rate of 1,000 invocations a second takes no second of
// the test. make bench (tools/benchreport, the log bytes item) and
// integration/template's TestDecisionLogBytes measure with it.
package logbytes

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"hash/crc32"
	"io"
	"net/http"
	"net/http/httptest"
	"strconv"
	"testing"
	"time"

	"github.com/alicebob/miniredis/v2"
	"github.com/aws/aws-lambda-go/events"
	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"

	"github.com/bucketgate/bucketgate"
	"github.com/bucketgate/bucketgate/internal/app"
	"github.com/bucketgate/bucketgate/internal/authorizer"
	"github.com/bucketgate/bucketgate/internal/registry"
	"github.com/bucketgate/bucketgate/internal/settings"
	"github.com/bucketgate/bucketgate/internal/testkit/samples"
)

// Levels are a function's log levels: the template's LogLevel and SystemLogLevel
// parameters (Lambda's LoggingConfig, JSON format).
type Levels struct {
	// Application is the application log level (ApplicationLogLevel, which Lambda
	// passes as AWS_LAMBDA_LOG_LEVEL): DEBUG writes a line per decision, INFO a line per
	// limited decision.
	Application string
	// System is Lambda's own log level (SystemLogLevel): INFO writes platform.start and
	// platform.report for every invocation, WARN neither.
	System string
}

func (l Levels) String() string { return "LogLevel " + l.Application + ", SystemLogLevel " + l.System }

// The levels measured.
var (
	// Defaults are the template's (a test in integration/template holds them equal).
	Defaults = Levels{Application: "INFO", System: "WARN"}
	// Debug is the template's defaults with LogLevel DEBUG.
	Debug = Levels{Application: "DEBUG", System: "WARN"}
)

// PlatformLines are the lines Lambda writes for each invocation of a traced function in
// the JSON log format at SystemLogLevel INFO, as AWS documents them (platform.start and
// platform.report; a request id is a UUID, a trace id Root=1-<8 hex>-<24 hex>): Lambda
// writes them, so they are counted, not measured. At WARN it writes neither.
var PlatformLines = []string{
	`{"time":"2026-11-25T19:22:22.123Z","type":"platform.start","record":{"requestId":"6d68ca91-49c9-448d-89b8-7ca3e6dc66aa","version":"$LATEST",` +
		`"tracing":{"spanId":"4ce1e3b5f2a81c7d","type":"X-Amzn-Trace-Id","value":"Root=1-6745a1b2-3c4d5e6f7a8b9c0d1e2f3a4b;Parent=4ce1e3b5f2a81c7d;Sampled=1"}}}`,
	`{"time":"2026-11-25T19:22:22.125Z","type":"platform.report","record":{"requestId":"6d68ca91-49c9-448d-89b8-7ca3e6dc66aa",` +
		`"metrics":{"durationMs":1.871,"billedDurationMs":2,"memorySizeMB":256,"maxMemoryUsedMB":31},` +
		`"tracing":{"spanId":"4ce1e3b5f2a81c7d","type":"X-Amzn-Trace-Id","value":"Root=1-6745a1b2-3c4d5e6f7a8b9c0d1e2f3a4b;Parent=4ce1e3b5f2a81c7d;Sampled=1"},"status":"success"}}`,
}

// PlatformBytes returns the bytes of the lines Lambda writes for each invocation at
// system log level system (INFO or WARN).
func PlatformBytes(system string) (int, error) {
	switch system {
	case "WARN":
		return 0, nil
	case "INFO":
		n := 0
		for _, l := range PlatformLines {
			n += len(l)
		}
		return n, nil
	}
	return 0, fmt.Errorf("system log level %q: want INFO or WARN (DEBUG's lines are not counted here)", system)
}

// Case is one measurement: an instance at levels serving rate requests a second for
// seconds, every one from one registered API key, allowed or limited, or (Refused) each
// from a key of its own that no one registered.
type Case struct {
	Levels Levels
	// Limited: the key's plan is spent (its requests limited, mostly by the deny cache
	// as a request after the last token usually is); else every request is allowed.
	Limited bool
	// Unavailable: Redis goes down after the warm-up, so that every request fails
	// closed (a 503), answered at once by the circuit breaker but for its probes, each
	// with its warn decision line; Limited is then ignored.
	Unavailable bool
	// FailOpen, with Unavailable: the function fails open (FAIL_MODE=open), so that
	// every request is allowed, degraded, each with its warn decision line; with
	// Throttled, every request is limited as its source address, each with its line.
	FailOpen bool
	// Refused: every request carries an API key the registry does not know, a new one
	// each (a spray of made-up keys), under unknownKeys: refuse: each a 401 after its
	// registry read, writing its metrics at once as every 401 does; Limited is then
	// ignored. Not with Unavailable.
	Refused bool
	// Throttled: every request carries a new made-up API key, as for Refused, and the
	// registry table throttles every read of a key (its configuration read is answered),
	// as a spray of made-up keys may make an on-demand table do: each request fails
	// closed (a 503) after its failed read, with its metrics at once, or with FailOpen is
	// limited as its source address; each writes the registry's warn line besides its
	// decision line. Not with Unavailable or Refused.
	Throttled bool
	// Rate is the invocations per second of the instance: 1, 10, 100 or 1000, so that
	// they are evenly spaced to the nanosecond.
	Rate int
	// Seconds is how long is measured, after a warm-up of two seconds at least.
	Seconds int
}

func (c Case) String() string {
	outcome := "allowed"
	switch {
	case c.Unavailable && c.FailOpen:
		outcome = "degraded"
	case c.Unavailable:
		outcome = "unavailable"
	case c.Throttled && c.FailOpen:
		outcome = "throttled table, failing open"
	case c.Throttled:
		outcome = "throttled table"
	case c.Refused:
		outcome = "refused"
	case c.Limited:
		outcome = "limited"
	}
	return fmt.Sprintf("%s at %d/s, %v", outcome, c.Rate, c.Levels)
}

// Result is what a Case measured.
type Result struct {
	Case
	// Invocations were measured; Allowed of them were.
	Invocations, Allowed int
	// EMF, Logs and Platform are the bytes of the metric lines (stdout), the log lines
	// (stderr) and Lambda's lines, the newline that ends a line not counted (a log event
	// holds none).
	EMF, Logs, Platform int
	// EMFLines and LogLines are how many lines the function wrote.
	EMFLines, LogLines int
	// Last is what the last invocation that wrote anything wrote (at the rates
	// measured, the metrics of the last second), stdout then stderr.
	Last string
	// Written is how many of the invocations the metrics written count (Decisions):
	// all of them, since the measurement ends on an invocation that writes.
	Written int
	// Held is how many invocations of one more second cut short (Rate - 1 more) the
	// instance holds unwritten when it stops: what a recycle would lose.
	Held int
}

// PerInvocation is the bytes per invocation, every line counted.
func (r Result) PerInvocation() float64 {
	return float64(r.EMF+r.Logs+r.Platform) / float64(max(r.Invocations, 1))
}

// Fixture is the registry table every Case of one run reads: an API key on a plan that
// admits every request measured, and one on a plan that admits ten.
type Fixture struct {
	table string
}

// Table is the name of the registry table NewFixture creates.
const Table = "bucketgate-logbytes"

// The raw API keys of the Fixture (the functions only ever see their digests).
const (
	allowedKey = "bg-logbytes-allowed"
	limitedKey = "bg-logbytes-limited"
)

// document is the configuration of every Case: the built-in plans' names and rules,
// pro with room for every request measured (Redis's clock stands still), free with ten.
const document = "defaultPlan: free\nplans: {free: [{name: burst, capacity: 10, refillPerSecond: 1}], " +
	"pro: [{name: burst, capacity: 100000, refillPerSecond: 50}]}"

// NewFixture creates the registry table in the DynamoDB that client reaches, with the
// keys. The functions find it through the AWS SDK's environment, as client was made
// (dynalite.Server.Client sets it).
func NewFixture(t testing.TB, client *dynamodb.Client) *Fixture {
	t.Helper()
	if err := registry.CreateTable(t.Context(), client, Table); err != nil {
		t.Fatalf("logbytes: create table %s: %v", Table, err)
	}
	for key, plan := range map[string]string{allowedKey: "pro", limitedKey: "free"} {
		item := registry.Record{ID: "key:" + bucketgate.KeyDigest(key), Plan: plan}.Item()
		if _, err := client.PutItem(t.Context(), &dynamodb.PutItemInput{TableName: aws.String(Table), Item: item}); err != nil {
			t.Fatalf("logbytes: put key: %v", err)
		}
	}
	return &Fixture{table: Table}
}

// start is the instance clock's first reading: the measurement stays within its minute.
var start = time.Date(2026, 11, 25, 19, 22, 1, 0, time.UTC)

// Measure runs c on a new instance and returns what it wrote.
func (f *Fixture) Measure(t testing.TB, c Case) Result {
	t.Helper()
	platform, err := PlatformBytes(c.Levels.System)
	if err != nil {
		t.Fatal(err)
	}
	if c.Rate <= 0 || time.Second%time.Duration(c.Rate) != 0 || c.Seconds <= 0 || c.Unavailable && c.Refused || c.Throttled && (c.Unavailable || c.Refused) ||
		c.FailOpen && !c.Unavailable && !c.Throttled {
		t.Fatalf("logbytes: %v for %d s: want a rate that divides a second into whole nanoseconds, seconds, one of Unavailable, Refused and Throttled at most, and FailOpen only with Unavailable or Throttled", c, c.Seconds)
	}
	if c.Throttled {
		t.Setenv("AWS_ENDPOINT_URL_DYNAMODB", throttlingTable(t))
	}
	m := miniredis.RunT(t)
	m.SetTime(start)
	env := map[string]string{
		settings.EnvRedisAddr: m.Addr(), settings.EnvTimeoutMS: "1000", settings.EnvLambdaLogLevel: c.Levels.Application,
		settings.EnvRegistryTable: f.table, settings.EnvNamespace: settings.DefaultNamespace, settings.EnvStackName: "bucketgate",
		settings.EnvConfigInline: document,
	}
	if c.Refused {
		env[settings.EnvConfigInline] = document + "\nunknownKeys: refuse"
	}
	if c.FailOpen {
		env[settings.EnvFailMode] = settings.FailOpen
	}
	var stdout, stderr bytes.Buffer
	h, _, err := app.Build(app.Authorizer, func(k string) string { return env[k] }, &stdout, &stderr)
	if err != nil {
		t.Fatal(err)
	}
	instance, ok := h.(*authorizer.Handler)
	if !ok {
		t.Fatalf("logbytes: the authorizer is a %T", h)
	}
	now := start
	instance.Now = func() time.Time { return now }
	step := time.Second / time.Duration(c.Rate)
	key := allowedKey
	if c.Limited && !c.Unavailable && !c.Refused && !c.Throttled {
		key = limitedKey
	}
	sample := samples.Read(t, "authorizer-rest.json")
	event := samples.WithAPIKey(t, sample, key)
	down := c.Throttled && !c.FailOpen // Redis closed (Unavailable), or every read throttled: a 503 is every invocation's answer
	madeUp := 0                        // the made-up keys sent (Refused, Throttled)
	invoke := func() bool {
		if c.Refused || c.Throttled {
			madeUp++
			event = samples.WithAPIKey(t, sample, fmt.Sprintf("bg-made-up-%d", madeUp))
		}
		out, err := instance.Invoke(context.Background(), event)
		_, failed := errors.AsType[*authorizer.UnavailableError](err)
		if _, refused := errors.AsType[*authorizer.UnauthorizedError](err); failed && down || refused && c.Refused {
			now = now.Add(step)
			return false
		}
		if err != nil {
			t.Fatalf("logbytes: %v: %v", c, err)
		}
		var a events.APIGatewayCustomAuthorizerResponse
		if err := json.Unmarshal(out, &a); err != nil || len(a.PolicyDocument.Statement) != 1 {
			t.Fatalf("logbytes: answer %s: %v", out, err)
		}
		now = now.Add(step)
		return a.PolicyDocument.Statement[0].Effect == "Allow"
	}
	// Warm up: the registry read, the bucket spent when limited, two seconds at least;
	// then on until an invocation writes the metrics, which begins an interval.
	for i, denied := 0, false; i < 2*c.Rate || (c.Limited && !c.Unavailable && !c.Refused && !c.Throttled && !denied); i++ {
		denied = !invoke() || denied
	}
	if c.Unavailable { // the registry entry cached: from now on only Redis fails
		m.Close()
		down = true
	}
	for i := 0; ; i++ {
		stdout.Reset()
		invoke()
		if stdout.Len() > 0 {
			break
		}
		if i > 2*c.Rate {
			t.Fatalf("logbytes: %v: no metrics written in two seconds", c)
		}
	}
	stdout.Reset()
	stderr.Reset()
	r := Result{Case: c, Invocations: c.Rate * c.Seconds}
	for range r.Invocations {
		out, logs := stdout.Len(), stderr.Len()
		if invoke() {
			r.Allowed++
		}
		if stdout.Len() > out || stderr.Len() > logs {
			r.Last = string(stdout.Bytes()[out:]) + string(stderr.Bytes()[logs:])
		}
	}
	r.EMFLines, r.LogLines = bytes.Count(stdout.Bytes(), []byte("\n")), bytes.Count(stderr.Bytes(), []byte("\n"))
	r.EMF, r.Logs = stdout.Len()-r.EMFLines, stderr.Len()-r.LogLines
	r.Platform = platform * r.Invocations
	r.Written = decisions(t, stdout.Bytes())
	stdout.Reset()
	for range c.Rate - 1 {
		invoke()
	}
	r.Held = c.Rate - 1 - decisions(t, stdout.Bytes())
	return r
}

// throttlingTable starts a DynamoDB endpoint for the rest of t that answers a read of
// the configuration's items with none (the functions then use CONFIG_INLINE), and every
// other request as a throttled table does, and returns its URL.
func throttlingTable(t testing.TB) string {
	t.Helper()
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		status, answer := http.StatusOK, `{}`
		if !bytes.Contains(body, []byte(`{"S":"`+registry.ConfigID)) {
			status, answer = http.StatusBadRequest, `{"__type":"com.amazonaws.dynamodb.v20120810#ProvisionedThroughputExceededException",`+
				`"message":"The level of configured provisioned throughput for the table was exceeded."}`
		}
		w.Header().Set("Content-Type", "application/x-amz-json-1.0")
		// DynamoDB's checksum of the body, which the AWS SDK checks (a warning on stderr otherwise).
		w.Header().Set("X-Amz-Crc32", strconv.FormatUint(uint64(crc32.ChecksumIEEE([]byte(answer))), 10))
		w.WriteHeader(status)
		_, _ = io.WriteString(w, answer)
	}))
	t.Cleanup(srv.Close)
	return srv.URL
}

// decisions returns the sum of the Decisions of the EMF lines of b.
func decisions(t testing.TB, b []byte) int {
	t.Helper()
	n := 0
	for line := range bytes.Lines(b) {
		var m struct{ Decisions int }
		if err := json.Unmarshal(line, &m); err != nil {
			t.Fatalf("logbytes: EMF line %s: %v", line, err)
		}
		n += m.Decisions
	}
	return n
}
