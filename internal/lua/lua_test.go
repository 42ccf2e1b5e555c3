package lua

import (
	"crypto/sha1"
	"encoding/hex"
	"strings"
	"testing"
)

// sourceBudget is the most bytes BucketSource may take: what a node that lost the script
// gets with each EVAL of a batch's or a call's. The file's whole-line comments are not
// sent; a comment that grows it past this is one left at a line's end, or code.
const sourceBudget = 45_000

// TestBucketSource: the text sent is bucket.lua's, line for line, with every whole-line
// comment emptied and nothing else changed, within sourceBudget, named by BucketSHA1.
func TestBucketSource(t *testing.T) {
	file, sent := strings.Split(bucketFile, "\n"), strings.Split(BucketSource, "\n")
	if len(sent) != len(file) {
		t.Fatalf("%d lines sent, the file has %d: Redis's errors would name other lines", len(sent), len(file))
	}
	emptied := 0
	for i, line := range file {
		comment := strings.HasPrefix(strings.TrimSpace(line), "--")
		switch {
		case comment && sent[i] != "":
			t.Errorf("line %d, a comment, sent as %q", i+1, sent[i])
		case comment:
			emptied++
		case sent[i] != line:
			t.Errorf("line %d sent as %q, the file's is %q", i+1, sent[i], line)
		}
	}
	if emptied == 0 {
		t.Error("no comment line emptied")
	}
	if len(BucketSource) > sourceBudget {
		t.Errorf("BucketSource is %d bytes, more than %d: what a node that lost the script gets (the file is %d)", len(BucketSource), sourceBudget, len(bucketFile))
	}
	if sum := sha1.Sum([]byte(BucketSource)); BucketSHA1 != hex.EncodeToString(sum[:]) {
		t.Errorf("BucketSHA1 %s is not the SHA-1 of the text sent", BucketSHA1)
	}
	t.Logf("%d of %d lines emptied: %d bytes sent of the file's %d", emptied, len(file), len(BucketSource), len(bucketFile))
}

// TestStripComments: whole-line comments are emptied, their lines kept; a trailing
// comment and a "--" inside a string stay; a text whose lines could be inside a long
// string or comment, or a string that goes on to the next line, is refused.
func TestStripComments(t *testing.T) {
	for _, tt := range []struct {
		name, src, want, err string
	}{
		{"comments emptied", "-- head\nlocal a = 1\n  \t-- indented\nreturn a\n", "\nlocal a = 1\n\nreturn a\n", ""},
		{"trailing comment kept", "local a = 1 -- one\n", "local a = 1 -- one\n", ""},
		{"dashes in a string kept", "local s = '--' .. \"-- x\"\n", "local s = '--' .. \"-- x\"\n", ""},
		{"a line of a minus kept", "local a = 1\n- a\n", "local a = 1\n- a\n", ""},
		{"no newline at the end", "return 1\n-- end", "return 1\n", ""},
		{"long string", "local s = [[\n-- text\n]]\n", "", "long string or comment"},
		{"long comment", "--[[\nreturn 1\n]]\n", "", "long string or comment"},
		{"leveled long comment", "--[==[\nreturn 1\n]==]\n", "", "long string or comment"},
		{"string continued", "local s = 'a\\\n-- b'\n", "", "line 1 ends with a backslash"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			got, err := stripComments(tt.src)
			switch {
			case tt.err != "" && (err == nil || !strings.Contains(err.Error(), tt.err)):
				t.Fatalf("error %v, want one with %q", err, tt.err)
			case tt.err == "" && err != nil:
				t.Fatalf("error %v", err)
			case got != tt.want:
				t.Fatalf("got %q, want %q", got, tt.want)
			}
		})
	}
}
