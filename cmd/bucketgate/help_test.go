package main

import (
	"bytes"
	"context"
	"maps"
	"regexp"
	"slices"
	"strings"
	"testing"
)

// help runs args, which ask for a usage, and returns it: exit 0, stdout, nothing on
// stderr.
func help(t *testing.T, args ...string) string {
	t.Helper()
	var stdout, stderr bytes.Buffer
	code := run(context.Background(), args, func(string) string { return "" }, strings.NewReader(""), &stdout, &stderr)
	if code != exitOK || stdout.Len() == 0 || stderr.Len() != 0 {
		t.Fatalf("bucketgate %s: exit %d, stdout %q, stderr %q; want a usage on stdout, exit 0", strings.Join(args, " "), code, &stdout, &stderr)
	}
	return stdout.String()
}

// commandsOf are the commands of every group that has them, by group.
var commandsOf = map[string][]string{
	"keys":     slices.Sorted(maps.Keys(keysCommands)),
	"accounts": slices.Sorted(maps.Keys(accountsCommands)),
	"config":   slices.Sorted(maps.Keys(configCommands)),
	"buckets":  slices.Sorted(maps.Keys(bucketsCommands)),
}

// bucketgate help (-h, --help, -help) is short: every group, what it is and its
// commands' names, where a group's and a command's usage are, and --stack; no group's
// details. It printed every group's details, 11 KB, for a group's and a command's -h too.
func TestHelp(t *testing.T) {
	top := help(t, "help")
	for _, args := range [][]string{{"--help"}, {"-h"}, {"-help"}, {"help", "help"}, {"--stack", "x", "--help"}} {
		if got := help(t, args...); got != top {
			t.Errorf("bucketgate %s printed:\n%s\nwant what bucketgate help prints:\n%s", strings.Join(args, " "), got, top)
		}
	}
	want := []string{
		"usage: bucketgate [--stack NAME] GROUP COMMAND [flags] [arguments]\n",
		"bucketgate help GROUP (or bucketgate GROUP -h)", "bucketgate help GROUP COMMAND (or bucketgate GROUP COMMAND -h) lists a command's flags",
		"--stack NAME (default: $BUCKETGATE_STACK)", "outputs RegistryTableName and\nOperatorFunctionName",
		"--table and --function win when\ngiven; REGISTRY_TABLE and CHECK_FUNCTION must name the stack's own",
	}
	for name, g := range groups {
		want = append(want, name+" ", g.about)
		if commands := commandsOf[name]; len(commands) > 0 {
			want = append(want, strings.Join(commandNames(name), ", ")+"\n")
		}
	}
	for _, w := range want {
		if !strings.Contains(top, w) {
			t.Errorf("bucketgate help lacks %q:\n%s", w, top)
		}
	}
	if len(top) > 2048 || strings.Contains(top, "bucketgate keys create") || strings.Contains(top, "KEY is an API key") {
		t.Errorf("bucketgate help prints %d bytes, with a group's details:\n%s\nwant at most 2 KB: the groups and their commands", len(top), top)
	}
}

// Every group's usage (bucketgate help GROUP, GROUP -h, GROUP --help, GROUP help) is its
// own: its commands' lines and what they take and share, and where a command's flags
// are; every command of it has lines of its own there, and no other.
func TestGroupHelp(t *testing.T) {
	for _, name := range slices.Sorted(maps.Keys(commandsOf)) {
		t.Run(name, func(t *testing.T) {
			if got := commandNames(name); !slices.Equal(slices.Sorted(slices.Values(got)), commandsOf[name]) {
				t.Fatalf("the usage of %s has lines for %v, want one for each of its commands, %v", name, got, commandsOf[name])
			}
			text := help(t, "help", name)
			for _, args := range [][]string{{name, "-h"}, {name, "--help"}, {name, "help"}, {"--stack", "x", name, "-h"}} {
				if got := help(t, args...); got != text {
					t.Errorf("bucketgate %s printed:\n%s\nwant what bucketgate help %s prints:\n%s", strings.Join(args, " "), got, name, text)
				}
			}
			for _, w := range []string{"usage: bucketgate [--stack NAME] " + name + " COMMAND", name + ": " + groups[name].about + "\n" + groups[name].usage,
				"bucketgate help " + name + " COMMAND (or bucketgate " + name + " COMMAND -h) lists a command's flags.\n"} {
				if !strings.Contains(text, w) {
					t.Errorf("bucketgate help %s lacks %q:\n%s", name, w, text)
				}
			}
			for other := range groups {
				if other != name && strings.Contains(text, "  bucketgate "+other+" ") {
					t.Errorf("bucketgate help %s shows a command of %s:\n%s", name, other, text)
				}
			}
		})
	}
}

// shownFlag matches a flag in a command's usage lines.
var shownFlag = regexp.MustCompile(`--[a-z][a-z-]*`)

