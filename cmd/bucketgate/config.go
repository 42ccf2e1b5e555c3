package main

import (
	"cmp"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"strings"
	"time"

	"github.com/bucketgate/bucketgate/internal/config"
	"github.com/bucketgate/bucketgate/internal/madekey"
	"github.com/bucketgate/bucketgate/internal/registry"
	"github.com/bucketgate/bucketgate/internal/settings"
)

const configUsage = `  bucketgate config show [--version N] [--json]
  bucketgate config put FILE [--note TEXT] [--force]
  bucketgate config history [--json]
  bucketgate config rollback N [--note TEXT] [--force]

The configuration document (plans, routes, unknownKeys, anonymous: the schema of
RATE_LIMIT_CONFIG, without keys or tenants) lives in the registry table as the item
config, and every version as the copy config#N. Both functions read it at init and then
at most once per REGISTRY_CACHE_MS; while the table holds none they use their
RATE_LIMIT_CONFIG, RATE_LIMIT_CONFIG_FILE or the built-in document. show prints the
document in force (or version N) alone on stdout, and its version on stderr; put writes
FILE (- for stdin) as the next version; history lists the versions, newest first;
rollback writes version N's document again as the next version. put and rollback check
the document as the functions load it, write only if the document in force is still the
one they read (another operator's write in between fails them, and nothing is written),
and refuse a document that leaves an active key, tenant or account without its plan (or a
key of an account without room for its own rules), naming them (--force writes it
anyway). Every command takes --table NAME (default: $REGISTRY_TABLE).
`

var configCommands = map[string]tableCommand{
	"show":     {0, nil, configShowFlags},
	"put":      {1, nil, configPutFlags},
	"history":  {0, nil, configHistoryFlags},
	"rollback": {1, nil, configRollbackFlags},
}

// runConfig runs the config command named by args[0].
func runConfig(e env, args []string) error { return runTableCommand(e, "config", configCommands, args) }

// configJSON is a version of the configuration as --json prints it.
type configJSON struct {
	// ID is the item's id of a copy that cannot be read (history), whose version may not
	// be known.
	ID string `json:"id,omitempty"`
	// Version is left out for a copy whose version cannot be read (history).
	Version   int64  `json:"version,omitempty"`
	UpdatedAt string `json:"updatedAt,omitempty"`
	Note      string `json:"note,omitempty"`
	// Document is the document as stored; history leaves it out.
	Document string `json:"document,omitempty"`
	// Bytes is the document's size; show leaves it out.
	Bytes int `json:"bytes,omitempty"`
	// Current reports the version in force (history).
	Current bool `json:"current,omitempty"`
	// Invalid is why the copy cannot be read (history).
	Invalid string `json:"invalid,omitempty"`
}

func configShowFlags(fs *flag.FlagSet) func(env, *keyTable, []string) error {
	version := countFlag(fs, "version", "the version to show (default: the one in force)")
	asJSON := fs.Bool("json", false, "print JSON: version, updatedAt, note and document")
	return func(e env, t *keyTable, _ []string) error {
		id := registry.ConfigID
		if isSet(fs, "version") {
			if *version < 1 {
				return fmt.Errorf("%w: config show: --version %d: want 1 or more", errUsage, *version)
			}
			id = registry.VersionID(*version)
		}
		s, _, err := t.readConfig(e.ctx, id)
		switch {
		case errors.Is(err, errNoItem) && id == registry.ConfigID:
			return fmt.Errorf("table %s holds no configuration document: the functions use their %s (or %s, or the built-in document); bucketgate config put FILE stores one",
				t.name, settings.EnvConfigInline, settings.EnvConfigFile)
		case errors.Is(err, errNoItem):
			return fmt.Errorf("%w: table %s holds no version %d (bucketgate config history lists them)", errNoItem, t.name, *version)
		case err != nil:
			return err
		}
		if cfg, err := s.Load(); err != nil {
			fmt.Fprintf(e.stderr, "warning: %v\n", err)
		} else {
			for _, l := range cfg.Legacy() { // stored before put refused it: put it again without
				fmt.Fprintf(e.stderr, "warning: configuration version %d (%s): %s\n", s.Version, s.ID, l)
			}
		}
		if line, what := lineOfKey([]byte(s.Document)); line > 0 { // stored before put refused one, or by hand; stdout masks it
			fmt.Fprintf(e.stderr, "warning: line %d of the document holds %s, shown masked, which config put refuses: put a version without it\n", line, what)
		}
		if *asJSON {
			return writeJSON(e.stdout, configJSON{Version: s.Version, UpdatedAt: updated(s), Note: s.Note, Document: s.Document})
		}
		fmt.Fprintf(e.stderr, "version %d of table %s, written %s%s\n", s.Version, t.name, cmp.Or(updated(s), "-"), noteText(s.Note))
		_, err = io.WriteString(e.stdout, s.Document)
		return err
	}
}

