package template_test

import (
	"maps"
	"reflect"
	"slices"
	"testing"
)

// nothingOut is the egress rule of each security group the stack makes in place of the
// default allow-all one: it lets nothing out.
var nothingOut = []any{map[string]any{"IpProtocol": "-1", "CidrIp": "127.0.0.1/32", "Description": "nothing (replaces the default allow-all rule)"}}

// anyAddressEgress are the egress rules that may name an address range (0.0.0.0/0 on
// one port), each for a destination the template cannot name by a security group or a
// prefix list.
var anyAddressEgress = map[string]string{
	"FunctionEgressToRedis":          "RedisEndpoint, a host name or address of yours",
	"FunctionEgressToDynamoDB":       "DynamoDB without DynamoDBPrefixListId",
	"FunctionEgressToEvents":         "EventBridge from a VPC of yours (its endpoint or NAT gateway)",
	"FunctionEgressToSecretsManager": "Secrets Manager from a VPC of yours (its endpoint or NAT gateway)",
}

// No address reaches into the stack's network, and nothing leaves it but by a way made
// for it: each security group the stack makes lets nothing out by itself and admits
// other security groups alone, on TCP ports; each egress rule of its own is TCP on one
// port range, to a security group or a prefix list, or else one of anyAddressEgress.
func TestTemplateNetworkPerimeter(t *testing.T) {
	resources := section(readTemplate(t, limiter), "Resources")
	groups, egress := 0, 0
	for _, id := range slices.Sorted(maps.Keys(resources)) {
		r, _ := resources[id].(map[string]any)
		p, _ := r["Properties"].(map[string]any)
		switch r["Type"] {
		case "AWS::EC2::SecurityGroup":
			groups++
			if !reflect.DeepEqual(p["SecurityGroupEgress"], nothingOut) {
				t.Errorf("%s: SecurityGroupEgress %v, want %v alone", id, p["SecurityGroupEgress"], nothingOut)
			}
			ingress, _ := p["SecurityGroupIngress"].([]any)
			for _, rule := range ingress {
				rule, _ := rule.(map[string]any)
				_, group := rule["SourceSecurityGroupId"]
				_, cidr := rule["CidrIp"]
				_, cidr6 := rule["CidrIpv6"]
				if !group || cidr || cidr6 || rule["IpProtocol"] != "tcp" {
					t.Errorf("%s: ingress %v: want TCP ports from a security group, and no address", id, rule)
				}
			}
		case "AWS::EC2::SecurityGroupIngress":
			t.Errorf("%s: an ingress rule of its own; the groups' own rules admit their sources", id)
		case "AWS::EC2::SecurityGroupEgress":
			egress++
			if p["IpProtocol"] != "tcp" || p["FromPort"] == nil || p["ToPort"] == nil {
				t.Errorf("%s: %v: want TCP on a port range", id, p)
			}
			if _, ok := p["CidrIpv6"]; ok {
				t.Errorf("%s: CidrIpv6: the functions reach nothing over IPv6", id)
			}
			_, cidr := p["CidrIp"]
			_, group := p["DestinationSecurityGroupId"]
			_, prefixList := p["DestinationPrefixListId"]
			if _, ok := anyAddressEgress[id]; cidr && !ok {
				t.Errorf("%s: egress to addresses %v: want a security group or a prefix list", id, p["CidrIp"])
			}
			if !cidr && !group && !prefixList {
				t.Errorf("%s: egress to no destination", id)
			}
		}
	}
	if groups < 4 || egress < len(anyAddressEgress) {
		t.Fatalf("%d security groups and %d egress rules: is the parse right?", groups, egress)
	}
}
