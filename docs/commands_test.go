package docs_test

import (
	"fmt"
	"os"
	"os/exec"
	"regexp"
	"strings"
	"testing"
)

// shown is a command line a document shows.
type shown struct {
	where string // doc:line
	text  string
	code  bool // from a code block (a shell line), not an inline span
}

// inlineSpan matches inline code.
var inlineSpan = regexp.MustCompile("`([^`]+)`")

// shownCommands returns the command lines of doc: every line of a sh block, every line
// of another block that starts with a "$ " prompt, and every inline code span that starts
// with make, bucketgate or go run ./cmd/.
func shownCommands(doc, text string) []shown {
	var out []shown
	fence := "" // the info string of the open block; "" outside one
	inBlock := false
	for i, line := range strings.Split(text, "\n") {
		where := fmt.Sprintf("%s:%d", doc, i+1)
		trimmed := strings.TrimSpace(line)
		if strings.HasPrefix(trimmed, "```") {
			inBlock = !inBlock
			fence = strings.TrimPrefix(trimmed, "```")
			continue
		}
		switch {
		case inBlock && (fence == "sh" || fence == "bash"):
			out = append(out, shown{where, strings.TrimPrefix(trimmed, "$ "), true})
		case inBlock && strings.HasPrefix(line, "$ "):
			out = append(out, shown{where, line[2:], true})
		case !inBlock:
			for _, m := range inlineSpan.FindAllStringSubmatch(line, -1) {
				if s := m[1]; strings.HasPrefix(s, "make ") || strings.HasPrefix(s, "bucketgate") || strings.HasPrefix(s, "go run ./cmd/") {
					out = append(out, shown{where, s, false})
				}
			}
		}
	}
	return out
}

// redirection matches a shell redirection and its target.
var redirection = regexp.MustCompile(`\s\d*[<>]+&?\s*\S+`)

// words splits a shell line into its simple commands, each a list of words: quotes
// hold words together, a # word starts a comment, and pipes, lists, subshells and
// $( ) separate commands (pipes only in a code line: an inline span's | is an
// alternative, as in show|refund|reset).
func words(line string, code bool) [][]string {
	line = redirection.ReplaceAllString(" "+line, " ")
	var (
		cmds  [][]string
		cur   []string
		word  strings.Builder
		in    bool // a word is open
		quote rune
	)
	endWord := func() {
		if in {
			cur = append(cur, word.String())
			word.Reset()
			in = false
		}
	}
	endCmd := func() {
		endWord()
		if len(cur) > 0 {
			cmds = append(cmds, cur)
			cur = nil
		}
	}
	rs := []rune(line)
	for i := 0; i < len(rs); i++ {
		r := rs[i]
		switch {
		case quote != 0:
			if r == quote {
				quote = 0
			} else {
				word.WriteRune(r)
			}
		case r == '\'' || r == '"':
			quote, in = r, true
		case r == ' ' || r == '\t':
			endWord()
		case r == '#' && !in:
			endCmd()
			return cmds
		case r == ';' || r == '&' || r == '(' || r == ')' || r == '|' && code:
			endCmd()
		case r == '$' && i+1 < len(rs) && rs[i+1] == '(':
			endCmd()
			i++
		default:
			word.WriteRune(r)
			in = true
		}
	}
	endCmd()
	return cmds
}

// assignment matches a shell variable assignment word.
var assignment = regexp.MustCompile(`^[A-Za-z_][A-Za-z0-9_]*=`)

// commandRef is a use of one of the repository's commands: its name and its words.
type commandRef struct {
	name string // make, bucketgate or bucketgate-local
	args []string
}

// refOf returns the repository's command that the simple command cmd runs, if any.
func refOf(cmd []string) (commandRef, bool) {
	for len(cmd) > 0 && assignment.MatchString(cmd[0]) {
		cmd = cmd[1:]
	}
	switch {
	case len(cmd) == 0:
	case cmd[0] == "make":
		return commandRef{"make", cmd[1:]}, true
	case cmd[0] == "bucketgate" || cmd[0] == "bucketgate-local":
		return commandRef{cmd[0], cmd[1:]}, true
	case len(cmd) >= 3 && cmd[0] == "go" && cmd[1] == "run" && (cmd[2] == "./cmd/bucketgate" || cmd[2] == "./cmd/bucketgate-local"):
		return commandRef{strings.TrimPrefix(cmd[2], "./cmd/"), cmd[3:]}, true
	}
	return commandRef{}, false
}

// makeTarget matches a rule's targets in a Makefile.
var makeTarget = regexp.MustCompile(`(?m)^([A-Za-z0-9][A-Za-z0-9_. -]*):([^=]|$)`)

