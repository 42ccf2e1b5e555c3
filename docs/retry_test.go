package docs_test

import (
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/bucketgate/bucketgate/internal/testkit"
)

// The retry examples of docs/api-gateway.md (section "Retries: jitter and a retry
// budget"), run as written against a server that turns a path away a given number of
// times: each retries a 429 and a 503, and gives up after two retries.
func TestRetryExamples(t *testing.T) {
	readme := readFile(t, "docs/api-gateway.md")
	goCode := codeBlock(t, readme, "In Go:", "go")
	jsCode := codeBlock(t, readme, "In JavaScript", "js")

	// Go: the doc's block in a program of its own, with the imports it needs.
	dir := t.TempDir()
	write(t, filepath.Join(dir, "go.mod"), "module retryexample\n\ngo 1.26\n")
	write(t, filepath.Join(dir, "main.go"), `package main

import (
	"fmt"
	"math/rand/v2"
	"net/http"
	"os"
	"strconv"
	"sync/atomic"
	"time"
)

`+goCode+`
func main() {
	req, err := http.NewRequest("GET", os.Args[1], nil)
	if err != nil {
		panic(err)
	}
	resp, err := do(http.DefaultClient, req)
	if err != nil {
		panic(err)
	}
	fmt.Println(resp.StatusCode)
}
`)
	goProgram := filepath.Join(dir, "retry")
	build := exec.Command("go", "build", "-o", goProgram, ".")
	build.Dir = dir
	if out, err := build.CombinedOutput(); err != nil {
		t.Fatalf("the Go example does not build: %v\n%s", err, out)
	}
	// JavaScript: the doc's block with a call, run by node.
	script := filepath.Join(dir, "retry.mjs")
	write(t, script, jsCode+"\nconsole.log((await fetchWithRetry(process.argv[2])).status);\n")
	node := testkit.LookPath(t, "node")

	for _, lang := range []struct {
		name string
		cmd  func(url string) *exec.Cmd
	}{
		{"go", func(url string) *exec.Cmd { return exec.Command(goProgram, url) }},
		{"javascript", func(url string) *exec.Cmd { return exec.Command(node, script, url) }},
	} {
		for _, tc := range []struct {
			name     string
			refusals int // answers of 429 or 503 before a 200
			status   int // the refusals' status
			want     string
			sent     int
		}{
			{"a 429 retried", 1, http.StatusTooManyRequests, "200", 2},
			{"a 503 retried", 1, http.StatusServiceUnavailable, "200", 2},
			{"two retries", 2, http.StatusTooManyRequests, "200", 3},
			{"no third retry", 3, http.StatusTooManyRequests, "429", 3},
		} {
			t.Run(lang.name+"/"+tc.name, func(t *testing.T) {
				t.Parallel() // each waits up to a second of jitter per retry
				srv := newRefuser(tc.refusals, tc.status)
				defer srv.Close()
				out, err := lang.cmd(srv.URL).CombinedOutput()
				if err != nil {
					t.Fatalf("%v\n%s", err, out)
				}
				if got := strings.TrimSpace(string(out)); got != tc.want {
					t.Errorf("final status %q, want %s", got, tc.want)
				}
				if sent := srv.sent(); sent != tc.sent {
					t.Errorf("%d requests sent, want %d", sent, tc.sent)
				}
			})
		}
	}
}

// refuser is a test server that answers its first refusals requests with status and
// Retry-After: 0 (so that only the jitter is waited), and 200 after.
type refuser struct {
	*httptest.Server
	mu    sync.Mutex
	count int
}

func newRefuser(refusals, status int) *refuser {
	r := &refuser{}
	r.Server = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		r.mu.Lock()
		r.count++
		n := r.count
		r.mu.Unlock()
		if n <= refusals {
			w.Header().Set("Retry-After", "0")
			w.WriteHeader(status)
		}
	}))
	return r
}

func (r *refuser) sent() int {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.count
}

// codeBlock returns the first fenced block of lang in text after the line that starts
// with marker.
func codeBlock(t *testing.T, text, marker, lang string) string {
	t.Helper()
	_, after, ok := strings.Cut(text, "\n"+marker)
	if !ok {
		t.Fatalf("no %q in the doc", marker)
	}
	_, block, ok := strings.Cut(after, "```"+lang+"\n")
	if ok {
		block, _, ok = strings.Cut(block, "```\n")
	}
	if !ok {
		t.Fatalf("no %s block after %q", lang, marker)
	}
	return block
}

func write(t *testing.T, path, content string) {
	t.Helper()
	if err := os.WriteFile(path, []byte(content), 0o600); err != nil {
		t.Fatal(err)
	}
}
