package template_test

// Events (issue 30): the EventBusName parameter, what the functions may do with it, and
// the example rule, held to what the code sends.

import (
	"bytes"
	"encoding/json"
	"fmt"
	"log/slog"
	"reflect"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/service/eventbridge"

	"github.com/bucketgate/bucketgate"
	"github.com/bucketgate/bucketgate/internal/eventbus"
	"github.com/bucketgate/bucketgate/internal/settings"
	"github.com/bucketgate/bucketgate/internal/telemetry"
	"github.com/bucketgate/bucketgate/internal/testkit/moto"
)

// matches reports whether event (JSON values) matches an EventBridge event pattern: every
// field the pattern names holds one of the values it lists, nested fields alike.
func matches(pattern, event map[string]any) bool {
	for k, want := range pattern {
		switch w := want.(type) {
		case map[string]any:
			sub, ok := event[k].(map[string]any)
			if !ok || !matches(w, sub) {
				return false
			}
		case []any:
			got, _ := json.Marshal(event[k])
			found := false
			for _, v := range w {
				if b, _ := json.Marshal(v); string(b) == string(got) {
					found = true
				}
			}
			if !found {
				return false
			}
		default:
			return false
		}
	}
	return true
}

// delivered returns the envelope EventBridge delivers for e sent by the stack.
func delivered(t *testing.T, e eventbus.Event) map[string]any {
	t.Helper()
	b, err := json.Marshal(map[string]any{"source": eventbus.Source, "detail-type": e.Type, "detail": e.Detail})
	if err != nil {
		t.Fatal(err)
	}
	var m map[string]any
	if err := json.Unmarshal(b, &m); err != nil {
		t.Fatal(err)
	}
	return m
}

// numbers returns v with every number as a float64, as JSON decodes it.
func numbers(t *testing.T, v any) map[string]any {
	t.Helper()
	var m map[string]any
	if err := json.Unmarshal([]byte(jsonText(t, v)), &m); err != nil {
		t.Fatal(err)
	}
	return m
}

