package template_test

// Upgrading a stack of the previous release keeps what it stores. CloudFormation
// replaces a resource when a property it cannot update changes: a replaced cache is an
// empty one, every bucket full again, and while the stack updates the old authorizer
// decides on the old cache while the new check function decides on the new (each
// identity gets both limits); a replaced registry table starts without a key.

import (
	"fmt"
	"reflect"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"
)

// previousTemplate is template.yaml of the previous release (main at c09f703, 0.2).
const previousTemplate = "integration/template/testdata/template-c09f703.yaml"

// createOnly are the properties of each type of resource that holds state, or that
// cannot be made twice, whose change makes CloudFormation replace the resource: its
// resource schema's createOnlyProperties, and a table's KeySchema. A gateway endpoint
// made again on the same route tables fails the update: a route table takes one per
// service.
var createOnly = map[string][]string{
	"AWS::ElastiCache::ServerlessCache": {"ServerlessCacheName", "KmsKeyId", "SnapshotArnsToRestore", "SubnetIds"},
	"AWS::DynamoDB::Table":              {"TableName", "KeySchema", "ImportSourceSpecification"},
	"AWS::EC2::VPCEndpoint":             {"VpcId", "ServiceName", "VpcEndpointType"},
}

// A stack that the previous release deployed (it required a VPC, subnets and the
// functions' security group, and added a DynamoDB endpoint to RouteTableIds), upgraded
// with the parameters docs/deploy.md gives for it, keeps its cache, its registry table
// and its endpoint: no create-only property changes. Stack names
// in lowercase, as the names the previous release gave its cache; one with capitals is
// told apart in deploy.md.
func TestTemplateUpgradeKeepsTheCacheAndTheTable(t *testing.T) {
	const stack, id = "bucketgate", "arn:aws:cloudformation:" + testRegion + ":123456789012:stack/bucketgate/5f0c1e2a-9b3d-11ef-8f4e-0a1b2c3d4e5f"
	doc := readFile(t, "docs/deploy.md")
	const upgrade = "CacheName=<stack>-buckets"
	if !strings.Contains(doc, upgrade) {
		t.Fatalf("docs/deploy.md does not say to deploy an upgraded stack with %s", upgrade)
	}
	given := []string{"VpcId", "vpc-0123456789abcdef0", "SubnetIds", "subnet-0aaaaaaaaaaaaaaaa,subnet-0bbbbbbbbbbbbbbbb", "FunctionSecurityGroupId", "sg-0123456789abcdef0", "RouteTableIds", "rtb-0123456789abcdef0"}
	before := deploy(t, readTemplate(t, previousTemplate), given...)
	after := deploy(t, readTemplate(t, limiter), append(given, "CacheName", stack+"-buckets")...)
	value := func(d deployment, v any) any { // a Fn::Sub's string; anything else as it is
		if s, err := d.substitute(v); err == nil {
			return s
		}
		return v
	}
	kept := 0
	for _, d := range []deployment{before, after} {
		d.params["AWS::StackName"], d.params["AWS::StackId"] = stack, id
	}
	now := after.resources(t)
	for name, r := range before.resources(t) {
		props, ok := createOnly[r.Type]
		if !ok {
			continue
		}
		n, ok := now[name]
		if !ok || n.Type != r.Type {
			t.Errorf("%s (%s) is gone after the upgrade: CloudFormation deletes it", name, r.Type)
			continue
		}
		for _, p := range props {
			if was, is := value(before, r.Properties[p]), value(after, n.Properties[p]); !reflect.DeepEqual(was, is) {
				t.Errorf("%s %s: %v, then %v: CloudFormation replaces the %s", name, p, was, is, r.Type)
			}
		}
		kept++
	}
	if kept != 3 {
		t.Fatalf("%d resources holding state or made once in the previous template: want the cache, the table and the endpoint", kept)
	}
}

