package template_test

// The alarms page for what hurts and for nothing else: each alarm's metric math is
// evaluated on minutes of data as CloudWatch evaluates it (mathexpr_test.go), and a
// total outage at one request a minute fires it while a stray failure among many, the
// callers' refusals and the failures another alarm owns do not. Every alarm notifies the
// topic when it fires and when it recovers, and the gradual deployments roll back on
// the ones that a bad version would set off.

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"maps"
	"reflect"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/alicebob/miniredis/v2"

	"github.com/bucketgate/bucketgate/checkapi"
	"github.com/bucketgate/bucketgate/internal/app"
	"github.com/bucketgate/bucketgate/internal/authorizer"
	"github.com/bucketgate/bucketgate/internal/bucket"
	"github.com/bucketgate/bucketgate/internal/guard"
	"github.com/bucketgate/bucketgate/internal/settings"
	"github.com/bucketgate/bucketgate/internal/telemetry"
	"github.com/bucketgate/bucketgate/internal/testkit/registrytest"
	"github.com/bucketgate/bucketgate/internal/testkit/samples"
)

// minutes returns n minutes of the same data, by metric id (a metric math alarm's) or
// metric name (an alarm on one metric); a metric absent from the map has no datapoint.
func minutes(n int, m map[string]float64) []map[string]float64 {
	return slices.Repeat([]map[string]float64{m}, n)
}

// alarmFires evaluates the alarm (resolved properties) on data, one map per minute,
// oldest first, and reports whether it is in ALARM after the last: at least
// DatapointsToAlarm of the last EvaluationPeriods minutes breach, a missing datapoint
// not breaching.
func alarmFires(t *testing.T, id string, p map[string]any, data []map[string]float64) bool {
	t.Helper()
	if p["ComparisonOperator"] != "GreaterThanThreshold" || p["TreatMissingData"] != "notBreaching" {
		t.Fatalf("%s: %v, %v: want GreaterThanThreshold and notBreaching", id, p["ComparisonOperator"], p["TreatMissingData"])
	}
	threshold, periods, needed := number(t, p["Threshold"]), int(number(t, p["EvaluationPeriods"])), int(number(t, p["DatapointsToAlarm"]))
	value := func(minute map[string]float64) mathValue {
		if name, ok := p["MetricName"].(string); ok {
			v, ok := minute[name]
			return mathValue{v, ok}
		}
		exprs, ids, returned := alarmMath(t, id, p)
		return evalMath(t, id, exprs, ids, returned, minute)
	}
	breaching := 0
	for _, minute := range data[max(0, len(data)-periods):] {
		if v := value(minute); v.ok && v.v > threshold {
			breaching++
		}
	}
	return breaching >= needed
}

// alarmMath returns the metric math of an alarm (resolved properties): its
// expressions and all of its ids, and the id it returns.
func alarmMath(t *testing.T, id string, p map[string]any) (exprs map[string]string, ids map[string]bool, returned string) {
	t.Helper()
	exprs, ids = map[string]string{}, map[string]bool{}
	list, _ := p["Metrics"].([]any)
	for _, m := range list {
		m, _ := m.(map[string]any)
		mid, _ := m["Id"].(string)
		ids[mid] = true
		if m["ReturnData"] == true {
			returned = mid
		}
		if src, ok := m["Expression"].(string); ok {
			exprs[mid] = src
		}
	}
	if returned == "" {
		t.Fatalf("%s returns no expression", id)
	}
	return exprs, ids, returned
}

// number returns v, a YAML number or the string of one, as a float64.
func number(t *testing.T, v any) float64 {
	t.Helper()
	var f float64
	if _, err := fmt.Sscan(fmt.Sprint(v), &f); err != nil {
		t.Fatalf("%v: not a number", v)
	}
	return f
}

