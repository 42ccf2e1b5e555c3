package check

import (
	"bufio"
	"bytes"
	"encoding/json"
	"os"
	"reflect"
	"strings"
	"testing"

	"github.com/bucketgate/bucketgate/checkapi"
	"github.com/bucketgate/bucketgate/internal/bucket"
	"github.com/bucketgate/bucketgate/internal/guard"
	"github.com/bucketgate/bucketgate/internal/settings"
)

// docPath is the check function's contract; every example in it is replayed here,
// but for the whole Go program and its output, which docs/docs_test.go builds and runs.
const docPath = "../../docs/check.md"

// goExamplePath holds the compiled Go example that the section quotes.
const goExamplePath = "../../checkclient/example_test.go"

// docBlock is one fenced code block of the section.
type docBlock struct {
	info string // the info string after the fence: "json request", "go", ...
	text string
	line int
}

func readDocBlocks(t *testing.T) []docBlock {
	t.Helper()
	b, err := os.ReadFile(docPath)
	if err != nil {
		t.Fatal(err)
	}
	var blocks []docBlock
	var cur *docBlock
	sc := bufio.NewScanner(bytes.NewReader(b))
	for n := 1; sc.Scan(); n++ {
		line := sc.Text()
		switch {
		case cur == nil && strings.HasPrefix(line, "```"):
			cur = &docBlock{info: strings.TrimSpace(strings.TrimPrefix(line, "```")), line: n}
		case cur != nil && line == "```":
			blocks = append(blocks, *cur)
			cur = nil
		case cur != nil:
			cur.text += line + "\n"
		}
	}
	if cur != nil {
		t.Fatalf("%s:%d: unterminated code block", docPath, cur.line)
	}
	return blocks
}

// stackRequest is the info string of a request the doc sends to a deployed stack's check
// function, which serves services only (OPERATOR_FUNCTION set to the stack's operator
// function, bucketgate-operator for a stack named bucketgate).
const stackRequest = "json request to a stack's check function"

// docSecret signs the reservation ids of the examples, so that they come out the same
// on every run (a function without a secret uses one Redis keeps, made at random).
const docSecret = "the secret of the doc examples."

// TestDocExamples replays the section's examples in order on one fresh Redis at one
// instant: each "json request" block against the "json response" or "json error"
// block after it (a stackRequest's on a service-facing handler); the failure-policy
// blocks against the first request on a Redis that is gone; the Go blocks against the
// compiled example. Any other block must be shell,
// or the whole program (and its output) that docs/docs_test.go runs.
func TestDocExamples(t *testing.T) {
	blocks := readDocBlocks(t)
	_, client := startMiniredis(t)
	f := newFixture(t, client, nil, guard.Options{})
	stack := newFixture(t, client, nil, guard.Options{})
	stack.h.OperatorFunction = "bucketgate-operator"
	for _, h := range []*Handler{f.h, stack.h} { // usage counted, as the functions count it by default
		h.Guard, h.UsageDays = guard.New(bucket.New(client, bucket.Usage(settings.DefaultUsageDays), bucket.Secret([]byte(docSecret))), guard.Options{Timeout: testTimeout}), settings.DefaultUsageDays
	}
	example, err := os.ReadFile(goExamplePath)
	if err != nil {
		t.Fatal(err)
	}
	var firstRequest []byte
	requests := 0
	for i := 0; i < len(blocks); i++ {
		b := blocks[i]
		switch b.info {
		case "json request", stackRequest:
			if i+1 == len(blocks) {
				t.Fatalf("%s:%d: a request with no answer after it", docPath, b.line)
			}
			if firstRequest == nil {
				firstRequest = []byte(b.text)
			}
			requests++
			i++
			if b.info == stackRequest {
				checkDocAnswer(t, stack, b, blocks[i])
				continue
			}
			checkDocAnswer(t, f, b, blocks[i])
		case "json unavailable", "json degraded":
			if firstRequest == nil {
				t.Fatalf("%s:%d: a failure example before any request", docPath, b.line)
			}
			checkDocFailure(t, b, firstRequest)
		case "go":
			if !strings.Contains(string(example), b.text) {
				t.Errorf("%s:%d: the Go example is not in %s:\n%s", docPath, b.line, goExamplePath, b.text)
			}
		case "sh", "go program", "text": // docs/docs_test.go runs the program and its recipe
		default:
			t.Errorf("%s:%d: code block %q: no test replays it", docPath, b.line, b.info)
		}
	}
	if requests < 5 {
		t.Fatalf("%d request examples in %s: the parse lost some", requests, docPath)
	}
}