// The previous release published no version of its functions: a stack it deployed has no
// alias to shift, so upgrading it creates the alias `live` at the new version, which takes
// all of a function's traffic at once (CodeDeploy shifts an alias's updates, not its
// creation) and no alarm rolls it back. Meanwhile the functions are updated one after the
// other (the check function, then the authorizer), and the previous release reads no
// configuration document from the table. docs/deploy.md says so.
func TestTemplateUpgradeFromPreviousReleaseShiftsNoTraffic(t *testing.T) {
	given := []string{"VpcId", "vpc-0123456789abcdef0", "SubnetIds", "subnet-0aaaaaaaaaaaaaaaa,subnet-0bbbbbbbbbbbbbbbb", "FunctionSecurityGroupId", "sg-0123456789abcdef0"}
	before := deploy(t, readTemplate(t, previousTemplate), given...).resources(t)
	after := deploy(t, readTemplate(t, limiter), given...).resources(t)
	for _, name := range []string{"AuthorizerFunction", "CheckFunction"} {
		was, is := before[name], after[name]
		if was.Type != "AWS::Serverless::Function" || is.Type != was.Type {
			t.Fatalf("%s: %q, then %q: want a function in both releases", name, was.Type, is.Type)
		}
		if alias, ok := was.Properties["AutoPublishAlias"]; ok {
			t.Fatalf("%s of the previous release has AutoPublishAlias %v: its upgrade shifts traffic", name, alias)
		}
		if is.Properties["AutoPublishAlias"] == nil || is.Properties["DeploymentPreference"] == nil {
			t.Fatalf("%s has no gradual deployment: this test is about one", name)
		}
	}
	doc := readFile(t, "docs/deploy.md")
	_, gradual, _ := strings.Cut(doc, "\n## Gradual deployments\n")
	gradual, _, _ = strings.Cut(gradual, "\n## ")
	for _, says := range []string{
		"A stack that release 0.2 deployed has no alias",
		"takes all of its traffic at once",
		"`bucketgate config put`",
		"`bucketgate accounts create`",
		"`bucketgate keys roll`",
	} {
		if !strings.Contains(strings.Join(strings.Fields(gradual), " "), says) {
			t.Errorf("docs/deploy.md's Gradual deployments does not say %q", says)
		}
	}
}

// A value of a parameter that the previous release's template takes (its default, an
// allowed value, its bounds) and this one refuses fails the upgrade of a stack deployed
// with it (sam deploy keeps a parameter's previous value unless given another), or
// changes what the stack does when the new default replaces it: CHANGELOG.md says what
// to give instead, in a note starting "Upgrading" that names the parameter.
func TestTemplateUpgradeNamesTheParameterValuesItRefuses(t *testing.T) {
	before := section(readTemplate(t, previousTemplate), "Parameters")
	after := section(readTemplate(t, limiter), "Parameters")
	upgrading := upgradeNotes(t)
	refused := 0
	for name, p := range before {
		was, _ := p.(map[string]any)
		is, ok := after[name].(map[string]any)
		if !ok {
			continue
		}
		allowed, _ := was["AllowedValues"].([]any)
		var values []string
		for _, v := range append([]any{was["Default"], was["MinValue"], was["MaxValue"]}, allowed...) {
			if v != nil {
				values = append(values, fmt.Sprint(v))
			}
		}
		for _, v := range tookBefore[name] {
			if why := refuses(t, was, v); why != "" {
				t.Fatalf("%s %q %s in the previous release: not a value it took", name, v, why)
			}
			values = append(values, v)
		}
		slices.Sort(values)
		for _, v := range slices.Compact(values) {
			why := refuses(t, is, v)
			if why == "" {
				continue
			}
			refused++
			if !names(upgrading, name) {
				t.Errorf("%s %q, which the previous release takes, %s: no upgrade note of CHANGELOG.md names `%s`", name, v, why, name)
			}
		}
	}
	if refused == 0 {
		t.Fatal("no value of the previous release refused: is the parse right?")
	}
}

// tookBefore are values of the previous release's parameters that its patterns take and
// its functions worked with, beyond its defaults, allowed values and bounds.
var tookBefore = map[string][]string{
	"HttpBackendUrl": {"http://backend.internal/api"},
}