// Each alarm fires on what it is for, at low traffic too, and not on a stray failure,
// on refusals, or on what another alarm reports.
func TestTemplateAlarmShapes(t *testing.T) {
	rs := deploy(t, readTemplate(t, limiter)).resources(t)
	// The alarms of a deployment on a Redis of yours.
	existing := deploy(t, readTemplate(t, limiter), "VpcId", "vpc-1", "SubnetIds", "subnet-1", "RouteTableIds", "rtb-1", "RedisEndpoint", "redis.internal:6379").resources(t)
	for id, r := range existing {
		if _, ok := rs[id]; !ok && r.Type == "AWS::CloudWatch::Alarm" {
			rs[id] = r
		}
	}
	tests := []struct {
		alarm, name string
		data        []map[string]float64
		fires       bool
	}{
		{"FailClosedAlarm", "a total outage at one request a minute", minutes(3, map[string]float64{"unavailable": 1}), true},
		{"FailClosedAlarm", "a tenth failing closed", minutes(3, map[string]float64{"allowed": 800, "limited": 100, "unavailable": 100}), true},
		{"FailClosedAlarm", "one minute of it", append(minutes(2, map[string]float64{"allowed": 900}), map[string]float64{"unavailable": 900}), false},
		{"FailClosedAlarm", "a stray failure among many", minutes(3, map[string]float64{"allowed": 1000, "unavailable": 1}), false},
		{"FailClosedAlarm", "limiting is no failure", minutes(3, map[string]float64{"allowed": 10, "limited": 990}), false},
		{"FailClosedAlarm", "no traffic", minutes(3, map[string]float64{}), false},
		{"DegradedAlarm", "failing open at one request a minute", minutes(3, map[string]float64{"degraded": 1}), true},
		{"DegradedAlarm", "a stray degraded decision", minutes(3, map[string]float64{"allowed": 500, "degraded": 2}), false},
		// A flood of made-up API keys (a registry read each) throttles the table: their
		// 503s are RegistryErrorsAlarm's, and roll no deployment back.
		{"FailClosedAlarm", "made-up keys on a throttled table", minutes(3, map[string]float64{"allowed": 500, "unavailable": 500, "registry": 500, "tablethrottles": 900}), false},
		{"FailClosedAlarm", "the table failing unthrottled (a wrong table deployed)", minutes(3, map[string]float64{"allowed": 500, "unavailable": 500, "registry": 500}), true},
		{"FailClosedAlarm", "Redis failing while the table throttles", minutes(3, map[string]float64{"allowed": 800, "unavailable": 200, "registry": 100, "tablethrottles": 100}), true},
		{"FailClosedAlarm", "Redis failing under a flood of made-up keys", minutes(3, map[string]float64{"allowed": 900, "unavailable": 10100, "registry": 10000, "tablethrottles": 20000}), true},
		{"DegradedAlarm", "made-up keys on a throttled table", minutes(3, map[string]float64{"allowed": 50, "degraded": 950, "registry": 950, "tablethrottles": 900}), false},
		{"DegradedAlarm", "the table failing unthrottled", minutes(3, map[string]float64{"allowed": 50, "degraded": 950, "registry": 950}), true},
		{"AuthorizerErrorsAlarm", "crashes", minutes(3, map[string]float64{"invocations": 1000, "errors": 100}), true},
		{"AuthorizerErrorsAlarm", "a timeout at one request a minute", minutes(3, map[string]float64{"invocations": 1, "errors": 1}), true},
		{"AuthorizerErrorsAlarm", "401s alone", minutes(3, map[string]float64{"invocations": 1000, "errors": 600, "refused": 600}), false},
		{"AuthorizerErrorsAlarm", "503s alone (FailClosedAlarm's)", minutes(3, map[string]float64{"invocations": 50, "errors": 50, "unavailable": 50}), false},
		{"AuthorizerErrorsAlarm", "crashes among 401s", minutes(3, map[string]float64{"invocations": 1000, "errors": 700, "refused": 600}), true},
		{"AuthorizerErrorsAlarm", "a stray error", minutes(3, map[string]float64{"invocations": 1000, "errors": 1}), false},
		{"CheckErrorsAlarm", "crashes", minutes(3, map[string]float64{"invocations": 200, "errors": 20}), true},
		{"CheckErrorsAlarm", "operator operations refused", minutes(3, map[string]float64{"invocations": 20, "errors": 20, "refused": 20}), false},
		{"AuthorizerThrottlesAlarm", "throttled", minutes(3, map[string]float64{"Throttles": 3}), true},
		{"AuthorizerThrottlesAlarm", "never throttled", minutes(3, map[string]float64{}), false},
		{"CheckThrottlesAlarm", "throttled two minutes of three", append(minutes(2, map[string]float64{"Throttles": 1}), map[string]float64{}), true},
		{"BadResponseAlarm", "one caller failing closed, a request a minute", []map[string]float64{{"closed": 5}}, true},
		{"BadResponseAlarm", "one caller failing open, a request a minute", []map[string]float64{{"open": 5}}, true},
		{"BadResponseAlarm", "a single request in 5 minutes", []map[string]float64{{"closed": 1}}, true},
		{"BadResponseAlarm", "none", []map[string]float64{{}}, false},
		{"RegistryInvalidItemsAlarm", "one invalid item read", []map[string]float64{{"check": 1}}, true},
		{"RegistryInvalidItemsAlarm", "none", []map[string]float64{{}}, false},
		{"RegistryErrorsAlarm", "the table failing at one request a minute", minutes(3, map[string]float64{"error": 1}), true},
		{"RegistryErrorsAlarm", "the table failing, cached entries answering", minutes(3, map[string]float64{"hit": 500, "stale": 400, "error": 100}), true},
		{"RegistryErrorsAlarm", "a stray failure among many", minutes(3, map[string]float64{"hit": 900, "miss": 99, "error": 1}), false},
		{"RegistryErrorsAlarm", "reads that answer", minutes(3, map[string]float64{"hit": 10, "miss": 990}), false},
		{"RegistryErrorsAlarm", "invocations that ran out of time", minutes(3, map[string]float64{"hit": 10, "miss": 10, "abandoned": 20}), false},
		{"ConfigInvalidAlarm", "a stored document that does not load", []map[string]float64{{"authorizer": 1}}, true},
		{"ConfigInvalidAlarm", "none", []map[string]float64{{}}, false},
		{"RestApi5xxAlarm", "the backend down at one request a minute", minutes(3, map[string]float64{"count": 1, "errors": 1}), true},
		{"RestApi5xxAlarm", "a stray 502", minutes(3, map[string]float64{"count": 1000, "errors": 1}), false},
		{"HttpApi5xxAlarm", "a tenth failing", minutes(3, map[string]float64{"count": 100, "errors": 10}), true},
		{"CacheThrottledAlarm", "the cache throttles", minutes(3, map[string]float64{"ThrottledCmds": 40}), true},
		{"CacheThrottledAlarm", "it does not", minutes(3, map[string]float64{"ThrottledCmds": 0}), false},
		{"CacheEvictionsAlarm", "a bucket evicted", []map[string]float64{{"Evictions": 1}}, true},
		{"CacheEvictionsAlarm", "none", []map[string]float64{{"Evictions": 0}}, false},
		{"RedisEvictionPolicyAlarm", "a node that evicts", []map[string]float64{{"volatile_lru": 1}}, true},
		{"RedisEvictionPolicyAlarm", "another", []map[string]float64{{"allkeys_random": 2}}, true},
		{"RedisEvictionPolicyAlarm", "a policy the functions do not name", []map[string]float64{{"other": 1}}, true},
		{"RedisEvictionPolicyAlarm", "noeviction everywhere", []map[string]float64{{}}, false},
	}
	tested := map[string]map[bool]bool{}
	for _, tc := range tests {
		t.Run(tc.alarm+"/"+tc.name, func(t *testing.T) {
			r, ok := rs[tc.alarm]
			if !ok || r.Type != "AWS::CloudWatch::Alarm" {
				t.Fatalf("no alarm %s", tc.alarm)
			}
			if got := alarmFires(t, tc.alarm, r.Properties, tc.data); got != tc.fires {
				t.Errorf("fires %v, want %v", got, tc.fires)
			}
		})
		if tested[tc.alarm] == nil {
			tested[tc.alarm] = map[bool]bool{}
		}
		tested[tc.alarm][tc.fires] = true
	}
	for _, id := range ofType(rs, "AWS::CloudWatch::Alarm") {
		if !tested[id][true] || id != "CheckThrottlesAlarm" && id != "HttpApi5xxAlarm" && !tested[id][false] {
			t.Errorf("%s: no case where it fires, or none where it stays quiet (%v)", id, tested[id])
		}
	}
}