func configPutFlags(fs *flag.FlagSet) func(env, *keyTable, []string) error {
	note := proseFlag(fs, "note", "why, for people")
	force := fs.Bool("force", false, "write it even if active keys, tenants or accounts lose their plan")
	return func(e env, t *keyTable, args []string) error {
		if strings.TrimSpace(args[0]) == "" { // a script's unset variable
			return fmt.Errorf("%w: FILE is empty: name a file, or - for stdin", usageOf(fs))
		}
		doc, err := readDocument(e.stdin, args[0])
		if err != nil {
			return err
		}
		if line, what := lineOfKey(doc); line > 0 { // whatever else is wrong with it: the loader would name that first
			return fmt.Errorf("%s: line %d holds %s, which the table would hold as it is, for every function to read and config show to print: take it out (a key is named by its digest): nothing written", args[0], line, what)
		}
		if line := lineOfMask(doc); line > 0 { // config show's output put back: the line no longer says what it said
			return fmt.Errorf("%s: line %d holds %s..., which config show prints in place of what may be an API key bucketgate made: write what the line should hold (a key is named by its digest): nothing written", args[0], line, madekey.Prefix)
		}
		cfg, err := registry.LoadDocument(doc)
		if err != nil {
			return fmt.Errorf("%s: %w: nothing written", args[0], err)
		}
		if legacy := cfg.Legacy(); len(legacy) > 0 { // the functions load it, for a document stored before
			return fmt.Errorf("%s: %w: %s: nothing written", args[0], config.ErrConfig, legacy[0])
		}
		for _, c := range cfg.Caveats() {
			warnTo(e)(c)
		}
		w, err := t.writeConfig(e.ctx, string(doc), cfg, string(*note), *force, warnTo(e))
		if err != nil {
			return err
		}
		reportWrite(e, t, w)
		return nil
	}
}

func configHistoryFlags(fs *flag.FlagSet) func(env, *keyTable, []string) error {
	asJSON := fs.Bool("json", false, "print a JSON array")
	return func(e env, t *keyTable, _ []string) error {
		cur, _, err := t.readConfig(e.ctx, registry.ConfigID)
		var bad *registry.RecordError
		if err != nil && !errors.Is(err, errNoItem) && !errors.As(err, &bad) {
			return err
		}
		h, err := t.scan(e.ctx, false)
		if err != nil {
			return err
		}
		out := make([]configJSON, len(h.versions))
		for i, v := range h.versions {
			out[i] = configJSON{Version: v.s.Version, UpdatedAt: updated(v.s), Note: v.s.Note, Bytes: len(v.s.Document), Current: v.s.Version == cur.Version && v.err == nil}
			if v.err != nil {
				out[i].ID, out[i].Invalid = v.id, v.err.Error()
			}
		}
		if *asJSON {
			return writeJSON(e.stdout, out)
		}
		tw := newTable(e.stdout)
		fmt.Fprintln(tw, "VERSION\tCURRENT\tUPDATED\tBYTES\tNOTE")
		for _, v := range out {
			current := ""
			if v.Current {
				current = "*"
			}
			if v.Invalid != "" {
				fmt.Fprintf(tw, "%s\t\tinvalid: %s\n", v.ID, v.Invalid)
				continue
			}
			fmt.Fprintf(tw, "%d\t%s\t%s\t%d\t%s\n", v.Version, current, cmp.Or(v.UpdatedAt, "-"), v.Bytes, oneLine(v.Note))
		}
		return tw.Flush()
	}
}

