package check

import (
	"testing"

	"github.com/bucketgate/bucketgate/checkapi"
	"github.com/bucketgate/bucketgate/internal/guard"
	"github.com/bucketgate/bucketgate/internal/testkit/samples"
)

func TestEvents(t *testing.T) {
	tests := []struct {
		event   string
		want    string // the response, or the errorMessage when wantErr
		wantErr bool
	}{
		{"check-single.json", `{"allowed":true,"reason":"ok","limit":100,"remaining":99,"retryAfterMs":0,"resetAfterMs":20,"rule":"burst","plan":"pro"}`, false},
		{"check-peek.json", `{"allowed":true,"reason":"ok","limit":100,"remaining":100,"retryAfterMs":0,"resetAfterMs":0,"rule":"burst","plan":"pro","rules":[{"name":"burst","limit":100,"remaining":100,"resetAfterMs":0}]}`, false},
		{"check-batch.json", `{"results":[
			{"allowed":true,"reason":"ok","limit":100,"remaining":99,"retryAfterMs":0,"resetAfterMs":20,"rule":"burst","plan":"pro"},
			{"allowed":true,"reason":"ok","limit":60,"remaining":56,"retryAfterMs":0,"resetAfterMs":345600,"rule":"minute","plan":""},
			{"allowed":true,"reason":"ok","limit":10,"remaining":0,"retryAfterMs":0,"resetAfterMs":10000,"rule":"burst","plan":"free"},
			{"allowed":false,"reason":"limited","limit":10,"remaining":0,"retryAfterMs":1000,"resetAfterMs":10000,"rule":"burst","plan":"free"}]}`, false},
		{"check-operations.json", `{"results":[
			{"allowed":true,"reason":"ok","limit":100,"remaining":95,"retryAfterMs":0,"resetAfterMs":100,"rule":"burst","plan":"pro"},
			{"allowed":true,"reason":"ok","limit":100,"remaining":100,"retryAfterMs":0,"resetAfterMs":0,"rule":"burst","plan":"pro"},
			{"allowed":true,"reason":"ok","limit":100,"remaining":70,"retryAfterMs":0,"resetAfterMs":600,"rule":"burst","plan":"pro"},
			{"allowed":true,"reason":"ok","limit":100,"remaining":100,"retryAfterMs":0,"resetAfterMs":0,"rule":"burst","plan":"pro"}]}`, false},
		{"check-invalid.json", "checks[1].cost: 11 exceeds capacity 10 of rule burst: it could never be allowed", true},
	}
	for _, tc := range tests {
		t.Run(tc.event, func(t *testing.T) {
			mr, client := startMiniredis(t)
			f := newFixture(t, client, nil, guard.Options{})
			out, err := f.invoke(samples.Read(t, tc.event))
			if tc.wantErr {
				ive := functionError(t, err)
				if ive.Type != checkapi.ErrorTypeInvalidRequest || ive.Message != tc.want {
					t.Fatalf("error %q of type %q, want %q of type %q", ive.Message, ive.Type, tc.want, checkapi.ErrorTypeInvalidRequest)
				}
				if keys := mr.Keys(); len(keys) != 0 {
					t.Fatalf("an invalid batch wrote %v", keys)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			assertJSONEqual(t, out, tc.want)
		})
	}
}
