package madekey_test

import (
	"strings"
	"testing"

	"github.com/bucketgate/bucketgate/internal/madekey"
)

// TestIsMadeKey: the shape of the keys bucketgate makes, and near misses.
func TestIsMadeKey(t *testing.T) {
	tests := []struct {
		name string
		s    string
		want bool
	}{
		{"a made key", "bg_" + strings.Repeat("A", 42) + "_", true},
		{"a character short", "bg_" + strings.Repeat("A", 42), false},
		{"a character more", "bg_" + strings.Repeat("A", 44), false},
		{"not base64url", "bg_" + strings.Repeat("A", 42) + "+", false},
		{"no prefix", strings.Repeat("A", 46), false},
		{"a tenant's name", "bg_tenant-42", false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := madekey.Is(tt.s); got != tt.want {
				t.Errorf("Is: %v, want %v", got, tt.want)
			}
		})
	}
}
