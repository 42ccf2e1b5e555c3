package docs_test

import (
	"bufio"
	"bytes"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"
)

// transcript returns the lines that follow the line "$ "+command in a code block of
// doc, up to the next prompt or the block's end.
func transcript(t *testing.T, doc, command string) []string {
	t.Helper()
	_, after, ok := strings.Cut(readFile(t, doc), "\n$ "+command+"\n")
	if !ok {
		t.Fatalf("%s shows no %q", doc, "$ "+command)
	}
	var lines []string
	for _, line := range strings.Split(after, "\n") {
		if line == "```" || strings.HasPrefix(line, "$ ") {
			return lines
		}
		lines = append(lines, line)
	}
	t.Fatalf("%s: the block of %q does not end", doc, command)
	return nil
}

// makeDryRun returns what make prints for args without running the recipes (but for
// the recursive makes, which print theirs), as on a fresh shell: no MAKEFLAGS of a make
// that runs the tests.
func makeDryRun(t *testing.T, args ...string) []string {
	t.Helper()
	cmd := exec.Command("make", append([]string{"-n"}, args...)...)
	cmd.Dir = root
	cmd.Env = cleanEnv()
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("make -n %s: %v\n%s", strings.Join(args, " "), err, out)
	}
	return strings.Split(strings.TrimSuffix(string(out), "\n"), "\n")
}

// The make build transcript of docs/deploy.md is what make build prints, on any
// machine: paths relative to the repository, no directory lines of the recursive makes.
// It showed a machine's own paths.
func TestMakeBuildTranscript(t *testing.T) {
	want := transcript(t, "docs/deploy.md", "make build VERSION=v0.3.0")
	got := makeDryRun(t, "build", "VERSION=v0.3.0")
	if strings.Join(got, "\n") != strings.Join(want, "\n") {
		t.Errorf("make build prints:\n%s\ndocs/deploy.md shows:\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
	abs, err := filepath.Abs(root)
	if err != nil {
		t.Fatal(err)
	}
	for _, line := range got {
		if strings.Contains(line, abs) {
			t.Errorf("make build prints this machine's path %s: %s", abs, line)
		}
	}
}

// The make lint transcript of docs/deploy.md is what make lint runs.
func TestMakeLintTranscript(t *testing.T) {
	want := transcript(t, "docs/deploy.md", "make lint")
	if got := makeDryRun(t, "lint"); strings.Join(got, "\n") != strings.Join(want, "\n") {
		t.Errorf("make lint runs:\n%s\ndocs/deploy.md shows:\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
}

// loopback matches a loopback address with its port, which differ from run to run.
var loopback = regexp.MustCompile(`127\.0\.0\.1:\d+`)

// gateway is a bucketgate-local serve process on a free port, as make run starts it.
type gateway struct {
	url    string
	banner []string
}

// slowMachineTimeout is the decision deadline of the commands the transcripts run: Redis
// has 2 s to answer, not the default 50 ms. None of the transcripts is about a timeout,
// and a machine running several test runs at once has taken longer than the default for
// a first call (its connection and script), which answered 503 or "unavailable" where
// a transcript shows a decision.
const slowMachineTimeout = "REDIS_TIMEOUT_MS=2000"

// startGateway runs bucketgate-local serve with env on a free port until t ends, and
// returns it once it has printed its banner. Redis has slowMachineTimeout to answer
// (env may set REDIS_TIMEOUT_MS again).
func startGateway(t *testing.T, env ...string) *gateway {
	t.Helper()
	cmd := exec.Command(command(t, "bucketgate-local"), "serve", "-addr", "127.0.0.1:0")
	cmd.Dir = root // template.yaml
	cmd.Env = cleanEnv(append([]string{slowMachineTimeout}, env...)...)
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		_ = cmd.Process.Kill()
		_ = cmd.Wait()
	})
	lines := make(chan string)
	go func() {
		sc := bufio.NewScanner(stdout)
		for sc.Scan() {
			lines <- sc.Text()
		}
		close(lines)
		_, _ = io.Copy(io.Discard, stdout)
	}()
	g := &gateway{}
	timeout := time.After(30 * time.Second)
	for {
		select {
		case line, ok := <-lines:
			if !ok {
				t.Fatalf("bucketgate-local serve ended:\n%s\n%s", strings.Join(g.banner, "\n"), stderr.String())
			}
			g.banner = append(g.banner, line)
			if url, ok := strings.CutPrefix(line, "bucketgate local API Gateway on "); ok {
				g.url = url
			}
			if strings.HasSuffix(line, "Ctrl-C stops.") {
				go func() { // keep reading the access log, so that the server never blocks on it
					for range lines {
					}
				}()
				return g
			}
		case <-timeout:
			t.Fatalf("no banner from bucketgate-local serve in 30 s:\n%s\n%s", strings.Join(g.banner, "\n"), stderr.String())
		}
	}
}

// The README's make run transcript is what make run prints: make's command line, then
// the banner, but for the ports, which are the machine's.
func TestMakeRunTranscript(t *testing.T) {
	want := transcript(t, "README.md", "make run")
	if len(want) < 2 || want[len(want)-1] != "" && !strings.HasSuffix(want[len(want)-1], "Ctrl-C stops.") {
		t.Fatalf("README's make run transcript: %q", want)
	}
	if got := makeDryRun(t, "run"); len(got) != 1 || got[0] != want[0] {
		t.Errorf("make run runs %q, the README shows %q", got, want[0])
	}
	g := startGateway(t)
	got := loopback.ReplaceAllString(strings.Join(g.banner, "\n"), "127.0.0.1:PORT")
	shown := loopback.ReplaceAllString(strings.TrimRight(strings.Join(want[1:], "\n"), "\n"), "127.0.0.1:PORT")
	if got != shown {
		t.Errorf("make run prints:\n%s\nthe README shows:\n%s", got, shown)
	}
}

// The check function's Go program (docs/check.md) builds, and its local recipe works:
// against make run's check function, with the variables the recipe exports, the program
// prints what the doc shows, and so does the CLI's command of the recipe.
func TestCheckProgramLocally(t *testing.T) {
	doc := readFile(t, "docs/check.md")
	program := fenced(t, doc, "go program")
	output := fenced(t, doc, "text")
	_, locally, ok := strings.Cut(doc, "\n## Locally\n")
	if !ok {
		t.Fatal("docs/check.md has no section Locally")
	}
	var exports []string
	var commands [][]string
	for _, line := range strings.Split(fencedAfter(t, locally, "export "), "\n") {
		switch {
		case strings.HasPrefix(line, "export "):
			exports = strings.Fields(strings.TrimPrefix(line, "export "))
		case strings.TrimSpace(line) != "":
			commands = append(commands, strings.Fields(strings.SplitN(line, "#", 2)[0]))
		}
	}
	if len(exports) < 4 || len(commands) < 2 {
		t.Fatalf("the recipe: exports %q, commands %q", exports, commands)
	}

	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "main.go"), []byte(program), 0o600); err != nil {
		t.Fatal(err)
	}
	bin := filepath.Join(dir, "program")
	build := exec.Command("go", "build", "-o", bin, filepath.Join(dir, "main.go"))
	build.Dir = root // in this module: its go.mod's versions
	if out, err := build.CombinedOutput(); err != nil {
		t.Fatalf("the program of docs/check.md does not build: %v\n%s", err, out)
	}

	g := startGateway(t)
	env := make([]string, len(exports))
	for i, e := range exports {
		env[i] = strings.ReplaceAll(e, "http://127.0.0.1:8080", g.url)
	}
	for _, c := range commands {
		var run *exec.Cmd
		switch {
		case len(c) == 3 && c[0] == "go" && c[1] == "run" && c[2] == ".":
			run = exec.Command(bin)
		case len(c) > 3 && c[0] == "go" && c[1] == "run" && c[2] == "./cmd/bucketgate":
			run = exec.Command(command(t, "bucketgate"), c[3:]...)
		default:
			t.Fatalf("the recipe runs %q: no test runs it", c)
		}
		run.Env = cleanEnv(env...)
		out, err := run.Output()
		if err != nil {
			t.Fatalf("%s: %v\n%s", strings.Join(c, " "), err, out)
		}
		if c[2] == "." && string(out) != output {
			t.Errorf("the program prints %q, docs/check.md shows %q", out, output)
		}
		if c[2] != "." && !strings.Contains(string(out), "tenant:tenant-42") {
			t.Errorf("%s prints %q", strings.Join(c, " "), out)
		}
	}
}

