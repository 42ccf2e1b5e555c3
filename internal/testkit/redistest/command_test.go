package redistest_test

import (
	"context"
	"testing"

	"github.com/bucketgate/bucketgate/internal/testkit/redistest"
)

// Command answers as redis-cli prints: a hash's fields and values a line each, in the
// order the server keeps them. Over RESP3 a hash came back as a map, which it rendered
// as nothing, so that a test reading Redis's state through it saw no field at all.
func TestCommandAnswersAsRedisCLI(t *testing.T) {
	srv := redistest.Start(t)
	ctx := context.Background()
	if _, err := srv.Command(ctx, "HSET", "h", "burst:tokens", "9.5", "burst:ts", "1795367777827094"); err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name string
		args []string
		want string
	}{
		{"a hash", []string{"HGETALL", "h"}, "burst:tokens\n9.5\nburst:ts\n1795367777827094"},
		{"a field", []string{"HGET", "h", "burst:tokens"}, "9.5"},
		{"a number", []string{"HLEN", "h"}, "2"},
		{"a list of keys", []string{"KEYS", "*"}, "h"},
		{"a float", []string{"HINCRBYFLOAT", "h", "burst:tokens", "0.5"}, "10"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got, err := srv.Command(ctx, tc.args...)
			if err != nil {
				t.Fatal(err)
			}
			if got != tc.want {
				t.Errorf("%v: %q, want %q", tc.args, got, tc.want)
			}
		})
	}
}