// refuses says why the parameter spec refuses the value v, or "" when it takes it.
func refuses(t *testing.T, spec map[string]any, v string) string {
	t.Helper()
	if allowed, ok := spec["AllowedValues"].([]any); ok && !slices.ContainsFunc(allowed, func(a any) bool { return fmt.Sprint(a) == v }) {
		return fmt.Sprintf("is not of the AllowedValues %v", allowed)
	}
	if pattern, ok := spec["AllowedPattern"].(string); ok && !regexp.MustCompile("^(?:"+pattern+")$").MatchString(v) {
		return "does not match the AllowedPattern"
	}
	for bound, below := range map[string]bool{"MinValue": true, "MaxValue": false} {
		b, ok := spec[bound]
		if !ok {
			continue
		}
		n, err := strconv.ParseFloat(v, 64)
		limit, err2 := strconv.ParseFloat(fmt.Sprint(b), 64)
		if err != nil || err2 != nil {
			t.Fatalf("%s %v of a value %q: not numbers", bound, b, v)
		}
		if below && n < limit || !below && n > limit {
			return fmt.Sprintf("is beyond the %s %v", bound, b)
		}
	}
	return ""
}

// upgradeNotes returns the upgrade notes of CHANGELOG.md: each from "Upgrading" to the
// end of its item.
func upgradeNotes(t *testing.T) []string {
	t.Helper()
	var notes []string
	for _, item := range strings.Split(readFile(t, "CHANGELOG.md"), "\n- ") {
		if _, note, ok := strings.Cut(item, "Upgrading"); ok {
			notes = append(notes, note)
		}
	}
	return notes
}

// names reports whether one of notes names the parameter, as `name` or with a value,
// `name=value`.
func names(notes []string, parameter string) bool {
	return slices.ContainsFunc(notes, func(note string) bool {
		return strings.Contains(note, "`"+parameter+"`") || strings.Contains(note, "`"+parameter+"=")
	})
}

// A stack of the previous release, upgraded with the values it was deployed with (a
// parameter this template still has keeps its value, unless this one refuses it: see
// TestTemplateUpgradeNamesTheParameterValuesItRefuses), passes every Rules assertion, or
// an upgrade note of CHANGELOG.md names a parameter the failed assertion reads.
func TestTemplateUpgradeNamesTheRulesItFails(t *testing.T) {
	vpc := []string{"VpcId", "vpc-0123456789abcdef0", "SubnetIds", "subnet-0aaaaaaaaaaaaaaaa,subnet-0bbbbbbbbbbbbbbbb", "FunctionSecurityGroupId", "sg-0123456789abcdef0"}
	cases := []struct {
		name  string
		given []string // the previous release required its VPC's
	}{
		{"a created cache, DynamoDB through the subnets' NAT", vpc},
		{"a created cache, a DynamoDB endpoint added", append(slices.Clone(vpc), "RouteTableIds", "rtb-0123456789abcdef0")},
		{"an existing endpoint without TLS", append(slices.Clone(vpc), "RouteTableIds", "rtb-0123456789abcdef0", "RedisEndpoint", "cache.internal:6379", "RedisTls", "false")},
		{"an existing endpoint with a password, without TLS", append(slices.Clone(vpc), "RouteTableIds", "rtb-0123456789abcdef0", "RedisEndpoint", "cache.internal:6379", "RedisTls", "false",
			"RedisPasswordSecretArn", "arn:aws:secretsmanager:us-east-1:123456789012:secret:redis-AbCdEf")},
	}
	before := section(readTemplate(t, previousTemplate), "Parameters")
	now := readTemplate(t, limiter)
	after := section(now, "Parameters")
	upgrading := upgradeNotes(t)
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			var values []string
			for name, p := range before {
				was, _ := p.(map[string]any)
				is, ok := after[name].(map[string]any)
				if def, set := was["Default"]; ok && set && refuses(t, is, fmt.Sprint(def)) == "" && !slices.Contains(c.given, name) {
					values = append(values, name, fmt.Sprint(def))
				}
			}
			d := deploy(t, now, append(values, c.given...)...)
			rules := section(now, "Rules")
			for a, failed := range d.assertions(t) {
				if !failed {
					continue
				}
				rule, _ := rules[a.rule].(map[string]any)
				list, _ := rule["Assertions"].([]any)
				read := refs(list[a.index], after)
				if !slices.ContainsFunc(read, func(p string) bool { return names(upgrading, p) }) {
					t.Errorf("%s fails (%s): no upgrade note of CHANGELOG.md names one of %v", a, a.description, read)
				}
			}
		})
	}
}

