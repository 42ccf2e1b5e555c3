package middleware_test

import (
	"io"
	"os"
	"strings"
	"testing"

	"github.com/bucketgate/bucketgate/middleware"
)

// withoutAWSRegion clears every source of an AWS region and endpoint the SDK reads: the
// variables, and the shared configuration files.
func withoutAWSRegion(t *testing.T) {
	t.Helper()
	none := os.DevNull
	for k, v := range map[string]string{"AWS_REGION": "", "AWS_DEFAULT_REGION": "", "AWS_PROFILE": "",
		"AWS_CONFIG_FILE": none, "AWS_SHARED_CREDENTIALS_FILE": none,
		"AWS_EC2_METADATA_DISABLED": "true", "AWS_ENDPOINT_URL": "", "AWS_ENDPOINT_URL_EVENTBRIDGE": "", "AWS_ENDPOINT_URL_DYNAMODB": ""} {
		t.Setenv(k, v)
	}
}

// A bus or a table without an AWS region could never be reached: New refuses it,
// naming the variable that asked for one and AWS_REGION, rather than a Limiter whose
// every event (or every read of the table) fails.
func TestNewWithoutAWSRegion(t *testing.T) {
	withoutAWSRegion(t)
	for _, tc := range []struct {
		name string
		vars map[string]string
		want string
	}{
		{"event bus", map[string]string{"EVENT_BUS_NAME": "bucketgate-events"}, "EVENT_BUS_NAME=bucketgate-events: "},
		{"registry table", map[string]string{"REGISTRY_TABLE": "keys"}, "REGISTRY_TABLE=keys: "},
	} {
		t.Run(tc.name, func(t *testing.T) {
			tc.vars["REDIS_ADDR"] = "127.0.0.1:1"
			l, err := middleware.New(middleware.Options{Getenv: env(tc.vars), Metrics: io.Discard, LogOutput: io.Discard})
			if err == nil || !strings.Contains(err.Error(), tc.want) || !strings.Contains(err.Error(), "set AWS_REGION") {
				if l != nil {
					l.Close()
				}
				t.Fatalf("New = %v; want an error naming %q and AWS_REGION", err, tc.want)
			}
		})
	}
}