func configRollbackFlags(fs *flag.FlagSet) func(env, *keyTable, []string) error {
	note := proseFlag(fs, "note", "why, for people (default: rollback to version N)")
	force := fs.Bool("force", false, "write it even if active keys, tenants or accounts lose their plan")
	return func(e env, t *keyTable, args []string) error {
		v, err := config.ParseCount(args[0]) // as --version reads it
		if err != nil || v < 1 {
			return fmt.Errorf("%w: config rollback: %q: want a version, 1 or more (bucketgate config history lists them)", errUsage, args[0])
		}
		s, _, err := t.readConfig(e.ctx, registry.VersionID(v))
		if errors.Is(err, errNoItem) {
			return fmt.Errorf("%w: table %s holds no version %d (bucketgate config history lists them)", errNoItem, t.name, v)
		} else if err != nil {
			return err
		}
		cfg, err := s.Load()
		if err != nil {
			return fmt.Errorf("%w: nothing written", err)
		}
		if *note == "" {
			*note = text(fmt.Sprintf("rollback to version %d", v))
		}
		w, err := t.writeConfig(e.ctx, s.Document, cfg, string(*note), *force, warnTo(e))
		if err != nil {
			return err
		}
		// Stored before put refused one, or by hand: put's refusal would keep an incident's
		// rollback from the version that worked.
		if line, what := lineOfKey([]byte(s.Document)); line > 0 {
			warnTo(e)(fmt.Sprintf("line %d of version %d holds %s, which the version in force holds now as it is, for every function to read: config put a version without it", line, v, what))
		}
		reportWrite(e, t, w)
		return nil
	}
}

// readDocument reads the document in the file at path, or stdin for "-", up to the
// first byte past what DynamoDB could store.
func readDocument(stdin io.Reader, path string) ([]byte, error) {
	r := stdin
	if path != "-" {
		f, err := os.Open(path)
		if err != nil {
			return nil, err
		}
		defer f.Close()
		r = f
	}
	doc, err := io.ReadAll(io.LimitReader(r, maxItemBytes+1))
	if err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	if len(doc) > maxItemBytes {
		return nil, fmt.Errorf("%s: more than %d bytes: a registry item holds at most 400 KB, and the document at most %d bytes: nothing written", path, maxItemBytes, config.MaxDocument)
	}
	return doc, nil
}

// lineOfKey returns the line, counted from 1, of the first API key bucketgate made, or
// what may be one or part of one, that doc shows (keyShown: what config show masks), in
// a comment or a value alike, and what it shows; 0 for none. config put refuses what
// config show would mask, so that show prints every document put takes as it is.
func lineOfKey(doc []byte) (int, string) {
	for i, line := range strings.Split(string(doc), "\n") {
		if what := keyShown(line); what != "" {
			return i + 1, what
		}
	}
	return 0, ""
}

// lineOfMask returns the line, counted from 1, of the first mask (madekey.Prefix and
// "...") that doc holds, which config show prints in place of what may be an API key
// bucketgate made; 0 for none. config put refuses it: config show's output of a document
// holding a key, put back, would say bg_... where the key was (a route's path changed).
func lineOfMask(doc []byte) int {
	for i, line := range strings.Split(string(doc), "\n") {
		if strings.Contains(line, madekey.Prefix+"...") {
			return i + 1
		}
	}
	return 0
}

// maxItemBytes is the largest DynamoDB item, in bytes.
const maxItemBytes = 400 * 1024

// reportWrite says on stderr what writeConfig wrote.
func reportWrite(e env, t *keyTable, w written) {
	switch {
	case w.unchanged:
		fmt.Fprintf(e.stderr, "unchanged: version %d of table %s is this document; nothing written\n", w.version, t.name)
	case w.previous == 0:
		fmt.Fprintf(e.stderr, "wrote version %d to table %s (the functions used their own document until now): every function applies it within its cache period (%s)\n",
			w.version, t.name, settings.EnvRegistryCacheMS)
	default:
		fmt.Fprintf(e.stderr, "wrote version %d to table %s (was %d): every function applies it within its cache period (%s)\n",
			w.version, t.name, w.previous, settings.EnvRegistryCacheMS)
	}
}

// warnTo returns a function printing a warning to e's stderr.
func warnTo(e env) func(string) {
	return func(msg string) { fmt.Fprintf(e.stderr, "warning: %s\n", msg) }
}

// updated is when s was written, RFC 3339 UTC, or "" when unknown.
func updated(s registry.StoredConfig) string {
	if s.UpdatedAt.IsZero() {
		return ""
	}
	return s.UpdatedAt.UTC().Format(time.RFC3339)
}

// noteText is a note for a line of text: ": note", or "" for none.
func noteText(note string) string {
	if note == "" {
		return ""
	}
	return ": " + oneLine(note)
}