// fenced returns the first code block of text whose info string is info.
func fenced(t *testing.T, text, info string) string {
	t.Helper()
	return between(t, text, "\n```"+info+"\n", "\n```\n") + "\n"
}

// between returns what text holds between the first open and the first close after
// it, or fails t naming them.
func between(t *testing.T, text, open, close string) string {
	t.Helper()
	_, inner, ok := strings.Cut(text, open)
	if ok {
		inner, _, ok = strings.Cut(inner, close)
	}
	if !ok {
		t.Fatalf("no %q ... %q", open, close)
	}
	return inner
}

// fencedAfter returns the code block of text that holds the first line starting with
// marker.
func fencedAfter(t *testing.T, text, marker string) string {
	t.Helper()
	i := strings.Index(text, "\n"+marker)
	start := strings.LastIndex(text[:max(i, 0)], "\n```")
	if i < 0 || start < 0 {
		t.Fatalf("no block with a line %q", marker)
	}
	block := text[start+1:]
	block = block[strings.Index(block, "\n")+1:]
	block, _, _ = strings.Cut(block, "\n```")
	return block
}

// The make invoke transcripts of CONTRIBUTING.md are what the commands print on stdout
// (the functions' logs and metrics go to stderr), each run as shown, its pipe included,
// on a fresh embedded Redis, which has slowMachineTimeout to answer: with the default,
// a loaded machine's runs answered "unavailable" (a check's "reason", a peek's remaining
// 0, the authorizer's UnavailableError).
func TestMakeInvokeTranscripts(t *testing.T) {
	shown := regexp.MustCompile(`(?m)^\$ (make invoke .*)$`).FindAllStringSubmatch(section(t, "CONTRIBUTING.md", "Sample events: make invoke"), -1)
	if len(shown) < 4 {
		t.Fatalf("CONTRIBUTING.md shows %d make invoke commands: is the pattern right?", len(shown))
	}
	for _, s := range shown {
		want := strings.Join(transcript(t, "CONTRIBUTING.md", s[1]), "\n")
		cmd := exec.Command("bash", "-o", "pipefail", "-c", s[1])
		cmd.Dir = root
		cmd.Env = cleanEnv(slowMachineTimeout)
		out, err := cmd.Output()
		if err != nil {
			t.Errorf("%s: %v\n%s", s[1], err, out)
			continue
		}
		if got := strings.TrimSuffix(string(out), "\n"); got != want {
			t.Errorf("%s prints:\n%s\nCONTRIBUTING.md shows:\n%s", s[1], got, want)
		}
	}
}