// The authorizer's 401s are Lambda errors that Lambda's Errors metric counts at once:
// the refused decisions that AuthorizerErrorsAlarm subtracts from it must reach
// CloudWatch as soon, though an instance writes its sums at most once a second. Each
// minute here an instance of its own (Lambda's scaling), the real authorizer as the
// template configures it, refuses a few requests within the second and stays frozen
// after them: what it has written by then is all the alarm sees of its minute, and it
// stays quiet.
func TestAuthorizerErrorsAlarmSeesRefusalsAtOnce(t *testing.T) {
	alarm := deploy(t, readTemplate(t, limiter)).resources(t)["AuthorizerErrorsAlarm"]
	ev := samples.Read(t, "authorizer-rest.json") // no API key
	for _, refusals := range []int{2, 5} {
		t.Run(fmt.Sprintf("%d 401s a minute", refusals), func(t *testing.T) {
			var data []map[string]float64
			for range 3 {
				m := miniredis.RunT(t)
				env := map[string]string{settings.EnvRedisAddr: m.Addr(), settings.EnvTimeoutMS: decisionTimeout,
					settings.EnvConfigInline: "defaultPlan: free\nanonymous: refuse\nplans: {free: [{name: burst, capacity: 10, refillPerSecond: 1}]}\n"}
				var out bytes.Buffer
				h, _, err := app.Build(app.Authorizer, func(k string) string { return env[k] }, &out, io.Discard)
				if err != nil {
					t.Fatal(err)
				}
				for range refusals {
					if _, err := h.Invoke(t.Context(), ev); err == nil || err.Error() != "Unauthorized" {
						t.Fatalf("Invoke: %v, want a 401", err)
					}
				}
				n := float64(refusals)
				minute := map[string]float64{"invocations": n, "errors": n}
				for _, line := range jsonLines(t, &out) {
					if o, ok := line[telemetry.DimOutcome].(string); ok {
						minute[o] += line[telemetry.MetricDecisions].(float64)
					}
				}
				data = append(data, minute)
			}
			if alarmFires(t, "AuthorizerErrorsAlarm", alarm.Properties, data) {
				t.Fatalf("fires on %v", data)
			}
		})
	}
}

