package tracing

import (
	"strings"
	"testing"
)

// FuzzParseHeader holds parseHeader to its contract on any header: no panic, and a
// trace only for a sampled header whose Root and Parent it carries, well-formed.
func FuzzParseHeader(f *testing.F) {
	for _, seed := range []string{
		"", "Sampled=1", "Root=;Parent=;Sampled=1", ";;;", "=", "Root==;Sampled=1=",
		"Root=1-5759e988-bd862e3fe1be46a994272793;Parent=53995c3f42cd8ad8;Sampled=1",
		"Root=1-5759e988-bd862e3fe1be46a994272793;Parent=53995c3f42cd8ad8;Sampled=0",
		" Root=1-5759e988-bd862e3fe1be46a994272793 ; Parent=53995c3f42cd8ad8 ; Sampled=1 ; Lineage=a:1",
		"Root=1-5759e988-bd862e3fe1be46a994272793;Root=1-00000000-000000000000000000000000;Parent=53995c3f42cd8ad8;Sampled=1",
		"Root=1-5759E988-BD862E3FE1BE46A994272793;Parent=53995C3F42CD8AD8;Sampled=1",
		"Root=1-5759e988-bd862e3fe1be46a994272793;Parent=53995c3f42cd8ad8;Sampled=1\x00",
	} {
		f.Add(seed)
	}
	f.Fuzz(func(t *testing.T, h string) {
		tr, ok := parseHeader(h)
		if !ok {
			if tr != (trace{}) {
				t.Fatalf("no trace, but %+v", tr)
			}
			return
		}
		if !strings.Contains(h, "Sampled=1") {
			t.Fatalf("trace %+v from an unsampled header %q", tr, h)
		}
		if !strings.Contains(h, "Root="+tr.id) || !strings.Contains(h, "Parent="+tr.parent) {
			t.Fatalf("trace %+v is not in header %q", tr, h)
		}
		if !validTraceID(tr.id) || !isHex(tr.parent, segmentIDDigits) {
			t.Fatalf("malformed trace %+v from %q", tr, h)
		}
	})
}