// makeTargets returns the targets of the Makefile.
func makeTargets(t *testing.T) map[string]bool {
	t.Helper()
	targets := map[string]bool{}
	for _, m := range makeTarget.FindAllStringSubmatch(readFile(t, "Makefile"), -1) {
		for _, name := range strings.Fields(m[1]) {
			targets[name] = true
		}
	}
	if !targets["run"] || !targets["test"] {
		t.Fatalf("Makefile targets %v: is the pattern right?", targets)
	}
	return targets
}

// placeholder reports whether a word stands for something (<file>, URL, NAME).
func placeholder(w string) bool {
	return strings.ContainsAny(w, "<>") || w == strings.ToUpper(w) || w == "..."
}

// cliWord matches a subcommand or command name.
var cliWord = regexp.MustCompile(`^[a-z][a-z-]*$`)

// problems returns what is wrong with ref: a make target the Makefile lacks, an event
// file that does not exist, or a command or flag the command itself does not know. It
// asks the built commands with -h last, so that nothing they would do runs.
func problems(t *testing.T, ref commandRef, targets map[string]bool) []string {
	t.Helper()
	var out []string
	if ref.name == "make" {
		for _, w := range ref.args {
			name, value, isVar := strings.Cut(w, "=")
			switch {
			case strings.HasPrefix(w, "-") || placeholder(w):
			case isVar && name == "EVENT" && !placeholder(value):
				if _, err := os.Stat(inRoot(value)); err != nil {
					out = append(out, "no event file "+value)
				}
			case !isVar && !targets[w]:
				out = append(out, "no make target "+w)
			}
		}
		return out
	}
	// bucketgate's flags before the group (--stack NAME, --version): given to every
	// variant in front, where they were shown.
	args := ref.args
	var global []string
	for ref.name == "bucketgate" && len(args) > 0 && strings.HasPrefix(args[0], "-") && len(args[0]) > 1 {
		name, _, hasValue := strings.Cut(strings.TrimLeft(args[0], "-"), "=")
		args = args[1:]
		switch {
		case name == "version" || name == "help" || name == "h":
			global = append(global, "--"+name)
		default: // a flag with a value: --stack NAME or --stack=NAME
			global = append(global, "--"+name+"=x")
			if !hasValue && len(args) > 0 {
				args = args[1:]
			}
		}
	}
	var names, flags []string
	for _, w := range args {
		w = strings.TrimSuffix(strings.TrimSuffix(strings.TrimPrefix(w, "["), "..."), "]")
		switch {
		case strings.HasPrefix(w, "-") && len(w) > 1:
			name, _, _ := strings.Cut(strings.TrimLeft(w, "-"), "=")
			flags = append(flags, name)
		case len(flags) == 0 && len(names) < maxNames(ref.name) && cliWord.MatchString(strings.Split(w, "|")[0]):
			names = append(names, w)
		}
	}
	// bucketgate GROUP COMMAND, bucketgate-local SUBCOMMAND: each alternative of a|b.
	variants := [][]string{nil}
	for _, n := range names {
		var next [][]string
		for _, v := range variants {
			for _, alt := range strings.Split(n, "|") {
				next = append(next, append(append([]string(nil), v...), alt))
			}
		}
		variants = next
	}
	for _, v := range variants {
		args := append(append([]string(nil), global...), v...)
		if len(v) == maxNames(ref.name) || len(v) > 0 && v[0] == "help" {
			for _, f := range flags {
				args = append(args, "--"+f+"=x")
			}
			args = append(args, "-h")
		}
		out = append(out, ask(t, command(t, ref.name), args)...)
	}
	return out
}

// maxNames is how many names come before a command's flags: bucketgate GROUP COMMAND,
// bucketgate-local SUBCOMMAND.
func maxNames(name string) int {
	if name == "bucketgate" {
		return 2
	}
	return 1
}

// ask runs the command bin with args and returns what it said it does not know.
func ask(t *testing.T, bin string, args []string) []string {
	t.Helper()
	out, _ := exec.Command(bin, args...).CombinedOutput() // the exit status says nothing here
	var got []string
	for _, line := range strings.Split(string(out), "\n") {
		for _, unknown := range []string{"unknown group", "unknown command", "unknown subcommand", "flag provided but not defined"} {
			if strings.Contains(line, unknown) {
				got = append(got, fmt.Sprintf("%s %s: %s", bin[strings.LastIndex(bin, "/")+1:], strings.Join(args, " "), line))
			}
		}
	}
	return got
}

