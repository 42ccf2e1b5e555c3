package version

import "testing"

// The stamp wins; without it, the module's version; without either, Devel.
func TestOf(t *testing.T) {
	tests := []struct {
		name, stamp, module, want string
	}{
		{"stamped", "v0.3.0-2-gabc1234-dirty", "v0.0.0-20261125190000-abc1234abcde+dirty", "v0.3.0-2-gabc1234-dirty"},
		{"go install at a tag", "", "v0.3.0", "v0.3.0"},
		{"a checkout's pseudo-version", "", "v0.0.0-20261125190000-abc1234abcde+dirty", "v0.0.0-20261125190000-abc1234abcde+dirty"},
		{"devel", "", "(devel)", Devel},
		{"no build info", "", "", Devel},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			if got := of(tc.stamp, tc.module); got != tc.want {
				t.Fatalf("of(%q, %q) = %q, want %q", tc.stamp, tc.module, got, tc.want)
			}
		})
	}
}
