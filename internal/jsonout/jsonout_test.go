package jsonout

import (
	"encoding/json"
	"math"
	"testing"
)

// FuzzString: String writes what encoding/json writes, byte for byte.
func FuzzString(f *testing.F) {
	for _, s := range []string{"", "plain", `"quoted" \ back`, "<a href='x'>&</a>", "tab\there\nline\r\x00\x1f\x7f",
		"\u2028\u2029", "é ü 世界 🙂", "\xff\xfe invalid", "arn:aws:execute-api:us-east-1:123456789012:api/prod/GET/scores"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		want, err := json.Marshal(s)
		if err != nil {
			t.Fatal(err)
		}
		if got := String(nil, s); string(got) != string(want) {
			t.Fatalf("String(%q) = %s, want %s", s, got, want)
		}
	})
}

// FuzzFloat: Float writes what encoding/json writes for a finite float64.
func FuzzFloat(f *testing.F) {
	for _, v := range []float64{0, 1, -1, 0.653493, 1e-7, 1.5e-7, 1e21, 123456789.125, 1e20, -2.5e-9, math.MaxFloat64, math.SmallestNonzeroFloat64} {
		f.Add(v)
	}
	f.Fuzz(func(t *testing.T, v float64) {
		if math.IsNaN(v) || math.IsInf(v, 0) {
			if got := Float(nil, v); string(got) != "0" {
				t.Fatalf("Float(%v) = %s, want 0", v, got)
			}
			return
		}
		want, err := json.Marshal(v)
		if err != nil {
			t.Fatal(err)
		}
		if got := Float(nil, v); string(got) != string(want) {
			t.Fatalf("Float(%v) = %s, want %s", v, got, want)
		}
	})
}

func TestIntBool(t *testing.T) {
	if got := string(Bool(Int(nil, -42), true)); got != "-42true" {
		t.Fatalf("got %s", got)
	}
}