// One caller whose stored state the script cannot read pages through BadResponseAlarm,
// failing closed (503 at every request) or open (never limited), though one caller of
// thousands is far below the shares of FailClosedAlarm and DegradedAlarm; Redis timing
// out or failing, theirs, does not fire it. The real authorizer, as the template
// configures it, decides that caller's request once a minute for the alarm's 5 minutes,
// and its metrics are filed as CloudWatch files them.
func TestBadResponseAlarmFiresOnOneCaller(t *testing.T) {
	const alarm = "BadResponseAlarm"
	p := deploy(t, readTemplate(t, limiter)).resources(t)[alarm].Properties
	ev := samples.Read(t, "authorizer-rest.json") // no API key: limited as its source address
	tests := []struct {
		name     string
		failOpen bool
		fault    func(t *testing.T, m *miniredis.Miniredis)
		failure  guard.Failure // what each decision fails with
		fires    bool
	}{
		{"bad state, failing closed", false, writeBadState, guard.FailureBadResponse, true},
		{"bad state, failing open", true, writeBadState, guard.FailureBadResponse, true},
		{"timeouts, failing closed", false, hang, guard.FailureTimeout, false},
		{"timeouts, failing open", true, hang, guard.FailureTimeout, false},
		{"Redis errors, failing closed", false, func(_ *testing.T, m *miniredis.Miniredis) { m.SetError("ERR injected") }, guard.FailureRedisError, false},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			m := miniredis.RunT(t)
			mode := settings.FailClosed
			if tc.failOpen {
				mode = settings.FailOpen
			}
			timeout := "5000" // a loaded machine's miniredis answers in time
			if tc.failure == guard.FailureTimeout {
				timeout = "100"
			}
			env := map[string]string{settings.EnvRedisAddr: m.Addr(), settings.EnvTimeoutMS: timeout, settings.EnvFailMode: mode,
				settings.EnvStackName: testStack, settings.EnvMetricsFlushMS: "0",
				settings.EnvConfigInline: "defaultPlan: free\nplans: {free: [{name: burst, capacity: 10, refillPerSecond: 1}]}\n"}
			var out, logs bytes.Buffer
			h, _, err := app.Build(app.Authorizer, func(k string) string { return env[k] }, &out, &logs)
			if err != nil {
				t.Fatal(err)
			}
			tc.fault(t, m)
			const requests = 5 // one a minute
			for range requests {
				if _, err := h.Invoke(t.Context(), ev); (err != nil) == tc.failOpen {
					t.Fatalf("Invoke: %v, want failing %s", err, mode)
				}
			}
			filed := emfMetrics(t, jsonLines(t, &out))
			metric := telemetry.MetricFailClosed
			if tc.failOpen {
				metric = telemetry.MetricFailOpen
			}
			if n := filed[metricKey("bucketgate", metric, map[string]string{telemetry.DimStack: testStack, telemetry.DimReason: string(tc.failure)})]; n != requests {
				t.Fatalf("%s %s counted %v times, want %d: %v", metric, tc.failure, n, requests, filed)
			}
			datapoint := alarmDatapoint(t, alarm, p, filed)
			if got := alarmFires(t, alarm, p, []map[string]float64{datapoint}); got != tc.fires {
				t.Errorf("fires %v on %v, want %v", got, datapoint, tc.fires)
			}
			// Whoever it pages finds the caller in the warn lines.
			named := 0
			for _, l := range jsonLines(t, &logs) {
				if l[slog.MessageKey] == telemetry.MsgDecision && l[telemetry.AttrFailure] == string(tc.failure) && l[telemetry.AttrIdentity] == badIdentity {
					named++
				}
			}
			if named != requests {
				t.Errorf("%d warn lines name %s failing with %s, want %d:\n%s", named, badIdentity, tc.failure, requests, logs.String())
			}
		})
	}
}

