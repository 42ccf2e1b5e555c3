package check

import (
	"strings"
	"testing"

	"github.com/bucketgate/bucketgate/checkapi"
	"github.com/bucketgate/bucketgate/internal/config"
	"github.com/bucketgate/bucketgate/internal/guard"
	"github.com/bucketgate/bucketgate/internal/testkit/samples"
)

func BenchmarkParse(b *testing.B) {
	full := `{"checks":[` + strings.TrimSuffix(strings.Repeat(`{"key":"tenant-42","rules":[{"name":"burst","capacity":10,"refillPerSecond":1},{"name":"daily","capacity":1000,"refillPerSecond":0.0116}],"cost":1},`, checkapi.MaxBatch), ",") + `]}`
	cases := []struct{ name, payload string }{
		{"single", `{"key":"tenant-42","plan":"pro","cost":1}`},
		{"batch of MaxBatch", full},
	}
	plans, sources := config.Default(), testSources(b)
	for _, c := range cases {
		b.Run(c.name, func(b *testing.B) {
			b.ReportAllocs()
			payload := []byte(c.payload)
			for b.Loop() {
				if _, _, err := parse(payload, plans, sources); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

// BenchmarkInvoke is one whole invocation, decode to encode, on miniredis: the
// handler's own cost plus a loopback round trip to an in-process Redis.
func BenchmarkInvoke(b *testing.B) {
	_, client := startMiniredis(b)
	f := newFixture(b, client, nil, guard.Options{})
	payload := samples.Read(b, "check-single.json")
	b.ReportAllocs()
	for b.Loop() {
		if _, err := f.invoke(payload); err != nil {
			b.Fatal(err)
		}
	}
}
