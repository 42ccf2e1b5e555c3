package main

import (
	"errors"
	"flag"
	"fmt"
	"maps"
	"regexp"
	"slices"
	"strings"
)

// usage is the command line's usage, short: every group with what it is and its
// commands' names, where a group's and a command's usage are, and --stack.
func usage() string {
	var b strings.Builder
	b.WriteString("usage: bucketgate [--stack NAME] GROUP COMMAND [flags] [arguments]\n\n")
	tw := newTable(&b)
	for _, name := range slices.Sorted(maps.Keys(groups)) {
		fmt.Fprintf(tw, "%s\t%s\n", name, groups[name].about)
		if commands := commandNames(name); len(commands) > 0 {
			fmt.Fprintf(tw, "\t%s\n", strings.Join(commands, ", "))
		}
	}
	tw.Flush()
	b.WriteString("\nbucketgate help GROUP (or bucketgate GROUP -h) says what a group's commands do and take;\n" +
		"bucketgate help GROUP COMMAND (or bucketgate GROUP COMMAND -h) lists a command's flags.\n\n" + stackUsage)
	return b.String()
}

// helpError asks for a usage that is not the whole command line's: a group's (group),
// or a command's (fs, the flags it parses). run prints it on stdout (helpText), as it
// prints usage for flag.ErrHelp, which it wraps.
type helpError struct {
	group string
	fs    *flag.FlagSet
}

func (h *helpError) Error() string { return flag.ErrHelp.Error() }

func (h *helpError) Unwrap() error { return flag.ErrHelp }

// helpText returns the usage that err asks for (flag.ErrHelp): a group's or a command's
// (helpError), else the whole command line's.
func helpText(err error) string {
	h := (*helpError)(nil)
	switch {
	case !errors.As(err, &h):
		return usage()
	case h.fs != nil:
		return commandUsage(h.fs)
	}
	return groupUsage(h.group)
}

// usageIn is a usage error (errUsage) of a command line that named a group, and a
// command of it when it has commands: run says where their usage is (bucketgate help
// GROUP COMMAND), which has what the error is about.
type usageIn struct {
	err     error
	command string // "GROUP COMMAND", or "GROUP"
}

func (u *usageIn) Error() string { return u.err.Error() }

func (u *usageIn) Unwrap() error { return u.err }

// groupUsage is the usage of group: what it is, its commands' lines, what they take and
// share, and where a command's flags are.
func groupUsage(group string) string {
	g := groups[group]
	return fmt.Sprintf("usage: bucketgate [--stack NAME] %s COMMAND [flags] [arguments]\n\n%s: %s\n%s\nbucketgate help %s COMMAND (or bucketgate %s COMMAND -h) lists a command's flags.\n",
		group, group, g.about, g.usage, group, group)
}

// commandUsage is the usage of the command whose flags fs parses (named "GROUP
// COMMAND", or "GROUP" for a group of one command, such as usage): its lines of its
// group's usage, and its flags (but a refusedFlag); then, for a group of one command,
// what it takes, else where that is (its group's usage).
func commandUsage(fs *flag.FlagSet) string {
	group, _, _ := strings.Cut(fs.Name(), " ")
	lines := synopsis(fs.Name())
	var b strings.Builder
	b.WriteString("usage: " + strings.Join(lines, "\n       ") + "\n")
	var flags []*flag.Flag
	fs.VisitAll(func(f *flag.Flag) {
		if !strings.HasPrefix(f.Usage, refusedFlag) {
			flags = append(flags, f)
		}
	})
	if len(flags) > 0 {
		b.WriteString("\n")
		tw := newTable(&b)
		for _, f := range flags {
			fmt.Fprintf(tw, "  --%s\t%s\n", strings.TrimSpace(f.Name+" "+placeholder(f, lines)), flagUsage(f))
		}
		tw.Flush()
	}
	if len(commandNames(group)) == 0 {
		if _, prose, _ := strings.Cut(groups[group].usage, "\n\n"); prose != "" {
			b.WriteString("\n" + prose)
		}
	} else {
		fmt.Fprintf(&b, "\nbucketgate help %s says what its commands take and share.\n", group)
	}
	return b.String()
}

// refusedFlag starts the usage of a flag that a command defines only to refuse it with
// an error saying why (buckets reset's --cost): its usage does not list it.
const refusedFlag = "refused: "

// synopsis returns the lines of the usage of command ("GROUP COMMAND", or "GROUP" for
// a group of one command) in its group's usage, without their indent.
func synopsis(command string) []string {
	group, _, _ := strings.Cut(command, " ")
	var lines []string
	for line := range strings.Lines(groups[group].usage) {
		line = strings.TrimSpace(line)
		if rest, ok := strings.CutPrefix(line, "bucketgate "+command); ok && (rest == "" || rest[0] == ' ') {
			lines = append(lines, line)
		}
	}
	return lines
}

// commandNames returns the names of group's commands, in the order of its usage; none
// for a group of one command (usage, version).
func commandNames(group string) []string {
	var names []string
	for line := range strings.Lines(groups[group].usage) {
		words := strings.Fields(line)
		if len(words) < 3 || words[0] != "bucketgate" || words[1] != group || !commandWord.MatchString(words[2]) {
			continue
		}
		if !slices.Contains(names, words[2]) {
			names = append(names, words[2])
		}
	}
	return names
}

// commandWord matches a command's name in a usage line.
var commandWord = regexp.MustCompile(`^[a-z][a-z-]*$`)

// placeholder returns what stands for the value of f in the command's lines (--plan
// NAME, --cost N, --key -), NAME for a flag they do not show (--table, --function,
// --stack), or "" for a flag that takes no value.
func placeholder(f *flag.Flag, lines []string) string {
	if b, ok := f.Value.(interface{ IsBoolFlag() bool }); ok && b.IsBoolFlag() {
		return ""
	}
	shown := regexp.MustCompile(`--` + regexp.QuoteMeta(f.Name) + ` ([A-Z]+\b|-)`)
	for _, line := range lines {
		if m := shown.FindStringSubmatch(line); m != nil {
			return m[1]
		}
	}
	return "NAME"
}

// flagUsage is f's usage, with its default when it has one that the usage does not say.
func flagUsage(f *flag.Flag) string {
	switch f.DefValue {
	case "", "false", "0", "[]": // none: not given
		return f.Usage
	}
	if strings.Contains(f.Usage, "default") {
		return f.Usage
	}
	return f.Usage + " (default: " + f.DefValue + ")"
}

// isHelp reports whether arg, in the place of a group or a command, asks for the usage.
func isHelp(arg string) bool {
	switch arg {
	case "-h", "-help", "--help", "help":
		return true
	}
	return false
}
