package settings

import (
	"fmt"
	"regexp"
	"strings"
)

// Bounds of a DynamoDB table name, in bytes.
const (
	minTableName = 3
	maxTableName = 255
)

// checkNamespace reports why CloudWatch would not take v as a metrics namespace: 1 to
// MaxNamespace bytes of printable ASCII, not only spaces, not under "AWS/" (AWS's own).
// CloudWatch drops the metrics of a log line with a namespace it refuses, silently.
func checkNamespace(v string) error {
	switch {
	case len(v) > MaxNamespace:
		return fmt.Errorf("%s: %d bytes: want at most %d", EnvNamespace, len(v), MaxNamespace)
	case strings.Trim(v, " ") == "":
		return fmt.Errorf("%s=%q: want a character other than a space", EnvNamespace, v)
	case strings.HasPrefix(v, "AWS/"):
		return fmt.Errorf("%s=%q: namespaces under AWS/ are AWS's own", EnvNamespace, v)
	}
	if !printableASCII(v) {
		return fmt.Errorf("%s=%q: want printable ASCII (CloudWatch drops the metrics of any other namespace)", EnvNamespace, v)
	}
	return nil
}

// MaxDimensionValue is the longest value of a CloudWatch metric dimension, in bytes.
const MaxDimensionValue = 1024

// CheckDimensionValue reports why CloudWatch would not take v as the value of a metric
// dimension: 1 to MaxDimensionValue bytes of printable ASCII, not only spaces.
// CloudWatch drops the metrics of a log line with a dimension it refuses, silently.
func CheckDimensionValue(v string) error {
	switch {
	case len(v) > MaxDimensionValue:
		return fmt.Errorf("%d bytes: want at most %d", len(v), MaxDimensionValue)
	case strings.Trim(v, " ") == "" || !printableASCII(v):
		return fmt.Errorf("%q: want printable ASCII, not only spaces (CloudWatch drops the metrics of any other dimension value)", v)
	}
	return nil
}

// printableASCII reports whether v holds printable ASCII alone.
func printableASCII(v string) bool {
	for i := range len(v) {
		if v[i] < ' ' || v[i] > '~' {
			return false
		}
	}
	return true
}

// checkStackName reports why v is not a CloudFormation stack name: a letter, then
// letters, digits and hyphens, MaxStackName bytes at most.
func checkStackName(v string) error {
	ok := len(v) <= MaxStackName && v != "" && strings.Trim(v[:1], letters) == "" && strings.Trim(v, letters+digits+"-") == ""
	if !ok {
		return fmt.Errorf("%s=%q: want a CloudFormation stack name: a letter, then letters, digits and hyphens, %d bytes at most", EnvStackName, v, MaxStackName)
	}
	return nil
}

// checkFunctionName reports why v is not a Lambda function to invoke: a name,
// name:alias or ARN, MaxFunctionName bytes at most of letters, digits, '-', '_', ':' or
// '.'; empty is none.
func checkFunctionName(v string) error {
	if len(v) > MaxFunctionName || strings.Trim(v, letters+digits+"-_:.") != "" {
		return fmt.Errorf("%s=%q: want a Lambda function name, name:alias or ARN: at most %d letters, digits, '-', '_', ':' or '.'", EnvOperatorFunction, v, MaxFunctionName)
	}
	return nil
}

// MaxEventBusName is the longest event bus name, in bytes: EventBridge's limit.
const MaxEventBusName = 256

// eventBusARN matches the ARN of an event bus, with its name's bytes in name.
var eventBusARN = regexp.MustCompile(`^arn:aws(-[a-z]+)*:events:[a-z]{2}(-[a-z]+)+-[0-9]+:[0-9]{12}:event-bus/(?P<name>.*)$`)

// checkEventBus reports why v is neither an EventBridge event bus name (1 to
// MaxEventBusName letters, digits, '.', '-', '_' or '/') nor the ARN of a bus; empty is
// none.
func checkEventBus(v string) error {
	if v == "" {
		return nil
	}
	name := v
	if strings.HasPrefix(v, "arn:") {
		m := eventBusARN.FindStringSubmatch(v)
		if m == nil {
			return fmt.Errorf("%s=%q: not the ARN of an event bus: want arn:<partition>:events:<region>:<account>:event-bus/<name>, or the bus's name", EnvEventBusName, v)
		}
		name = m[eventBusARN.SubexpIndex("name")]
	}
	if name == "" || len(name) > MaxEventBusName || strings.Trim(name, letters+digits+".-_/") != "" {
		return fmt.Errorf("%s=%q: want an event bus name (1 to %d letters, digits, '.', '-', '_' or '/') or its ARN", EnvEventBusName, v, MaxEventBusName)
	}
	return nil
}

// checkTable reports why v, REGISTRY_TABLE, is not a table name (CheckTableName).
func checkTable(v string) error {
	if err := CheckTableName(v); err != nil {
		return fmt.Errorf("%s=%w", EnvRegistryTable, err)
	}
	return nil
}

// CheckTableName reports why v is not a DynamoDB table name: 3 to 255 letters, digits,
// '_', '-' or '.'. The template grants the functions GetItem on the table of that name,
// so an ARN will not do either. The error starts with v, quoted.
func CheckTableName(v string) error {
	if len(v) < minTableName || len(v) > maxTableName || strings.Trim(v, tableNameBytes) != "" {
		return fmt.Errorf("%q: want a table name: %d to %d letters, digits, '_', '-' or '.'", v, minTableName, maxTableName)
	}
	return nil
}

// checkCacheName reports why v is not an ElastiCache cache name as ElastiCache stores
// it, the name an IAM token is signed for (the template's CacheName has the same
// rules): 1 to MaxCacheName lowercase letters, digits and hyphens, a letter first,
// neither two hyphens in a row nor one at the end. A token signed for another spelling
// (an uppercase letter: ElastiCache stores the name lowercased) is refused with
// WRONGPASS at every connection.
func checkCacheName(v string) error {
	valid := func(v string) bool {
		return v != "" && len(v) <= MaxCacheName && strings.Trim(v[:1], lowerLetters) == "" &&
			strings.Trim(v, lowerLetters+digits+"-") == "" && !strings.Contains(v, "--") && !strings.HasSuffix(v, "-")
	}
	switch lower := strings.ToLower(v); {
	case valid(v):
		return nil
	case valid(lower):
		return fmt.Errorf("%s=%q: ElastiCache stores cache names in lowercase, and refuses an IAM token signed for another spelling (WRONGPASS): set %s=%s", EnvCacheName, v, EnvCacheName, lower)
	}
	return fmt.Errorf("%s=%q: want an ElastiCache cache name: 1 to %d lowercase letters, digits and hyphens, a letter first, neither two hyphens in a row nor one at the end", EnvCacheName, v, MaxCacheName)
}

// The bytes of names.
const (
	lowerLetters   = "abcdefghijklmnopqrstuvwxyz"
	letters        = lowerLetters + "ABCDEFGHIJKLMNOPQRSTUVWXYZ"
	digits         = "0123456789"
	tableNameBytes = letters + digits + "_-." // a DynamoDB table name's
)