// alarmDatapoint returns one datapoint of the metric math alarm (resolved properties
// p): the sums filed (emfMetrics) of the metrics it reads, by their ids; a metric
// nothing filed has none.
func alarmDatapoint(t *testing.T, alarm string, p map[string]any, filed map[string]float64) map[string]float64 {
	t.Helper()
	datapoint := map[string]float64{}
	list, _ := p["Metrics"].([]any)
	for _, m := range list {
		if m, _ := m.(map[string]any); m["MetricStat"] != nil {
			w := alarmMetrics(t, alarm, map[string]any{"Metrics": []any{m}})[0]
			if n, ok := filed[metricKey(w.namespace, w.name, w.dims)]; ok {
				datapoint[m["Id"].(string)] = n
			}
		}
	}
	return datapoint
}

// An outside attacker, with no API key, floods the authorizer with made-up keys, each a
// read of the registry table, until the table throttles: failing closed, each is a 503
// counted as FailClosed with reason registry_error. It pages through RegistryErrorsAlarm
// but no longer fires FailClosedAlarm, which would roll back any deployment under way
// (and page as if Redis were down). A table that fails for another reason, such as a
// version deployed with a table that is not there, still fires it, even when another
// reader's GetItems (the CLI's) were throttled in one of its minutes. The real authorizer,
// as the template configures it, on a table that answers every read with the error,
// decides the flood's requests for 3 minutes, and its metrics and the table's are filed
// as CloudWatch files them: for each throttled GetItem, whatever throttled it,
// ThrottledRequests by TableName and Operation, and the throttle events AWS documents for
// its cause (ReadThrottleEvents for a provisioned table's read capacity alone, a reason's
// own metric for a hot key range, an on-demand table's maximum or the account's limit).
func TestFailClosedAlarmOnRegistryFlood(t *testing.T) {
	rs := deploy(t, readTemplate(t, limiter)).resources(t)
	table := fmt.Sprint(ref("RegistryTable"))
	throttledGets := metricKey("AWS/DynamoDB", "ThrottledRequests", map[string]string{"TableName": table, "Operation": "GetItem"})
	byTable := func(name string) string {
		return metricKey("AWS/DynamoDB", name, map[string]string{"TableName": table})
	}
	tests := []struct {
		name                 string
		errType              string
		throttles            []string // what DynamoDB files of the table, once a throttled read
		others               [3]bool  // minutes in which another reader's GetItem (the CLI's) was throttled
		failClosed, registry bool     // whether FailClosedAlarm, RegistryErrorsAlarm fire
	}{
		{"made-up keys on a provisioned table over its read capacity", registrytest.Throttled,
			[]string{throttledGets, byTable("ReadThrottleEvents"), byTable("ReadProvisionedThroughputThrottleEvents")}, [3]bool{}, false, true},
		{"made-up keys on an on-demand table, one key range hot", registrytest.Throttled,
			[]string{throttledGets, byTable("ReadKeyRangeThroughputThrottleEvents")}, [3]bool{}, false, true},
		{"made-up keys on an on-demand table at its maximum throughput", registrytest.Throttled,
			[]string{throttledGets, byTable("ReadMaxOnDemandThroughputThrottleEvents")}, [3]bool{}, false, true},
		{"made-up keys on an on-demand table at the account's limit", registrytest.Throttled,
			[]string{throttledGets, byTable("ReadAccountLimitThrottleEvents")}, [3]bool{}, false, true},
		{"a table that is not there", registrytest.NotFound, nil, [3]bool{}, true, true},
		// ThrottledRequests counts every reader's GetItems: a minute in which the CLI's
		// (bucketgate keys show) were throttled leaves that minute's registry_error out
		// too, but an outage lasts minutes, and the alarm needs 2 of 3.
		{"a version whose reads DynamoDB refuses, the CLI's reads throttled in one minute", registrytest.Malformed, nil, [3]bool{true, false, false}, true, true},
		// The limit of the exclusion (docs/operations.md): a table shared with another
		// program whose reads it throttles every minute hides a version's failed reads
		// from the rollback alarms; RegistryErrorsAlarm still pages.
		{"a version whose reads DynamoDB refuses, another reader's reads throttled every minute", registrytest.Malformed, nil, [3]bool{true, true, true}, false, true},
	}
	ev := samples.Read(t, "authorizer-rest.json")
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			endpoint, gets := registrytest.FailingTable(t, tc.errType)
			for k, v := range map[string]string{"AWS_ENDPOINT_URL_DYNAMODB": endpoint, "AWS_REGION": "us-east-1",
				"AWS_ACCESS_KEY_ID": "test", "AWS_SECRET_ACCESS_KEY": "test", "AWS_SESSION_TOKEN": "", "AWS_PROFILE": "",
				"AWS_EC2_METADATA_DISABLED": "true"} {
				t.Setenv(k, v)
			}
			env := map[string]string{settings.EnvRedisAddr: miniredis.RunT(t).Addr(), settings.EnvTimeoutMS: decisionTimeout,
				settings.EnvFailMode: settings.FailClosed, settings.EnvStackName: testStack, settings.EnvMetricsFlushMS: "0",
				settings.EnvRegistryTable: "bucketgate-keys",
				settings.EnvConfigInline:  "defaultPlan: free\nplans: {free: [{name: burst, capacity: 10, refillPerSecond: 1}]}\n"}
			data := map[string][]map[string]float64{} // by alarm, a datapoint a minute
			const keys = 20                           // a minute's made-up keys
			for minute := range 3 {
				var out bytes.Buffer
				h, _, err := app.Build(app.Authorizer, func(k string) string { return env[k] }, &out, io.Discard)
				if err != nil {
					t.Fatal(err)
				}
				gets.Store(0)
				for i := range keys {
					key := fmt.Sprintf("made-up-%d-%d", minute, i)
					var unavailable *authorizer.UnavailableError
					if _, err := h.Invoke(t.Context(), samples.WithAPIKey(t, ev, key)); !errors.As(err, &unavailable) {
						t.Fatalf("Invoke with the made-up key %s: %v, want a 503 (failing closed)", key, err)
					}
				}
				filed := emfMetrics(t, jsonLines(t, &out))
				reason := metricKey("bucketgate", telemetry.MetricFailClosed, map[string]string{telemetry.DimStack: testStack, telemetry.DimReason: string(guard.FailureRegistryError)})
				if filed[reason] != keys {
					t.Fatalf("%s counted %v times, want %d: %v", reason, filed[reason], keys, filed)
				}
				for _, key := range tc.throttles { // what DynamoDB files of the table
					filed[key] = float64(gets.Load())
				}
				if tc.others[minute] {
					filed[throttledGets]++
				}
				for _, alarm := range []string{"FailClosedAlarm", "RegistryErrorsAlarm"} {
					data[alarm] = append(data[alarm], alarmDatapoint(t, alarm, rs[alarm].Properties, filed))
				}
			}
			for alarm, want := range map[string]bool{"FailClosedAlarm": tc.failClosed, "RegistryErrorsAlarm": tc.registry} {
				if got := alarmFires(t, alarm, rs[alarm].Properties, data[alarm]); got != want {
					t.Errorf("%s fires %v on %v, want %v", alarm, got, data[alarm], want)
				}
			}
		})
	}
}

