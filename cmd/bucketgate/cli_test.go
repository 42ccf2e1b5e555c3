package main

import (
	"bytes"
	"context"
	"strings"
	"testing"

	"github.com/bucketgate/bucketgate/internal/version"
)

// version and --version print the version of this build, and nothing else but, for a
// build that carries none, a note on stderr saying so; neither takes an argument.
func TestVersion(t *testing.T) {
	want := "bucketgate " + version.String() + "\n"
	var note string // what stderr holds after the version
	if version.String() == version.Devel {
		note = devNote + "\n"
	}
	tests := []struct {
		name   string
		args   []string
		code   int
		stdout string
	}{
		{"version", []string{"version"}, exitOK, want},
		{"--version", []string{"--version"}, exitOK, want},
		{"-version", []string{"-version"}, exitOK, want},
		{"version with an argument", []string{"version", "now"}, exitUsage, ""},
		{"--version with a group", []string{"--version", "keys", "list"}, exitUsage, ""},
		{"--version twice", []string{"--version", "--version"}, exitUsage, ""},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			var stdout, stderr bytes.Buffer
			code := run(context.Background(), tc.args, func(string) string { return "" }, strings.NewReader(""), &stdout, &stderr)
			if code != tc.code || stdout.String() != tc.stdout || code == exitOK && stderr.String() != note || code != exitOK && stderr.Len() == 0 {
				t.Fatalf("bucketgate %v: exit %d, stdout %q, stderr %q; want exit %d, stdout %q", tc.args, code, &stdout, &stderr, tc.code, tc.stdout)
			}
		})
	}
}