// checkDocAnswer runs request and compares the outcome with answer.
func checkDocAnswer(t *testing.T, f *fixture, request, answer docBlock) {
	t.Helper()
	out, err := f.invoke([]byte(request.text))
	switch answer.info {
	case "json response":
		if err != nil {
			t.Fatalf("%s:%d: %v", docPath, request.line, err)
		}
		assertJSONEqual(t, out, answer.text)
		roundTrip(t, request, requestType(request.text))
		roundTrip(t, answer, responseType(answer.text))
	case "json error":
		ive := functionError(t, err)
		got, _ := json.Marshal(ive)
		assertJSONEqual(t, got, answer.text)
		roundTrip(t, answer, new(struct {
			ErrorMessage string `json:"errorMessage"`
			ErrorType    string `json:"errorType"`
		}))
	default:
		t.Fatalf("%s:%d: the request is answered by %q, want json response or json error", docPath, answer.line, answer.info)
	}
}

// requestType returns a new value of the checkapi type that a request example is: a
// Batch when it has checks, else a Request.
func requestType(text string) any {
	if strings.Contains(text, `"checks"`) {
		return new(checkapi.Batch)
	}
	return new(checkapi.Request)
}

// responseType returns a new value of the checkapi type that an answer example is: a
// BatchResult when it has results, a Usage when it has days, else a Response.
func responseType(text string) any {
	switch {
	case strings.Contains(text, `"results"`):
		return new(checkapi.BatchResult)
	case strings.Contains(text, `"days"`):
		return new(checkapi.Usage)
	}
	return new(checkapi.Response)
}

// roundTrip fails t unless b's JSON decodes into v, the payload type a Go caller uses
// (checkapi's), with no member the type lacks, and encodes back to the same JSON: an
// example whose member is misspelt, or that the types no longer carry, fails.
func roundTrip(t *testing.T, b docBlock, v any) {
	t.Helper()
	dec := json.NewDecoder(strings.NewReader(b.text))
	dec.DisallowUnknownFields()
	if err := dec.Decode(v); err != nil {
		t.Fatalf("%s:%d: the example does not decode into %T: %v", docPath, b.line, v, err)
	}
	again, err := json.Marshal(v)
	if err != nil {
		t.Fatalf("%s:%d: %T: %v", docPath, b.line, v, err)
	}
	var got, want any
	if err := json.Unmarshal(again, &got); err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal([]byte(b.text), &want); err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("%s:%d: the example through %T comes out as\n%s\nwant\n%s", docPath, b.line, v, again, b.text)
	}
}

// checkDocFailure runs request on a Redis that is gone, under the policy b shows.
func checkDocFailure(t *testing.T, b docBlock, request []byte) {
	t.Helper()
	mr, client := startMiniredis(t)
	f := newFixture(t, client, nil, guard.Options{FailOpen: b.info == "json degraded"})
	mr.Close()
	out, err := f.invoke(request)
	if err != nil {
		t.Fatalf("%s:%d: %v", docPath, b.line, err)
	}
	assertJSONEqual(t, out, b.text)
	roundTrip(t, b, new(checkapi.Response))
}

// TestTablesListEveryField: the Request section's table names every member of a check
// (checkapi.Request's), and the Response section's every member a response may carry
// (checkapi.Response's), each in its first column, with the row of "rules" naming every
// member of a rule's state (checkapi.RuleStatus's).
func TestTablesListEveryField(t *testing.T) {
	b, err := os.ReadFile(docPath)
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		section string
		members reflect.Type
	}{{"Request", reflect.TypeFor[checkapi.Request]()}, {"Response", reflect.TypeFor[checkapi.Response]()}} {
		listed := tableRows(string(b), tc.section)
		for f := range tc.members.Fields() {
			name, _, _ := strings.Cut(f.Tag.Get("json"), ",")
			if _, ok := listed[name]; !ok {
				t.Errorf("%s: the %s table has no row for %q (%v.%s)", docPath, tc.section, name, tc.members, f.Name)
			}
		}
		if tc.section != "Response" {
			continue
		}
		for f := range reflect.TypeFor[checkapi.RuleStatus]().Fields() {
			name, _, _ := strings.Cut(f.Tag.Get("json"), ",")
			if !strings.Contains(listed["rules"], `"`+name+`"`) {
				t.Errorf("%s: the Response table's row of rules does not name %q (checkapi.RuleStatus.%s)", docPath, name, f.Name)
			}
		}
	}
}

// tableRows returns the rows of the tables of doc's section (its "## " heading), by each
// name quoted in their first column.
func tableRows(doc, section string) map[string]string {
	_, text, _ := strings.Cut(doc, "\n## "+section+"\n")
	text, _, _ = strings.Cut(text, "\n## ")
	rows := map[string]string{}
	for line := range strings.SplitSeq(text, "\n") {
		cells := strings.Split(line, "|")
		if len(cells) < 3 {
			continue
		}
		for i, part := range strings.Split(cells[1], "`") {
			if i%2 == 1 {
				rows[part] = line
			}
		}
	}
	return rows
}