// badIdentity is the identity of authorizer-rest.json's requests: its source address.
const badIdentity = "ip:203.0.113.10"

// writeBadState writes, by hand, a bucket of badIdentity whose tokens are no number.
func writeBadState(_ *testing.T, m *miniredis.Miniredis) {
	m.HSet(bucket.Key(badIdentity), "burst:tokens", "nan", "burst:ts", "1")
}

// hang makes m answer nothing until the test ends (before m is closed).
func hang(t *testing.T, m *miniredis.Miniredis) {
	m.Lock()
	t.Cleanup(m.Unlock)
}

// Every alarm notifies the topic when it fires and when it recovers: the one the stack
// creates (encrypted with a key of its own that CloudWatch may use, TLS only), with
// AlarmEmail subscribed to it; or AlarmTopicArn.
func TestTemplateAlarmActions(t *testing.T) {
	const given = "arn:aws:sns:us-east-1:123456789012:on-call"
	tests := []struct {
		name   string
		params []string
		topic  any // the alarms' action
		email  bool
	}{
		{"the stack's topic", nil, ref("AlarmTopic"), false},
		{"the stack's topic, mailed", []string{"AlarmEmail", "on-call@example.com"}, ref("AlarmTopic"), true},
		{"a topic of yours", []string{"AlarmTopicArn", given}, given, false},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			rs := deploy(t, readTemplate(t, limiter), tc.params...).resources(t)
			alarms := ofType(rs, "AWS::CloudWatch::Alarm")
			if len(alarms) < 10 {
				t.Fatalf("alarms %v: want the ten of the issue at least", alarms)
			}
			for _, id := range alarms {
				p := rs[id].Properties
				if want := []any{tc.topic}; !reflect.DeepEqual(p["AlarmActions"], want) || !reflect.DeepEqual(p["OKActions"], want) {
					t.Errorf("%s: AlarmActions %v, OKActions %v: want %v both", id, p["AlarmActions"], p["OKActions"], want)
				}
			}
			sub, subscribed := rs["AlarmEmailSubscription"]
			if subscribed != tc.email || subscribed && (sub.Properties["Protocol"] != "email" || sub.Properties["Endpoint"] != "on-call@example.com" || !reflect.DeepEqual(sub.Properties["TopicArn"], ref("AlarmTopic"))) {
				t.Errorf("subscription %v (made %v), want one %v", sub.Properties, subscribed, tc.email)
			}
			_, created := rs["AlarmTopic"]
			if created != (tc.topic != given) {
				t.Fatalf("topic created %v", created)
			}
			if !created {
				return
			}
			if topic := rs["AlarmTopic"].Properties; !reflect.DeepEqual(topic["KmsMasterKeyId"], ref("AlarmKey")) {
				t.Errorf("AlarmTopic %v: want it encrypted with AlarmKey (CloudWatch cannot publish under aws/sns)", topic)
			}
			key := rs["AlarmKey"].Properties
			if key["EnableKeyRotation"] != true || !slices.ContainsFunc(statements(t, key["KeyPolicy"]), func(s map[string]any) bool {
				return reflect.DeepEqual(s["Principal"], map[string]any{"Service": "cloudwatch.amazonaws.com"}) &&
					reflect.DeepEqual(s["Action"], []any{"kms:Decrypt", "kms:GenerateDataKey*"}) && s["Effect"] == "Allow"
			}) {
				t.Errorf("AlarmKey %v: want rotation, and CloudWatch allowed to encrypt for the topic", key)
			}
			policy := statements(t, rs["AlarmTopicPolicy"].Properties["PolicyDocument"])
			if !slices.ContainsFunc(policy, func(s map[string]any) bool {
				return s["Effect"] == "Allow" && s["Action"] == "sns:Publish" && reflect.DeepEqual(s["Principal"], map[string]any{"Service": "cloudwatch.amazonaws.com"})
			}) || !slices.ContainsFunc(policy, func(s map[string]any) bool {
				return s["Effect"] == "Deny" && reflect.DeepEqual(s["Condition"], map[string]any{"Bool": map[string]any{"aws:SecureTransport": "false"}})
			}) {
				t.Errorf("AlarmTopicPolicy %v: want CloudWatch allowed to publish, over TLS only", policy)
			}
		})
	}
}

