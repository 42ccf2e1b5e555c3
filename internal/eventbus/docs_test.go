package eventbus_test

import (
	"bytes"
	"encoding/json"
	"os"
	"reflect"
	"strings"
	"testing"

	"github.com/bucketgate/bucketgate/internal/eventbus"
)

// operationsDoc shows the event a rule's target receives.
const operationsDoc = "../../docs/operations.md"

// The event of docs/operations.md is one bucketgate sends: its source and detail type
// are the package's, and its detail decodes into Detail, with no member Detail lacks,
// and encodes back to the same JSON.
func TestDocEvent(t *testing.T) {
	b, err := os.ReadFile(operationsDoc)
	if err != nil {
		t.Fatal(err)
	}
	_, after, ok := strings.Cut(string(b), "\n```json\n")
	example, _, closed := strings.Cut(after, "\n```\n")
	if !ok || !closed {
		t.Fatalf("%s shows no event in a json block", operationsDoc)
	}
	var event struct {
		Source     string          `json:"source"`
		DetailType string          `json:"detail-type"`
		Detail     json.RawMessage `json:"detail"`
	}
	if err := json.Unmarshal([]byte(example), &event); err != nil {
		t.Fatalf("the event of %s: %v", operationsDoc, err)
	}
	if event.Source != eventbus.Source || event.DetailType != eventbus.TypeQuotaThreshold && event.DetailType != eventbus.TypeRateLimited {
		t.Errorf("the event of %s: source %q, detail-type %q; want %q, and %q or %q", operationsDoc,
			event.Source, event.DetailType, eventbus.Source, eventbus.TypeQuotaThreshold, eventbus.TypeRateLimited)
	}
	dec := json.NewDecoder(bytes.NewReader(event.Detail))
	dec.DisallowUnknownFields()
	var detail eventbus.Detail
	if err := dec.Decode(&detail); err != nil {
		t.Fatalf("the detail of %s does not decode into eventbus.Detail: %v", operationsDoc, err)
	}
	again, err := json.Marshal(detail)
	if err != nil {
		t.Fatal(err)
	}
	var got, want any
	if err := json.Unmarshal(again, &got); err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal(event.Detail, &want); err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("the detail of %s through eventbus.Detail comes out as\n%s\nwant\n%s", operationsDoc, again, event.Detail)
	}
}

// Every member of an event's detail is in the event of docs/operations.md and is
// described in its Events section (named in backticks outside the example): a
// consumer's rule picks by them, and plan, window and stack were shown, never said.
func TestDocEventDescribesEveryMember(t *testing.T) {
	b, err := os.ReadFile(operationsDoc)
	if err != nil {
		t.Fatal(err)
	}
	_, section, _ := strings.Cut(string(b), "\n## Events\n")
	section, _, _ = strings.Cut(section, "\n## ")
	before, after, ok := strings.Cut(section, "\n```json\n")
	example, rest, closed := strings.Cut(after, "\n```\n")
	if !ok || !closed {
		t.Fatalf("%s's Events show no event in a json block", operationsDoc)
	}
	prose := before + rest
	detail := reflect.TypeFor[eventbus.Detail]()
	for i := range detail.NumField() {
		name, _, _ := strings.Cut(detail.Field(i).Tag.Get("json"), ",")
		if !strings.Contains(example, `"`+name+`":`) {
			t.Errorf("the event of %s has no %q", operationsDoc, name)
		}
		if !strings.Contains(prose, "`"+name+"`") {
			t.Errorf("%s's Events do not say what the detail's `%s` is", operationsDoc, name)
		}
	}
}
