package template_test

// The dashboard is what an on-call engineer reads first: it shows what the alarms count,
// as they count it, and every metric the functions write.

import (
	"fmt"
	"maps"
	"math"
	"slices"
	"strings"
	"testing"

	"github.com/bucketgate/bucketgate/internal/telemetry"
)

// Each function's errors on the dashboard are those its errors alarm counts: Lambda's
// Errors less the refusals (the authorizer's 401s, and its fail-closed 503s), never below
// zero, by the alarm's own metrics. Lambda's Errors alone would show a spray of made-up
// keys, or Redis down (FailClosedAlarm's), as the authorizer crashing.
func TestDashboardErrorsAsTheAlarmsCountThem(t *testing.T) {
	rs := deploy(t, readTemplate(t, limiter)).resources(t)
	widgets := dashboardWidgets(t, "Dashboard", rs["Dashboard"].Properties["DashboardBody"])
	// The dashboard names a function ${Function} (substitute: "sub:Function"), an alarm
	// {"Ref": Function}.
	var pairs []string
	for fn := range deployedGoFunctions(t) {
		pairs = append(pairs, fmt.Sprint(ref(fn)), "sub:"+fn)
	}
	asDashboard := strings.NewReplacer(pairs...)
	lines := map[string]string{"AuthorizerErrorsAlarm": "authorizer", "CheckErrorsAlarm": "check"} // alarm -> the id of its line
	tests := []struct {
		name string
		data map[string]float64 // by the alarms' metric ids
		want map[string]float64 // errors counted, by alarm
	}{
		{"no traffic", map[string]float64{}, map[string]float64{"AuthorizerErrorsAlarm": 0, "CheckErrorsAlarm": 0}},
		{"crashes", map[string]float64{"invocations": 100, "errors": 7}, map[string]float64{"AuthorizerErrorsAlarm": 7, "CheckErrorsAlarm": 7}},
		{"401s alone", map[string]float64{"invocations": 1000, "errors": 600, "refused": 600}, map[string]float64{"AuthorizerErrorsAlarm": 0, "CheckErrorsAlarm": 0}},
		{"503s alone", map[string]float64{"invocations": 50, "errors": 50, "unavailable": 50}, map[string]float64{"AuthorizerErrorsAlarm": 0, "CheckErrorsAlarm": 50}},
		{"crashes among 401s and 503s", map[string]float64{"invocations": 1000, "errors": 730, "refused": 600, "unavailable": 100}, map[string]float64{"AuthorizerErrorsAlarm": 30, "CheckErrorsAlarm": 130}},
		{"refusals counted ahead of their errors", map[string]float64{"invocations": 5, "errors": 3, "refused": 5}, map[string]float64{"AuthorizerErrorsAlarm": 0, "CheckErrorsAlarm": 0}},
	}
	for _, alarm := range slices.Sorted(maps.Keys(lines)) {
		p := rs[alarm].Properties
		byKey := map[string]string{} // the alarm's metric ids by metricKey
		list, _ := p["Metrics"].([]any)
		for _, m := range list {
			if m, _ := m.(map[string]any); m["MetricStat"] != nil {
				w := alarmMetrics(t, alarm, map[string]any{"Metrics": []any{m}})[0]
				byKey[asDashboard.Replace(metricKey(w.namespace, w.name, w.dims))], _ = m["Id"].(string)
			}
		}
		// The widget of the line, its metrics by the alarm's ids.
		var exprs map[string]string
		var alarmID map[string]string // the widget's metric ids -> the alarm's
		for _, w := range widgets {
			i := slices.IndexFunc(w.rows, func(r widgetRow) bool { return r.id == lines[alarm] && r.expr != "" && !r.hidden })
			if i < 0 {
				continue
			}
			if !strings.Contains(w.rows[i].label, alarm) {
				t.Errorf("the dashboard's line %s is labelled %q: want it to name %s, whose count it is", lines[alarm], w.rows[i].label, alarm)
			}
			exprs, alarmID = map[string]string{}, map[string]string{}
			for _, r := range w.rows {
				switch {
				case r.expr != "":
					exprs[r.id] = r.expr
				case r.id != "":
					alarmID[r.id] = byKey[metricKey(r.metric.namespace, r.metric.name, r.metric.dims)]
				}
			}
		}
		if exprs == nil {
			t.Fatalf("no widget shows a line %q of the errors %s counts", lines[alarm], alarm)
		}
		for _, tc := range tests {
			t.Run(alarm+"/"+tc.name, func(t *testing.T) {
				ids, minute := map[string]bool{}, map[string]float64{}
				for id, aid := range alarmID {
					ids[id] = true
					if v, ok := tc.data[aid]; ok {
						minute[id] = v
					}
				}
				got := evalMath(t, "Dashboard", exprs, ids, lines[alarm], minute)
				if want := tc.want[alarm]; !got.ok || got.v != want {
					t.Errorf("the dashboard's line %s on %v: %v, want %v", lines[alarm], tc.data, got, want)
				}
				// The alarm counts as much: its share of the invocations, counted against
				// at least 10.
				exprs, ids, returned := alarmMath(t, alarm, p)
				share := evalMath(t, alarm, exprs, ids, returned, tc.data)
				if counted := share.v * max(tc.data["invocations"], 10) / 100; !share.ok || math.Abs(counted-tc.want[alarm]) > 1e-9 {
					t.Errorf("%s counts %v (%v%%) on %v, want %v", alarm, counted, share, tc.data, tc.want[alarm])
				}
			})
		}
	}
}