// refs returns the parameters of params that v refers to (Ref), sorted.
func refs(v any, params map[string]any) []string {
	var out []string
	switch x := v.(type) {
	case map[string]any:
		if name, ok := x["Ref"].(string); ok && params[name] != nil {
			out = append(out, name)
		}
		for _, e := range x {
			out = append(out, refs(e, params)...)
		}
	case []any:
		for _, e := range x {
			out = append(out, refs(e, params)...)
		}
	}
	slices.Sort(out)
	return slices.Compact(out)
}

// The cache that the previous release created admitted every connection, and its
// functions connected without authenticating; this release's cache gets a user group
// whose `default` user is turned off, in the cache's update, which comes before the
// functions' (their REDIS_ADDR is the cache's): from then until each function's own
// update, the previous release's functions cannot use the cache (new connections are
// refused NOAUTH, existing ones NOPERM). docs/deploy.md's Gradual deployments says so,
// and that both versions decide on the same buckets with a Redis of yours alone.
func TestTemplateUpgradeFromPreviousReleaseLocksItsFunctionsOut(t *testing.T) {
	given := []string{"VpcId", "vpc-0123456789abcdef0", "SubnetIds", "subnet-0aaaaaaaaaaaaaaaa,subnet-0bbbbbbbbbbbbbbbb", "FunctionSecurityGroupId", "sg-0123456789abcdef0"}
	before := deploy(t, readTemplate(t, previousTemplate), given...).resources(t)
	after := deploy(t, readTemplate(t, limiter), append(given, "RouteTableIds", "rtb-0123456789abcdef0")...).resources(t)
	if _, ok := before["Cache"].Properties["UserGroupId"]; ok || before["Cache"].Type == "" {
		t.Fatalf("the previous release's cache %+v: want one created without a user group", before["Cache"])
	}
	group, _ := after["Cache"].Properties["UserGroupId"].(map[string]any)
	users, _ := after[fmt.Sprint(group["Ref"])].Properties["UserIds"].([]any)
	off := false
	for _, u := range users {
		ref, _ := u.(map[string]any)
		p := after[fmt.Sprint(ref["Ref"])].Properties
		off = off || p["UserName"] == "default" && strings.HasPrefix(fmt.Sprint(p["AccessString"]), "off ")
	}
	if !off {
		t.Fatalf("the cache's user group %v (users %v) does not turn the default user off: this test is about one", group, users)
	}
	doc := readFile(t, "docs/deploy.md")
	_, gradual, _ := strings.Cut(doc, "\n## Gradual deployments\n")
	gradual, _, _ = strings.Cut(gradual, "\n## ")
	gradual = strings.Join(strings.Fields(gradual), " ")
	for _, says := range []string{"With the cache the stack created", "`default` user", "cannot use the cache", "quiet hour"} {
		if !strings.Contains(gradual, says) {
			t.Errorf("docs/deploy.md's Gradual deployments does not say %q", says)
		}
	}
	_, previous, _ := strings.Cut(gradual, "A stack that release 0.2 deployed")
	if safe, _, _ := strings.Cut(previous, "safe both ways"); !strings.Contains(safe, "`RedisEndpoint`") {
		t.Error("docs/deploy.md's Gradual deployments says the previous release's functions decide beside the new ones safely, not only on a Redis of yours (RedisEndpoint)")
	}
}

