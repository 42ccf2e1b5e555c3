package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"maps"
	"slices"
	"strings"

	"github.com/bucketgate/bucketgate/internal/madekey"
	"github.com/bucketgate/bucketgate/internal/settings"
	"github.com/bucketgate/bucketgate/internal/version"
)

// Exit statuses of run.
const (
	exitOK    = 0
	exitError = 1
	exitUsage = 2
)

// errUsage is wrapped by every error about the command line.
var errUsage = errors.New("usage")

// env is what every command runs with: the process's context, environment, input and
// output, and the --stack flag given before the group, if any. stdout and stderr mask
// every API key bucketgate made that what is written could show (masked); keyOut is
// stdout unmasked, where showKey alone prints a new key.
type env struct {
	ctx            context.Context
	getenv         func(string) string
	stdin          io.Reader
	stdout, stderr io.Writer
	keyOut         io.Writer
	stackFlag      *flag.Flag
}

// cliSettings are the functions' settings that the CLI reads from the shell, as the
// functions do: the registry table, the configuration document, and the key header and
// IPv6 prefix length by which the authorizer names an identity.
var cliSettings = []string{settings.EnvRegistryTable, settings.EnvConfigInline, settings.EnvConfigFile, settings.EnvAPIKeyHeader, settings.EnvIPv6Prefix}

// settings loads the functions' settings from the shell, cliSettings alone: the others
// (LOG_LEVEL, REDIS_ADDR, STACK_NAME, ...), which the functions alone read and which
// another program may have set its own way, never stop a command.
func (e env) settings() (settings.Settings, error) {
	return settings.Load(func(name string) string {
		if slices.Contains(cliSettings, name) {
			return e.getenv(name)
		}
		return ""
	})
}

// addStack adds --stack to the command's flags fs, sharing the value of the flag before
// the group: it can be given in either place, once.
func (e env) addStack(fs *flag.FlagSet) {
	if e.stackFlag != nil {
		fs.Var(e.stackFlag.Value, e.stackFlag.Name, e.stackFlag.Usage)
	}
}

// stack returns the stack the command line or BUCKETGATE_STACK names, once the
// command's flags are parsed; it is read only when a command needs one of its outputs.
func (e env) stack() *stack {
	var name string
	if e.stackFlag != nil {
		name = e.stackFlag.Value.String()
	}
	return newStack(e, name)
}

// namedByEnv are the variables that name a table, a function or a stack: one holding
// an API key bucketgate made is refused before any command runs, as its flag is, so
// that the key goes in no request.
var namedByEnv = []string{settings.EnvRegistryTable, envCheckFunction, envStack}

// group is a group of commands, such as keys: it runs the arguments after its name.
type group struct {
	about string
	run   func(e env, args []string) error
	usage string
}

// groups are the command groups by name.
var groups = map[string]group{
	"keys":     {about: "API keys and tenants in the registry table", run: runKeys, usage: keysUsage},
	"accounts": {about: "accounts in the registry table: many keys, one plan, one set of buckets", run: runAccounts, usage: accountsUsage},
	"config":   {about: "the configuration document (plans and routes) in the registry table, versioned", run: runConfig, usage: configUsage},
	"buckets":  {about: "the buckets of an API key, an account, an IP address or a tenant, through the operator function", run: runBuckets, usage: bucketsUsage},
	"usage":    {about: "the usage of an API key, an account, an IP address or a tenant per day, through the operator function", run: runUsage, usage: usageUsage},
	"version":  {about: "the version of this bucketgate (also --version)", run: runVersion, usage: "  bucketgate version\n"},
}

// run runs the command line args with the environment read through getenv and returns
// the exit status. stdin is read only for a key given as "-". Only a command's result
// goes to stdout; errors and notes go to stderr. Nothing it prints shows an API key
// bucketgate made but the new key of keys create and keys roll: what may be one, or part
// of one (stored text, a value refused that quotes it, such as a key pasted for
// --expires's WHEN, a name in a note), is masked (madekey.Mask).
func run(ctx context.Context, args []string, getenv func(string) string, stdin io.Reader, stdout, stderr io.Writer) int {
	e := env{ctx: ctx, getenv: getenv, stdin: stdin, stdout: masked{stdout}, stderr: masked{stderr}, keyOut: stdout}
	err := dispatch(e, args)
	switch {
	case err == nil:
		return exitOK
	case errors.Is(err, flag.ErrHelp):
		fmt.Fprint(e.stdout, helpText(err))
		return exitOK
	case errors.Is(err, errUsage):
		help := "bucketgate help for the usage"
		if in := (*usageIn)(nil); errors.As(err, &in) {
			help = "bucketgate help " + in.command + " for its usage"
		}
		fmt.Fprintf(e.stderr, "bucketgate: %s\nRun %s.\n", err, help)
		return exitUsage
	}
	fmt.Fprintf(e.stderr, "bucketgate: %s\n", err)
	return exitError
}

