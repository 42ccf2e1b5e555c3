package config_test

import (
	"errors"
	"strings"
	"testing"

	"github.com/bucketgate/bucketgate/internal/config"
)

// An error about a document that holds an API key bucketgate made where a name or a
// value goes (a key pasted into it by mistake) never quotes the key: the functions log
// the error of a document that does not load, and the CLI prints it. An unknown field
// named by one, and a route's path holding one, quoted it whole; so did an unknown field
// or a plan's name holding one glued to other characters, or cut short.
func TestErrorsNeverQuoteAMadeKey(t *testing.T) {
	key := "bg_" + strings.Repeat("Q", 42) + "w"
	free := "defaultPlan: free\nplans: {free: [{name: b, capacity: 5, refillPerSecond: 1}]}\n"
	for _, tc := range []struct{ name, doc, want string }{
		{"an unknown field", free + key + ": 1\n", "bg_... (line 3, column 1): unknown field"},
		{"an unknown field of a rule", "defaultPlan: free\nplans: {free: [{name: b, capacity: 5, refillPerSecond: 1, " + key + ": 1}]}\n", "plans (line 2, column 59): unknown field"},
		{"a route's path", free + "routes: [{path: v1/" + key + "}]\n", "routes[0]"},
		// Glued to other characters, or cut short, it was quoted whole.
		{"an unknown field glued to one", free + "x" + key + ": 1\n", "xbg_... (line 3, column 1): unknown field"},
		{"an unknown field holding one cut short", free + key[:30] + ": 1\n", "bg_... (line 3, column 1): unknown field"},
		{"a plan's values, its name glued to one", "defaultPlan: free\nplans: {free: [{name: b, capacity: 5, refillPerSecond: 1}], p_" + key + ": [{name: b, capacity: 0, refillPerSecond: 1}]}\n", "plans.p_bg_...[0]"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := config.Parse([]byte(tc.doc))
			if !errors.Is(err, config.ErrConfig) || !strings.Contains(err.Error(), tc.want) || strings.Contains(err.Error(), key[3:]) {
				t.Fatalf("Parse() = %v, want ErrConfig mentioning %q, never the key", err, tc.want)
			}
		})
	}
}