// Every command's usage (bucketgate help GROUP COMMAND, GROUP COMMAND -h or --help; usage
// and version, of groups of one command, by help GROUP too) is its own: its lines, and
// a line for each of its flags, those its lines show, --table or --function, and --stack;
// of usage, what IDENTITY is. A command's --help printed the whole command line's usage.
func TestCommandHelp(t *testing.T) {
	type command struct {
		args  []string // after help
		flags []string // that the lines do not show
	}
	var commands []command
	for group, names := range commandsOf {
		for _, name := range names {
			c := command{args: []string{group, name}, flags: []string{"--stack", "--table"}}
			if group == "buckets" {
				c.flags[1] = "--function"
			}
			commands = append(commands, c)
		}
	}
	commands = append(commands, command{[]string{"usage"}, []string{"--stack", "--function"}}, command{[]string{"version"}, nil})
	for _, c := range commands {
		name := strings.Join(c.args, " ")
		t.Run(name, func(t *testing.T) {
			text := help(t, append([]string{"help"}, c.args...)...)
			for _, args := range [][]string{append(slices.Clone(c.args), "-h"), append(slices.Clone(c.args), "--help"), append([]string{"--stack", "x"}, append(slices.Clone(c.args), "-h")...)} {
				if got := help(t, args...); got != text {
					t.Errorf("bucketgate %s printed:\n%s\nwant what bucketgate help %s prints:\n%s", strings.Join(args, " "), got, name, text)
				}
			}
			lines := synopsis(name)
			if len(lines) == 0 || !strings.HasPrefix(text, "usage: "+lines[0]+"\n") {
				t.Fatalf("bucketgate help %s:\n%s\nwant it to start with its lines of the usage of %s", name, text, c.args[0])
			}
			flags := slices.Concat(c.flags, shownFlag.FindAllString(strings.Join(lines, " "), -1))
			for _, f := range flags {
				if !regexp.MustCompile(`(?m)^  ` + f + `\b`).MatchString(text) {
					t.Errorf("bucketgate help %s lists no %s:\n%s", name, f, text)
				}
			}
			if strings.Contains(text, "KEY is an API key") || strings.Contains(text, "accounts: ") {
				t.Errorf("bucketgate help %s prints another's usage:\n%s", name, text)
			}
		})
	}
	if text := help(t, "help", "usage"); !strings.Contains(text, "IDENTITY is as for buckets") {
		t.Errorf("bucketgate help usage does not say what IDENTITY is:\n%s", text)
	}
}

// help names a group and a command that exist: another is a usage error, as it is
// without help.
func TestHelpOfNothing(t *testing.T) {
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"help", "key"}, `unknown group "key"`},
		{[]string{"help", "keys", "delete"}, `keys: unknown command "delete"`},
	} {
		var stdout, stderr bytes.Buffer
		code := run(context.Background(), tc.args, func(string) string { return "" }, strings.NewReader(""), &stdout, &stderr)
		if code != exitUsage || stdout.Len() != 0 || !strings.Contains(stderr.String(), tc.want) {
			t.Errorf("bucketgate %s: exit %d, stdout %q, stderr %q; want exit 2 saying %q", strings.Join(tc.args, " "), code, &stdout, &stderr, tc.want)
		}
	}
}

// A usage error says where the usage of what the command line named is: a command's
// (bucketgate help keys create), a group's for a command it lacks, the whole command
// line's without a group. Every one said bucketgate help, whose usage was 11 KB.
func TestUsageErrorNamesItsHelp(t *testing.T) {
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"keys", "create", "--plan"}, "bucketgate: usage: keys create: flag needs an argument: -plan\nRun bucketgate help keys create for its usage.\n"},
		{[]string{"--stack", "x", "buckets", "reset", "--cost", "1", "1.2.3.4"}, "\nRun bucketgate help buckets reset for its usage.\n"},
		{[]string{"usage"}, "bucketgate: usage: usage: want 1 argument(s), got 0\nRun bucketgate help usage for its usage.\n"},
		{[]string{"version", "now"}, "\nRun bucketgate help version for its usage.\n"},
		{[]string{"keys", "delete"}, "\nRun bucketgate help keys for its usage.\n"},
		{[]string{"keys"}, "\nRun bucketgate help keys for its usage.\n"},
		{[]string{"key", "list"}, "\nRun bucketgate help for the usage.\n"},
		{[]string{"--stack"}, "\nRun bucketgate help for the usage.\n"},
	} {
		var stdout, stderr bytes.Buffer
		code := run(context.Background(), tc.args, func(string) string { return "" }, strings.NewReader(""), &stdout, &stderr)
		if code != exitUsage || stdout.Len() != 0 || !strings.HasSuffix(stderr.String(), tc.want) {
			t.Errorf("bucketgate %s: exit %d, stdout %q, stderr %q; want exit 2 ending %q", strings.Join(tc.args, " "), code, &stdout, &stderr, tc.want)
		}
	}
}