// Every command the documents show exists: each make target is the Makefile's, each
// event of make invoke is a file, and each bucketgate or bucketgate-local command and
// flag is one the built command knows.
func TestShownCommandsExist(t *testing.T) {
	targets := makeTargets(t)
	checked := map[string]int{}
	for _, doc := range docFiles(t) {
		for _, s := range shownCommands(doc, readFile(t, doc)) {
			for _, cmd := range words(s.text, s.code) {
				ref, ok := refOf(cmd)
				if !ok {
					continue
				}
				checked[ref.name]++
				for _, p := range problems(t, ref, targets) {
					t.Errorf("%s: %s: %s", s.where, s.text, p)
				}
			}
		}
	}
	for _, name := range []string{"make", "bucketgate", "bucketgate-local"} {
		if checked[name] < 2 {
			t.Errorf("%d uses of %s found in the docs: is the parse right? (%v)", checked[name], name, checked)
		}
	}
}

// The check above catches a command or flag that is gone, a make target that is not
// there, and an event that does not exist; and lets real ones through.
func TestShownCommandsCatchWhatIsGone(t *testing.T) {
	targets := makeTargets(t)
	tests := []struct {
		doc  string
		want int // problems found
	}{
		{"```sh\nbucketgate keys create --plan NAME [--owner TEXT] [--rule NAME:CAPACITY:RATE]...\n```", 0},
		{"```\n$ KEY=$(go run ./cmd/bucketgate keys create --plan pro --owner acme)\n```", 0},
		{"`bucketgate buckets show|refund|reset`", 0},
		{"```\n$ make invoke FUNCTION=check EVENT=events/check-peek.json 2>/dev/null | grep remaining\n```", 0},
		{"```\n$ go run ./cmd/bucketgate-local serve -addr 127.0.0.1:8080 -backend URL\n```", 0},
		{"```sh\nKEY=$(bucketgate --stack bucketgate keys create --plan pro)\n```", 0},
		{"`bucketgate --stack=NAME buckets show KEY`", 0},
		{"`bucketgate --version`", 0},
		{"```sh\nbucketgate keys create --plan NAME --colour blue\n```", 1},
		{"`bucketgate keys destroy KEY`", 1},
		{"`bucketgate accounts list`", 0},
		{"`bucketgate tenants list`", 1},
		{"`bucketgate buckets show|drain`", 1},
		{"```\n$ go run ./cmd/bucketgate-local serve -port 8080\n```", 1},
		{"```sh\nbucketgate --stak bucketgate keys list\n```", 1},
		{"```sh\nbucketgate --stack bucketgate keys destroy KEY\n```", 1},
		{"`bucketgate --stack NAME keys list --colour blue`", 1},
		{"`make deploy`", 1},
		{"`make invoke EVENT=events/check-nothing.json`", 1},
	}
	for _, tc := range tests {
		found := 0
		for _, s := range shownCommands("test.md", tc.doc) {
			for _, cmd := range words(s.text, s.code) {
				if ref, ok := refOf(cmd); ok {
					found += len(problems(t, ref, targets))
				}
			}
		}
		if found != tc.want {
			t.Errorf("%q: %d problems, want %d", tc.doc, found, tc.want)
		}
	}
}

// described matches a Makefile rule with a ## comment: the targets make lists.
var described = regexp.MustCompile(`(?m)^([a-z][a-z-]*):.*## `)

// make alone lists every target that has a ## comment and runs nothing else. Its goal
// was the first rule's, dynalite's npm ci: a newcomer's make installed packages.
func TestMakeAloneListsTheTargets(t *testing.T) {
	cmd := exec.Command("make", "-pnq") // the rules, recipes not run
	cmd.Dir = root
	cmd.Env = cleanEnv()
	rules, _ := cmd.Output() // -q exits 1 when its goal would run
	if goal := regexp.MustCompile(`(?m)^\.DEFAULT_GOAL := .*$`).Find(rules); string(goal) != ".DEFAULT_GOAL := help" {
		t.Fatalf("make -pnq says %q: want make alone to make help", goal)
	}
	cmd = exec.Command("make")
	cmd.Dir = root
	cmd.Env = cleanEnv()
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("make: %v\n%s", err, out)
	}
	targets := described.FindAllStringSubmatch(readFile(t, "Makefile"), -1)
	if len(targets) < 5 {
		t.Fatalf("%d described targets in the Makefile: is the pattern right?", len(targets))
	}
	for _, m := range targets {
		if !regexp.MustCompile(`(?m)^  make ` + m[1] + ` +\S`).Match(out) {
			t.Errorf("make does not list %s with what it does:\n%s", m[1], out)
		}
	}
}