// Without EventBusName nothing of events is deployed and the functions send none; with
// a bus, the functions may put events on that bus alone (the variable they read holds
// it), of the code's source alone, and the example rule on it sends exhausted quotas of this stack, the events the
// code sends at 100%, to the created alarm topic, which its key and policy let
// EventBridge publish to (for that rule alone); with a topic of yours, the rule has no
// target.
func TestTemplateEvents(t *testing.T) {
	doc := readTemplate(t, limiter)
	statements := func(d deployment) []any {
		s, _ := at(map[string]any{"r": d.resources(t)["FunctionAccessPolicy"].Properties}, "r.PolicyDocument.Statement")
		l, _ := s.([]any)
		return l
	}
	none := deploy(t, doc)
	if env := none.resolve(t, section(doc, "Globals")); !reflect.DeepEqual(mustAt(t, env, globalEnv(settings.EnvEventBusName)), "") {
		t.Errorf("EVENT_BUS_NAME by default %v, want empty", mustAt(t, env, globalEnv(settings.EnvEventBusName)))
	}
	if _, ok := none.resources(t)["QuotaExhaustedRule"]; ok || strings.Contains(jsonText(t, statements(none)), "events:") {
		t.Error("events deployed without EventBusName")
	}
	for _, id := range []string{"AlarmKey", "AlarmTopicPolicy"} {
		r := none.resources(t)[id]
		if strings.Contains(jsonText(t, r.Properties), "events.amazonaws.com") {
			t.Errorf("%s lets EventBridge in without EventBusName", id)
		}
	}

	d := deploy(t, doc, "EventBusName", "orders-events")
	if refused := d.refused(t); len(refused) > 0 {
		t.Fatalf("refused by %v", refused)
	}
	env := d.resolve(t, section(doc, "Globals"))
	bus, _ := mustAt(t, env, globalEnv(settings.EnvEventBusName)).(string)
	if s, err := settingsWith(settings.EnvEventBusName, bus); err != nil || s.EventBusName != "orders-events" {
		t.Fatalf("the functions read EVENT_BUS_NAME %q, %v; want the bus", s.EventBusName, err)
	}
	var send any
	for _, s := range statements(d) {
		if s.(map[string]any)["Sid"] == "SendEvents" {
			send = s
		}
	}
	// Of the source the code sends alone: on a bus that other applications share (the
	// account's default one), the functions cannot pass for another source.
	want := map[string]any{"Sid": "SendEvents", "Effect": "Allow", "Action": "events:PutEvents",
		"Resource":  sub("arn:${AWS::Partition}:events:${AWS::Region}:${AWS::AccountId}:event-bus/${EventBusName}"),
		"Condition": map[string]any{"StringEquals": map[string]any{"events:source": eventbus.Source}}}
	if !reflect.DeepEqual(send, want) {
		t.Errorf("statement %v, want %v", send, want)
	}
	rule, ok := d.resources(t)["QuotaExhaustedRule"]
	if !ok || rule.Properties["EventBusName"] != "orders-events" || rule.Properties["State"] != "ENABLED" {
		t.Fatalf("rule %v: want it on the bus, enabled", rule.Properties)
	}
	pattern := numbers(t, d.resolve(t, rule.Properties["EventPattern"]))
	pattern["detail"].(map[string]any)["stack"] = []any{testStack} // !Ref AWS::StackName, resolved
	exhausted := eventbus.Event{Type: eventbus.TypeQuotaThreshold, Time: time.Now(), Detail: eventbus.Detail{Identity: "key:0f", Plan: "pro",
		Rule: "monthly", Threshold: 100, Usage: 100_000, Limit: 100_000, Stack: testStack,
		Window: eventbus.Window{Start: time.Date(2026, 11, 1, 0, 0, 0, 0, time.UTC), End: time.Date(2026, 12, 1, 0, 0, 0, 0, time.UTC)}}}
	if !matches(pattern, delivered(t, exhausted)) {
		t.Errorf("pattern %v does not match the event %v", pattern, delivered(t, exhausted))
	}
	for name, tweak := range map[string]func(e *eventbus.Event){
		"80%":           func(e *eventbus.Event) { e.Detail.Threshold = 80 },
		"rate limited":  func(e *eventbus.Event) { e.Type, e.Detail.Threshold = eventbus.TypeRateLimited, 0 },
		"another stack": func(e *eventbus.Event) { e.Detail.Stack = "orders-staging" },
	} {
		e := exhausted
		tweak(&e)
		if matches(pattern, delivered(t, e)) {
			t.Errorf("the rule matches %s", name)
		}
	}
	targets, _ := rule.Properties["Targets"].([]any)
	if len(targets) != 1 || !reflect.DeepEqual(targets[0].(map[string]any)["Arn"], ref("AlarmTopic")) {
		t.Fatalf("targets %v: want the created alarm topic", targets)
	}
	paths, _ := mustAt(t, targets[0], "InputTransformer.InputPathsMap").(map[string]any)
	text, _ := mustAt(t, targets[0], "InputTransformer.InputTemplate").(string)
	for name, path := range paths {
		if _, ok := at(delivered(t, exhausted), strings.TrimPrefix(path.(string), "$.")); !ok {
			t.Errorf("input path %s=%s: the event has none", name, path)
		}
		if !strings.Contains(text, "<"+name+">") {
			t.Errorf("input template %s does not say <%s>", text, name)
		}
	}
	// EventBridge's requests to the topic's key, made as it publishes, carry none of the
	// aws:Source* keys (SNS's guide: not supported for EventBridge to encrypted topics): a
	// condition on them would deny every delivery. The topic's policy names the rule.
	var keyGrants []map[string]any
	collectStatements(d.resources(t)["AlarmKey"].Properties["KeyPolicy"], &keyGrants)
	wantKey := map[string]any{"Sid": "QuotaEventsPublish", "Effect": "Allow", "Principal": map[string]any{"Service": "events.amazonaws.com"},
		"Action": []any{"kms:Decrypt", "kms:GenerateDataKey*"}, "Resource": "*"}
	if !slices.ContainsFunc(keyGrants, func(s map[string]any) bool { return reflect.DeepEqual(s, wantKey) }) {
		t.Errorf("the alarm topic's key %v: want EventBridge to encrypt, with no condition: %v", keyGrants, wantKey)
	}
	policy := jsonText(t, d.resources(t)["AlarmTopicPolicy"].Properties)
	if !strings.Contains(policy, `"Service":"events.amazonaws.com"`) || !strings.Contains(policy, jsonText(t, map[string]any{"aws:SourceArn": getAtt("QuotaExhaustedRule", "Arn")})) {
		t.Errorf("the alarm topic's policy %s: want EventBridge to publish, for the rule alone", policy)
	}
	yours := deploy(t, doc, "EventBusName", "orders-events", "AlarmTopicArn", "arn:aws:sns:us-east-1:123456789012:on-call")
	if r := yours.resources(t)["QuotaExhaustedRule"]; r.Properties["Targets"] != nil {
		t.Errorf("targets %v with a topic of yours, want none", r.Properties["Targets"])
	}

	// The created VPC reaches EventBridge through an endpoint of its own, for the bus
	// alone; an existing VPC through its own way out.
	endpoint, ok := d.resources(t)["EventsVpcEndpoint"]
	if !ok || endpoint.Properties["ServiceName"].(map[string]any)["Fn::Sub"] != "com.amazonaws.${AWS::Region}.events" || endpoint.Properties["PrivateDnsEnabled"] != true {
		t.Fatalf("endpoint %v: want EventBridge's, with private DNS", endpoint.Properties)
	}
	if got := mustAt(t, endpoint.Properties, "PolicyDocument.Statement.0"); !reflect.DeepEqual(got, map[string]any{"Sid": "SendEvents", "Effect": "Allow",
		"Principal": "*", "Action": "events:PutEvents", "Resource": want["Resource"],
		"Condition": map[string]any{"StringEquals": map[string]any{"aws:PrincipalAccount": "123456789012"}}}) {
		t.Errorf("endpoint policy %v: want PutEvents on the bus, for this account", got)
	}
	if egress := d.resources(t)["FunctionEgressToEvents"].Properties; !reflect.DeepEqual(egress["DestinationSecurityGroupId"], getAtt("EventsEndpointSecurityGroup", "GroupId")) || egress["CidrIp"] != nil {
		t.Errorf("egress %v: want the endpoint's group alone", egress)
	}
	existing := deploy(t, doc, "EventBusName", "orders-events", "VpcId", "vpc-1", "SubnetIds", "subnet-1,subnet-2", "RouteTableIds", "rtb-1")
	if _, ok := existing.resources(t)["EventsVpcEndpoint"]; ok {
		t.Error("an EventBridge endpoint in your VPC")
	}
	if egress := existing.resources(t)["FunctionEgressToEvents"].Properties; egress["CidrIp"] != "0.0.0.0/0" || egress["FromPort"] != 443 && egress["FromPort"] != "443" {
		t.Errorf("egress %v: want HTTPS out, through your endpoint or NAT gateway", egress)
	}
	for _, id := range []string{"EventsVpcEndpoint", "FunctionEgressToEvents"} {
		if _, ok := none.resources(t)[id]; ok {
			t.Errorf("%s without EventBusName", id)
		}
	}
}