// statements returns the statements of a policy document.
func statements(t *testing.T, doc any) []map[string]any {
	t.Helper()
	d, _ := doc.(map[string]any)
	list, _ := d["Statement"].([]any)
	var out []map[string]any
	for _, s := range list {
		m, ok := s.(map[string]any)
		if !ok {
			t.Fatalf("statement %v", s)
		}
		out = append(out, m)
	}
	if len(out) == 0 {
		t.Fatalf("policy document %v has no statement", doc)
	}
	return out
}

// A new version of the authorizer or the check function takes traffic gradually
// (DeploymentType) through its alias live, and CodeDeploy rolls it back when a
// fail-closed, degraded, error or throttle alarm of it fires; API Gateway invokes the
// authorizer's alias, allowed on the alias; the authorizer is updated after the check
// function.
func TestTemplateGradualDeployment(t *testing.T) {
	doc := samTranslate(t, limiter)
	rs := deploy(t, doc).resources(t)
	for fn, alarms := range map[string][]string{
		"AuthorizerFunction": {"FailClosedAlarm", "DegradedAlarm", "AuthorizerErrorsAlarm", "AuthorizerThrottlesAlarm"},
		"CheckFunction":      {"FailClosedAlarm", "DegradedAlarm", "CheckErrorsAlarm", "CheckThrottlesAlarm"},
	} {
		alias, ok := rs[fn+"Aliaslive"]
		if !ok || alias.Type != "AWS::Lambda::Alias" || alias.Properties["Name"] != "live" {
			t.Errorf("%s: no alias live (%v)", fn, alias)
		}
		group := rs[fn+"DeploymentGroup"].Properties
		var names []any
		config, _ := group["AlarmConfiguration"].(map[string]any)
		list, _ := config["Alarms"].([]any)
		for _, a := range list {
			names = append(names, a.(map[string]any)["Name"])
		}
		var want []any
		for _, a := range alarms {
			want = append(want, ref(a))
		}
		rollback, _ := group["AutoRollbackConfiguration"].(map[string]any)
		if config["Enabled"] != true || !reflect.DeepEqual(names, want) || rollback["Enabled"] != true ||
			!slices.Contains(rollback["Events"].([]any), any("DEPLOYMENT_STOP_ON_ALARM")) {
			t.Errorf("%s: deployment group %v: want rollback on the alarms %v", fn, group, alarms)
		}
		// The transform here resolves DeploymentType to its default, as SAM resolves the
		// value a deployment gives.
		if cfg := jsonText(t, group["DeploymentConfigName"]); !strings.Contains(cfg, "CodeDeployDefault.Lambda") || !strings.Contains(cfg, "Canary10Percent5Minutes") {
			t.Errorf("%s: deployment config %s: want DeploymentType's", fn, cfg)
		}
	}
	for _, id := range []string{"RestApiRateLimiterAuthorizerPermission", "HttpApiRateLimiterAuthorizerPermission"} {
		if p := rs[id].Properties; p["Principal"] != "apigateway.amazonaws.com" || !reflect.DeepEqual(p["FunctionName"], ref("AuthorizerFunctionAliaslive")) {
			t.Errorf("%s: %v: want API Gateway allowed to invoke the authorizer's alias live", id, p)
		}
	}
	// The check function settles the ids the authorizer issues: a new authorizer waits
	// for the new check function to take all of its traffic.
	if after := rs["AuthorizerFunction"].DependsOn; !slices.Contains(after, "CheckFunctionAliaslive") {
		t.Errorf("AuthorizerFunction DependsOn %v: want CheckFunctionAliaslive, so that the check function is updated first", after)
	}
	if _, ok := rs["OperatorFunctionAliaslive"]; ok {
		t.Errorf("the operator function has an alias: operators invoke it as it is, and it takes no part in gradual deployments")
	}
}