// The dashboard shows every metric the functions write, by its own stack: events not
// sent (EventsFailed) and a Redis that evicts buckets (RedisEvictionPolicy) too, which
// otherwise only a log line, or with a Redis of yours an alarm, would tell.
func TestDashboardShowsEveryMetric(t *testing.T) {
	rs := deploy(t, readTemplate(t, limiter)).resources(t)
	shown := map[string]bool{}
	for _, w := range dashboardMetrics(t, "Dashboard", rs["Dashboard"].Properties["DashboardBody"]) {
		shown[metricKey(w.namespace, w.name, nil)] = shown[metricKey(w.namespace, w.name, nil)] || w.dims[telemetry.DimStack] == testStack
	}
	namespace, emitted := emittedMetrics(t)
	names := map[string]bool{}
	for k := range emitted {
		name, _, _ := strings.Cut(strings.TrimPrefix(k, namespace+" "), " ")
		names[name] = true
	}
	for _, name := range slices.Sorted(maps.Keys(names)) {
		if !shown[metricKey(namespace, name, nil)] {
			t.Errorf("no widget of the dashboard shows %s %s of the stack", namespace, name)
		}
	}
}

// The dashboard shows every metric the alarms that roll a deployment back on decisions
// read, by the same dimensions: the registry table's throttled reads too, in whose minutes
// FailClosedAlarm and DegradedAlarm leave the registry's failures out, so that whoever
// they page, or whoever wonders why they stayed quiet through a wave of 503s, sees the
// throttles beside the decisions. The table of a deployment on an existing one, by its
// name.
func TestDashboardShowsWhatTheDecisionAlarmsRead(t *testing.T) {
	tests := []struct {
		name   string
		params []string
	}{
		{"the table the stack creates", nil},
		{"an existing table", []string{"ExistingRegistryTable", "keys-of-mine"}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			rs := deploy(t, readTemplate(t, limiter), tc.params...).resources(t)
			shown := map[string]bool{}
			for _, w := range dashboardMetrics(t, "Dashboard", rs["Dashboard"].Properties["DashboardBody"]) {
				shown[metricKey(w.namespace, w.name, w.dims)] = true
			}
			for _, alarm := range []string{"FailClosedAlarm", "DegradedAlarm"} {
				for _, w := range alarmMetrics(t, alarm, rs[alarm].Properties) {
					if key := metricKey(w.namespace, w.name, w.dims); !shown[key] {
						t.Errorf("%s reads %s, which no widget of the dashboard shows", alarm, key)
					}
				}
			}
		})
	}
}