// mustAt returns the value at path in v, failing t when there is none.
func mustAt(t *testing.T, v any, path string) any {
	t.Helper()
	got, ok := at(v, path)
	if !ok {
		t.Fatalf("no %s in %v", path, v)
	}
	return got
}

// EventBusName takes what the functions take as a bus's name, and nothing else: the
// ARN of a bus, which EVENT_BUS_NAME also takes, is a bus of another account, which a
// rule here could not watch and the stack's policy does not name.
func TestTemplateEventBusPattern(t *testing.T) {
	pattern := allowedPattern(t, "EventBusName")
	for _, v := range []string{"", "default", "orders-events", "aws.partner/example.com/1234/billing", "a_b.c", strings.Repeat("b", 256),
		strings.Repeat("b", 257), "orders events", "ordérs", "arn:aws:events:us-east-1:123456789012:event-bus/orders"} {
		_, err := settingsWith(settings.EnvEventBusName, v)
		functions := err == nil && !strings.HasPrefix(v, "arn:")
		if got := pattern.MatchString(v); got != functions {
			t.Errorf("EventBusName %q: allowed %v; the functions take it as a name: %v (%v)", v, got, functions, err)
		}
	}
}

// The template's QuotaExhaustedRule and the rule docs/operations.md gives for the
// quotas' first denials, as EventBridge (moto's: PutEvents, a rule, an SQS queue)
// matches them against what the code sends for each crossing: the template's, a quota's
// 100% alone; the other, a quota's first denial alone, short of its limit or not, never
// a bucket's, whose Rate Limited said nothing of its rule's kind.
func TestEventRulesOnEventBridge(t *testing.T) {
	const quotaDenials = `{"source": ["bucketgate"], "detail-type": ["Rate Limited"], "detail": {"kind": ["quota"]}}`
	if !strings.Contains(strings.Join(strings.Fields(readFile(t, "docs/operations.md")), " "), quotaDenials) {
		t.Fatalf("docs/operations.md gives no rule %s", quotaDenials)
	}
	d := deploy(t, readTemplate(t, limiter), "EventBusName", "orders-events")
	exhausted := numbers(t, d.resolve(t, d.resources(t)["QuotaExhaustedRule"].Properties["EventPattern"]))
	exhausted["detail"].(map[string]any)["stack"] = []any{testStack} // !Ref AWS::StackName, resolved

	at := time.Date(2026, 11, 25, 19, 22, 10, 0, time.UTC)
	end := time.Date(2026, 12, 1, 0, 0, 0, 0, time.UTC)
	quota := bucketgate.Crossing{Rule: "monthly", Quota: true, Limit: 10, WindowStart: end.AddDate(0, -1, 0), WindowEnd: end}
	crossings := map[string]bucketgate.Crossing{ // by the identity whose crossing it is
		"key:80":                        withCrossing(quota, bucketgate.CrossingThreshold, 80, 8),
		"key:100":                       withCrossing(quota, bucketgate.CrossingThreshold, 100, 10),
		"key:denied-at-its-limit":       withCrossing(quota, bucketgate.CrossingLimited, 0, 10),
		"key:denied-short-of-its-limit": withCrossing(quota, bucketgate.CrossingLimited, 0, 9),
		"key:bucket":                    {Kind: bucketgate.CrossingLimited, Rule: "burst", Limit: 10, Usage: 10, WindowStart: at, WindowEnd: at.Add(10 * time.Second)},
	}
	srv := moto.Start(t)
	bus := srv.Bus(t, "orders-events", eventbus.Source)
	rules := []struct {
		name    string
		pattern string
		want    []string // the identities whose event it delivers
	}{
		{"QuotaExhaustedRule", jsonText(t, exhausted), []string{"key:100"}},
		{"the quotas' first denials", quotaDenials, []string{"key:denied-at-its-limit", "key:denied-short-of-its-limit"}},
	}
	queues := make([]*moto.Bus, len(rules))
	for i, r := range rules {
		queues[i] = bus.Matching(t, fmt.Sprintf("rule-%d", i), r.pattern)
	}
	var events []eventbus.Event
	for id, c := range crossings {
		events = append(events, eventbus.Crossed(bucketgate.Decision{At: at, Crossings: []bucketgate.Crossing{c}}, eventbus.Who{Identity: id, Plan: "pro"})...)
	}
	var logs bytes.Buffer
	// A deadline that moto on a busy machine meets: its first PutEvents loads its code.
	s := eventbus.NewSender(eventbridge.NewFromConfig(srv.Config()), eventbus.Options{Bus: bus.Name, Timeout: 30 * time.Second,
		Stack: testStack, Log: slog.New(slog.NewJSONHandler(&logs, nil))})
	var inv telemetry.Invocation
	s.Send(t.Context(), &inv, events)
	if logs.Len() != 0 {
		t.Fatalf("not sent: %s", &logs)
	}
	all := bus.Receive(t, len(events), 20*time.Second)
	if len(all) != len(events) {
		t.Fatalf("%d events delivered, want %d", len(all), len(events))
	}
	// moto delivers to every rule's target within PutEvents: each queue holds all of its
	// events once the bus's catch-all holds them all.
	for i, r := range rules {
		var got []string
		for _, e := range queues[i].Receive(t, -1, time.Second) {
			var detail eventbus.Detail
			if err := json.Unmarshal(e.Detail, &detail); err != nil {
				t.Fatal(err)
			}
			got = append(got, detail.Identity)
		}
		slices.Sort(got)
		if !slices.Equal(got, r.want) {
			t.Errorf("%s %s delivered the events of %q, want %q", r.name, r.pattern, got, r.want)
		}
	}
}

// withCrossing returns c of kind k at percent p with usage u.
func withCrossing(c bucketgate.Crossing, k bucketgate.CrossingKind, p, u int64) bucketgate.Crossing {
	c.Kind, c.Percent, c.Usage = k, p, u
	return c
}