// sinceRelease says, for each parameter the previous release's template did not have,
// whether its default keeps what a stack of that release did (the reason), or changes
// it (""), which an upgrade note of CHANGELOG.md must then name.
var sinceRelease = map[string]string{
	"RegistryRoute":                 "", // without RouteTableIds, a stack of the previous release is refused
	"CreateDynamoDBEndpoint":        "true: the endpoint the previous release added to RouteTableIds",
	"DynamoDBPrefixListId":          "the created security group's alone, which the previous release never made",
	"XRayEndpoint":                  "the created VPC's alone",
	"CreateExampleApi":              "true: the example APIs the previous release always made",
	"RedisPasswordSecretKmsKeyArn":  "empty: the AWS-managed key, which needs no grant",
	"SystemLogLevel":                "", // WARN drops Lambda's platform lines of every invocation
	"UsageRetentionDays":            "", // an identity's key stays 35 days, where it left when its buckets were full
	"IdempotencyTtlMs":              "a record for a requestId alone, which the previous release refused",
	"UsageOfAddresses":              "", // a source address's key too
	"AuthorizerReservedConcurrency": "0: unreserved",
	"CheckReservedConcurrency":      "0: unreserved",
	"ApiThrottlingRateLimit":        "", // the example APIs answer 429 themselves above 1,000 a second
	"ApiThrottlingBurstLimit":       "",
	"CacheMaxDataStorageGB":         "", // the created cache had no usage limits
	"CacheMaxEcpuPerSecond":         "",
	"CacheEngineVersion":            "", // nor a major version set
	"CacheName":                     "", // the previous release's name is not the default
	"AlarmEmail":                    "empty: no subscription",
	"EventBusName":                  "empty: no events",
	"DeploymentType":                "the previous release published no version: its upgrade shifts no traffic, whatever the type",
	"ApiGatewayLoggingRole":         "", // create sets the Region's API Gateway account setting
}

// Every parameter added since the previous release has a default that keeps what a
// stack of that release did, or an upgrade note of CHANGELOG.md names it: upgraded
// without it (sam deploy gives a new parameter its default), the stack changes.
func TestTemplateUpgradeNamesTheNewParametersThatChangeWhatItDoes(t *testing.T) {
	before := section(readTemplate(t, previousTemplate), "Parameters")
	upgrading := upgradeNotes(t)
	for name := range section(readTemplate(t, limiter), "Parameters") {
		if before[name] != nil {
			continue
		}
		keeps, ok := sinceRelease[name]
		switch {
		case !ok:
			t.Errorf("%s is new since the previous release: say in sinceRelease whether its default keeps what that release did", name)
		case keeps == "" && !names(upgrading, name):
			t.Errorf("%s's default changes what a stack of the previous release did: no upgrade note of CHANGELOG.md names `%s`", name, name)
		}
	}
}

// firesAtOnce are the alarms new since the previous release that a stack of it may set
// off from the new version's first invocations, on a state it was already in, by the
// condition each holds.
var firesAtOnce = map[string]string{
	"RedisEvictionPolicyAlarm": "ExistingRedis", // a Redis of yours evicting keys: volatile-lru is ElastiCache's default
}

// An upgrade note of CHANGELOG.md names each alarm that a stack of the previous release
// may set off at once, before anything goes wrong during the upgrade.
func TestTemplateUpgradeNamesTheAlarmsThatFireAtOnce(t *testing.T) {
	before := section(readTemplate(t, previousTemplate), "Resources")
	after := section(readTemplate(t, limiter), "Resources")
	upgrading := upgradeNotes(t)
	for alarm, condition := range firesAtOnce {
		r, _ := after[alarm].(map[string]any)
		if before[alarm] != nil || r["Type"] != "AWS::CloudWatch::Alarm" || r["Condition"] != condition {
			t.Errorf("%s: want an alarm new since the previous release, on the condition %s: %v", alarm, condition, r)
		}
		if !slices.ContainsFunc(upgrading, func(note string) bool { return strings.Contains(note, "`"+alarm+"`") }) {
			t.Errorf("no upgrade note of CHANGELOG.md says that %s may fire at once", alarm)
		}
	}
}
