package main

import (
	"fmt"
	"net/http"
	"os"
	"os/exec"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"
)

// accountSessionDoc is the document whose accounts session TestRegistryAccountSession
// replays, and accountSessionStart the first command of that session's block.
const (
	accountSessionDoc   = "../../docs/keys.md"
	accountSessionStart = "$ go run ./cmd/bucketgate accounts create "
)

// The session of docs/keys.md with an account, two keys and rolls, replayed command by
// command with the real CLI and the real local gateway against dynalite (Redis's clock
// held still: no refill): every command prints what the doc shows, but for the keys'
// digests (each run's own, matched to the doc's in the order they first appear) and the
// times of expiry.
func TestRegistryAccountSession(t *testing.T) {
	steps := sessionSteps(t)
	env := tableEnv(t)
	cli := buildCLI(t)
	runBucketgate(t, cli, env, "keys", "init")
	g := startGateway(t, env)
	vars := map[string]string{}
	digests := digestMap{}
	for _, st := range steps {
		got := st.run(t, cli, env, g, vars)
		if want := normalize(st.output); normalize(digests.match(got, st.output)) != want {
			t.Fatalf("$ %s printed:\n%s\n%s shows:\n%s", st.line, got, accountSessionDoc, st.output)
		}
	}
	for _, key := range vars {
		if strings.Contains(g.stdout.String()+g.stderr.String(), key) {
			t.Fatal("the gateway printed a raw key")
		}
	}
}

// sessionStep is one command of the session and what the doc shows it printed.
type sessionStep struct {
	line, output string
}

// sessionSteps returns the commands of the session block of accountSessionDoc.
func sessionSteps(t *testing.T) []sessionStep {
	t.Helper()
	doc, err := os.ReadFile(accountSessionDoc)
	if err != nil {
		t.Fatal(err)
	}
	_, block, ok := strings.Cut(string(doc), "\n"+accountSessionStart)
	if !ok {
		t.Fatalf("%s has no session starting %q", accountSessionDoc, accountSessionStart)
	}
	block, _, _ = strings.Cut(accountSessionStart+block, "\n```\n")
	var steps []sessionStep
	for _, line := range strings.Split(block, "\n") {
		if cmd, ok := strings.CutPrefix(line, "$ "); ok {
			steps = append(steps, sessionStep{line: cmd})
			continue
		}
		steps[len(steps)-1].output += line + "\n"
	}
	if len(steps) < 10 {
		t.Fatalf("%s: %d commands in the accounts session", accountSessionDoc, len(steps))
	}
	return steps
}

// The shapes of the session's command lines.
var (
	assignCLI = regexp.MustCompile(`^([A-Z]+)=\$\(go run \./cmd/bucketgate (.*)\)$`)
	plainCLI  = regexp.MustCompile(`^go run \./cmd/bucketgate (.*)$`)
	curlKey   = regexp.MustCompile(`^(sleep 1; )?curl -si -H "X-API-Key: \$([A-Z]+)" localhost:8080(/\S*) \| grep -E '\^\(HTTP\|X-RateLimit-\(Limit\|Remaining\)\)'$`)
)

// run runs the step as the shell would, with the session's variables vars (set by an
// assignment), and returns what it printed: stderr, then stdout.
func (st sessionStep) run(t *testing.T, cli string, env map[string]string, g *gateway, vars map[string]string) string {
	t.Helper()
	if m := curlKey.FindStringSubmatch(st.line); m != nil {
		if m[1] != "" {
			time.Sleep(300 * time.Millisecond) // REGISTRY_CACHE_MS
		}
		req, err := http.NewRequest(http.MethodGet, g.url+m[3], nil)
		if err != nil {
			t.Fatal(err)
		}
		req.Header.Set("X-API-Key", vars[m[2]])
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		return fmt.Sprintf("%s %s\nX-RateLimit-Limit: %s\nX-RateLimit-Remaining: %s\n", resp.Proto, resp.Status,
			resp.Header.Get("X-RateLimit-Limit"), resp.Header.Get("X-RateLimit-Remaining"))
	}
	assign, args := "", ""
	if m := assignCLI.FindStringSubmatch(st.line); m != nil {
		assign, args = m[1], m[2]
	} else if m := plainCLI.FindStringSubmatch(st.line); m != nil {
		args = m[1]
	} else {
		t.Fatalf("the session runs %q: no step of this test runs it", st.line)
	}
	cmd := exec.Command(cli, shellWords(t, args, vars)...)
	cmd.Env = os.Environ()
	for k, v := range env {
		cmd.Env = append(cmd.Env, k+"="+v)
	}
	var stdout, stderr strings.Builder
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Run(); err != nil {
		t.Fatalf("$ %s: %v\n%s", st.line, err, &stderr)
	}
	if assign != "" {
		vars[assign] = strings.TrimSpace(stdout.String())
		return stderr.String()
	}
	return stderr.String() + stdout.String()
}

// shellWords splits a command line's arguments as the shell does for the session's
// lines: words apart by spaces, double quotes keeping one together, $NAME expanded.
func shellWords(t *testing.T, line string, vars map[string]string) []string {
	t.Helper()
	var words []string
	for _, m := range regexp.MustCompile(`"([^"]*)"|(\S+)`).FindAllStringSubmatch(line, -1) {
		w := m[1] + m[2]
		for name, v := range vars {
			w = strings.ReplaceAll(w, "$"+name, v)
		}
		if strings.Contains(w, "$") {
			t.Fatalf("%q: a variable the session did not set", w)
		}
		words = append(words, w)
	}
	return words
}

// digestPattern matches a key's digest.
var digestPattern = regexp.MustCompile(`[0-9a-f]{32}`)

// digestMap maps the digests of a run to the doc's, in the order they first appear.
type digestMap map[string]string

// match returns got with each digest replaced by the doc's, a new one matched to the
// digest at the same place among want's.
func (m digestMap) match(got, want string) string {
	shown := digestPattern.FindAllString(want, -1)
	for i, d := range digestPattern.FindAllString(got, -1) {
		if _, ok := m[d]; !ok && i < len(shown) {
			m[d] = shown[i]
		}
	}
	return digestPattern.ReplaceAllStringFunc(got, func(d string) string { return m[d] })
}

// rfc3339 matches a time of expiry.
var rfc3339 = regexp.MustCompile(`\d{4}-\d\d-\d\dT\d\d:\d\d:\d\dZ`)

// normalize returns out with its times of expiry replaced, no spaces at the ends of
// lines (a document keeps none), and its lines key (of an account's keys, in the order
// of their digests) sorted.
func normalize(out string) string {
	lines := strings.Split(rfc3339.ReplaceAllString(out, "TIME"), "\n")
	var keys []string
	for i := 0; i < len(lines); i++ {
		lines[i] = strings.TrimRight(lines[i], " ")
		if strings.HasPrefix(lines[i], "key        ") {
			keys = append(keys, lines[i])
			lines = append(lines[:i], lines[i+1:]...)
			i--
		}
	}
	slices.Sort(keys)
	return strings.Join(append(lines, keys...), "\n")
}