// dispatch reads the flags before the group (--stack, --version, --help), then runs
// the group named by the first argument after them.
func dispatch(e env, args []string) error {
	fs := flag.NewFlagSet("bucketgate", flag.ContinueOnError)
	fs.SetOutput(io.Discard)
	nameFlag(fs, "stack", "the deployed stack whose outputs name the table and the operator function (default: $"+envStack+")")
	showVersion := fs.Bool("version", false, "print the version")
	onceOnly(fs)
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return err
		}
		return fmt.Errorf("%w: %w", errUsage, err)
	}
	e.stackFlag, args = fs.Lookup("stack"), fs.Args()
	if *showVersion {
		return runVersion(e, args)
	}
	if len(args) == 0 {
		return fmt.Errorf("%w: name a group: %s", errUsage, strings.Join(slices.Sorted(maps.Keys(groups)), ", "))
	}
	if args[0] == "help" && len(args) > 1 { // bucketgate help GROUP [COMMAND]: bucketgate GROUP [COMMAND] -h
		args = append(args[1:], "-h")
	}
	if isHelp(args[0]) {
		return flag.ErrHelp
	}
	g, ok := groups[args[0]]
	if !ok {
		return fmt.Errorf("%w: unknown group %q: want %s", errUsage, args[0], strings.Join(slices.Sorted(maps.Keys(groups)), ", "))
	}
	for _, name := range namedByEnv { // as --table, --function and --stack are refused
		if madekey.Holds(e.getenv(name)) {
			return fmt.Errorf("%w: %s: %w", errUsage, name, errKeyForName)
		}
	}
	err := g.run(e, args[1:])
	if errors.Is(err, errUsage) {
		command := args[0]
		if len(args) > 1 && slices.Contains(commandNames(args[0]), args[1]) {
			command += " " + args[1]
		}
		return &usageIn{err: err, command: command}
	}
	return err
}

// command returns the command of group named by args[0] among commands, and an empty
// flag set for it, named "GROUP COMMAND", that prints nothing.
func command[C any](group string, commands map[string]C, args []string) (C, *flag.FlagSet, error) {
	names := strings.Join(slices.Sorted(maps.Keys(commands)), ", ")
	var c C
	if len(args) == 0 {
		return c, nil, fmt.Errorf("%w: %s: name a command: %s", errUsage, group, names)
	}
	c, ok := commands[args[0]]
	switch {
	case !ok && isHelp(args[0]): // bucketgate keys --help
		return c, nil, &helpError{group: group}
	case !ok:
		return c, nil, fmt.Errorf("%w: %s: unknown command %q: want %s", errUsage, group, args[0], names)
	}
	fs := flag.NewFlagSet(group+" "+args[0], flag.ContinueOnError)
	fs.SetOutput(io.Discard)
	return c, fs, nil
}

// parse parses args into fs, flags before, between or after the arguments, and wants
// exactly n arguments; it returns them. A flag given twice is a usage error, not a
// silent choice of the last one, unless its value is repeatable (--rule).
func parse(fs *flag.FlagSet, args []string, n int) ([]string, error) {
	onceOnly(fs)
	var positional []string
	for {
		if err := fs.Parse(args); err != nil {
			if errors.Is(err, flag.ErrHelp) {
				return nil, &helpError{fs: fs}
			}
			return nil, fmt.Errorf("%w: %w", usageOf(fs), err)
		}
		if fs.NArg() == 0 {
			break
		}
		positional = append(positional, fs.Arg(0))
		args = fs.Args()[1:]
	}
	if len(positional) != n {
		return nil, fmt.Errorf("%w: want %d argument(s), got %d", usageOf(fs), n, len(positional))
	}
	return positional, nil
}

// usageOf returns the usage error of the command that fs parses the flags of, for the
// details to follow: errUsage, then the command's name (the usage group's too: "usage:
// usage: want 1 argument(s)", as "usage: config put: ...").
func usageOf(fs *flag.FlagSet) error {
	return fmt.Errorf("%w: %s", errUsage, fs.Name())
}

// onceOnly makes every flag of fs refuse to be given twice, unless its value is
// repeatable.
func onceOnly(fs *flag.FlagSet) {
	fs.VisitAll(func(f *flag.Flag) {
		if _, ok := f.Value.(repeatable); !ok {
			f.Value = &once{Value: f.Value}
		}
	})
}

// runVersion prints the version; of a build that carries none, a note on stderr says
// why and how to build one that does.
func runVersion(e env, args []string) error {
	fs := flag.NewFlagSet("version", flag.ContinueOnError)
	fs.SetOutput(io.Discard)
	if _, err := parse(fs, args, 0); err != nil {
		return err
	}
	v := version.String()
	if _, err := fmt.Fprintln(e.stdout, "bucketgate", v); err != nil || v != version.Devel {
		return err
	}
	_, err := fmt.Fprintln(e.stderr, devNote)
	return err
}

// devNote is what bucketgate version adds on stderr for a build without a version.
const devNote = "note: this build carries no version: it was built without make's stamp (git describe of the clone) " +
	"and without version control information (go run, go build -buildvcs=false or in a git worktree, sources without their .git); " +
	"make cli in a clone, or go install github.com/bucketgate/bucketgate/cmd/bucketgate@VERSION, builds one that reports its version"

// repeatable is a flag's value that takes the flag more than once.
type repeatable interface {
	flag.Value
	repeatable()
}

// once is a flag's value that takes the flag once.
type once struct {
	flag.Value
	set bool
}

// Set sets the value the first time; again, it refuses.
func (o *once) Set(v string) error {
	if o.set {
		return errors.New("given twice: give it once")
	}
	o.set = true
	return o.Value.Set(v)
}

// IsBoolFlag reports whether the flag takes no value (--json), as the value it wraps does.
func (o *once) IsBoolFlag() bool {
	b, ok := o.Value.(interface{ IsBoolFlag() bool })
	return ok && b.IsBoolFlag()
}