// Every function error of the check function counts in CheckErrorsAlarm (Lambda's
// Errors, less the refusals alone): the alarm's description and its row of the runbook
// name each errorType the function answers, so that whoever it pages knows each cause.
func TestCheckErrorsAlarmNamesEveryErrorType(t *testing.T) {
	const alarm, doc = "CheckErrorsAlarm", "docs/operations.md"
	desc, _ := deploy(t, readTemplate(t, limiter)).resources(t)[alarm].Properties["AlarmDescription"].(string)
	var row string
	for line := range strings.Lines(readFile(t, doc)) {
		if strings.HasPrefix(line, "| `"+alarm+"` |") {
			row = line
		}
	}
	if row == "" {
		t.Fatalf("%s has no row for %s", doc, alarm)
	}
	for _, typ := range []string{checkapi.ErrorTypeInvalidRequest, checkapi.ErrorTypeConflict, checkapi.ErrorTypeUnavailable} {
		if !strings.Contains(desc, typ) {
			t.Errorf("%s's description does not name %s, which counts in it: %q", alarm, typ, desc)
		}
		if !strings.Contains(row, "`"+typ+"`") {
			t.Errorf("%s: the row of %s does not name %s, which counts in it: %s", doc, alarm, typ, row)
		}
	}
}

// alarmRow matches a row of the alarm table of docs/operations.md: its first column, the
// alarms it is about.
var alarmRow = regexp.MustCompile("(?m)^\\| (`[A-Za-z0-9]+Alarm`(?:, `[A-Za-z0-9]+Alarm`)*) \\|")

// The alarm table of docs/operations.md has a row for every alarm of the template, with
// any parameters, and names no other: whoever an alarm pages finds what to do.
func TestOperationsAlarmTable(t *testing.T) {
	const doc = "docs/operations.md"
	alarms := map[string]bool{}
	for _, params := range [][]string{nil, {"VpcId", "vpc-1", "SubnetIds", "subnet-1", "RouteTableIds", "rtb-1", "RedisEndpoint", "redis.internal:6379"}} {
		for _, id := range ofType(deploy(t, readTemplate(t, limiter), params...).resources(t), "AWS::CloudWatch::Alarm") {
			alarms[id] = true
		}
	}
	listed := map[string]bool{}
	for _, m := range alarmRow.FindAllStringSubmatch(readFile(t, doc), -1) {
		for _, name := range strings.Split(m[1], ", ") {
			listed[strings.Trim(name, "`")] = true
		}
	}
	for _, id := range slices.Sorted(maps.Keys(alarms)) {
		if !listed[id] {
			t.Errorf("%s: no row for %s", doc, id)
		}
	}
	for _, id := range slices.Sorted(maps.Keys(listed)) {
		if !alarms[id] {
			t.Errorf("%s: a row for %s, which the template does not make", doc, id)
		}
	}
}
