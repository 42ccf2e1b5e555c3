package main

import (
	"os"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/bucketgate/bucketgate/internal/settings"
	"github.com/bucketgate/bucketgate/internal/testkit/redistest"
	"github.com/bucketgate/bucketgate/internal/testkit/samples"
)

// sessionCommand is one command of a documented session and what it printed (stderr, then
// stdout).
type sessionCommand struct {
	args   []string
	output string
}

// sessionDoc is the document that shows the session.
const sessionDoc = "../../docs/keys.md"

// The prefixes of the session's lines in docs/keys.md.
const (
	readmeCommand = "$ go run ./cmd/bucketgate "
	readmeExport  = "$ export " + envCheckFunction + "="
)

// readmeSession returns the function name that the bucketgate buckets session of
// docs/keys.md
// exports, and its commands.
func readmeSession(t *testing.T) (function string, commands []sessionCommand) {
	t.Helper()
	readme, err := os.ReadFile(sessionDoc)
	if err != nil {
		t.Fatal(err)
	}
	block := regexp.MustCompile("(?s)```\n(\\" + readmeExport + `.*?)` + "```").FindSubmatch(readme)
	if block == nil {
		t.Fatalf("%s has no session block starting %q", sessionDoc, readmeExport)
	}
	for line := range strings.Lines(string(block[1])) {
		switch {
		case strings.HasPrefix(line, readmeExport):
			function, _, _ = strings.Cut(strings.TrimPrefix(line, readmeExport), "#") // the shell's comment
			function = strings.TrimSpace(function)
		case strings.HasPrefix(line, readmeCommand):
			commands = append(commands, sessionCommand{args: strings.Fields(strings.TrimPrefix(line, readmeCommand))})
		case len(commands) == 0:
			t.Fatalf("%s session: %q before any command", sessionDoc, line)
		default:
			commands[len(commands)-1].output += line
		}
	}
	return function, commands
}

// The bucketgate buckets session of docs/keys.md, replayed through the check function behind
// Lambda Invoke with the sample configuration, on miniredis with its clock held still:
// every command prints what the doc shows.
func TestDocsBucketsSession(t *testing.T) {
	function, commands := readmeSession(t)
	if len(commands) < 5 {
		t.Fatalf("%s session: %d commands, want the session", sessionDoc, len(commands))
	}
	mr, _ := redistest.Mini(t)
	mr.SetTime(time.Date(2026, 11, 22, 17, 36, 50, 0, time.UTC))
	c := &cli{t: t, env: map[string]string{settings.EnvConfigFile: samples.Path("authorizer-config.yaml"), envCheckFunction: function}}
	d := deploy(t, c, mr.Addr(), function)
	localAWS(t)
	for range 10 {
		d.authz.decideFrom(t, "", "203.0.113.10")
	}
	for range 5 {
		d.authz.decide(t, "bg-sample-pro-key")
	}
	for _, cmd := range commands {
		_, stdout, stderr := d.run(cmd.args...)
		if got := stderr + stdout; got != cmd.output {
			t.Errorf("bucketgate %s printed:\n%s\n%s shows:\n%s", strings.Join(cmd.args, " "), got, sessionDoc, cmd.output)
		}
	}
}

// The usages docs/keys.md shows (a block of "$ bucketgate help" lines, each followed by
// what it prints) are what bucketgate prints.
func TestDocsHelp(t *testing.T) {
	doc, err := os.ReadFile(sessionDoc)
	if err != nil {
		t.Fatal(err)
	}
	const prompt = "$ bucketgate "
	block := regexp.MustCompile("(?s)```\n(\\" + prompt + `help\n.*?)` + "```").FindSubmatch(doc)
	if block == nil {
		t.Fatalf("%s has no block starting %q", sessionDoc, prompt+"help")
	}
	var shown []sessionCommand
	for line := range strings.Lines(string(block[1])) {
		if args, ok := strings.CutPrefix(line, prompt); ok {
			shown = append(shown, sessionCommand{args: strings.Fields(args)})
			continue
		}
		shown[len(shown)-1].output += line
	}
	for _, cmd := range shown {
		if got := help(t, cmd.args...); got != cmd.output {
			t.Errorf("bucketgate %s printed:\n%s\n%s shows:\n%s", strings.Join(cmd.args, " "), got, sessionDoc, cmd.output)
		}
	}
}
