package main

import (
	"encoding/csv"
	"errors"
	"flag"
	"fmt"
	"io"
	"strconv"
	"time"

	"github.com/bucketgate/bucketgate/checkapi"
	"github.com/bucketgate/bucketgate/checkclient"
	"github.com/bucketgate/bucketgate/internal/check"
)

const usageUsage = `  bucketgate usage [--from DATE] [--to DATE] [--json | --csv] IDENTITY

IDENTITY is as for buckets: an API key (sent as key:<digest>; - reads it from stdin),
key:<digest>, acct:<name>, an IP address or ip:<address>, ip:unknown, or tenant:<key>
(tenant:<digest> for one of the registry table, REGISTRY_TABLE's or the stack's); a key of an account counts in its
account's usage, which it prints. It prints the
identity's usage per UTC day from --from to --to (YYYY-MM-DD; --to defaults to today, by
Redis's clock, --from to --to), within the days the function keeps
(USAGE_RETENTION_DAYS): the checks allowed, the checks limited and the cost the allowed
ones took (a reserve's estimate corrected by its settle on the day of the settle: a day
may show a cost below zero when it settled reserves of earlier days), then their total. --json prints the check function's answer, --csv a header
row (date,allowed,limited,cost) and a row per day, with no identity: of a key of an
account, the account's figures (as a note on stderr says). It invokes the operator function as
buckets does (--function, --stack).
`

// runUsage runs bucketgate usage.
func runUsage(e env, args []string) error {
	fs := flag.NewFlagSet("usage", flag.ContinueOnError)
	fs.SetOutput(io.Discard)
	function := nameFlag(fs, "function", "the operator function: a name, name:alias or ARN (default: $"+envCheckFunction+", else the stack's "+outputOperatorName+", else "+defaultCheckFunction+")")
	e.addStack(fs)
	from, to := new(day), new(day)
	fs.Var(from, "from", "the first day, YYYY-MM-DD (default: --to)")
	fs.Var(to, "to", "the last day, YYYY-MM-DD (default: today, UTC)")
	asJSON := fs.Bool("json", false, "print the answer as JSON")
	asCSV := fs.Bool("csv", false, "print CSV: date,allowed,limited,cost and a row per day")
	positional, err := parse(fs, args, 1)
	if err != nil {
		return err
	}
	if *asJSON && *asCSV {
		return fmt.Errorf("%w: --json or --csv, not both", usageOf(fs))
	}
	if _, _, err := namedFunction(e, string(*function)); err != nil {
		return err
	}
	if err := checkDays(string(*from), string(*to)); err != nil {
		return fmt.Errorf("%w: %w", usageOf(fs), err)
	}
	s, err := e.settings()
	if err != nil {
		return err
	}
	st := e.stack() // read once, for the table and the function alike
	t, err := resolveTarget(e, s, st, positional[0])
	if err != nil {
		return err
	}
	req := t.req
	req.Op, req.From, req.To = checkapi.OpUsage, string(*from), string(*to)
	op, err := operatorOf(e, st, string(*function))
	if err != nil {
		return err
	}
	if err := noteInactiveKey(e, s, st, t); err != nil {
		return err
	}
	u, err := op.client.Usage(e.ctx, req)
	var fe *checkclient.FunctionError
	switch {
	case errors.As(err, &fe) && fe.Type == checkapi.ErrorTypeUnavailable: // its message says why: Redis did not answer, holds what is not usage, or the registry failed
		return fmt.Errorf("%s could not report the usage: %s", op.name, fe.Message)
	case err != nil:
		return op.explain(err)
	}
	whose(e, "the usage of %s is that of %s", t.id, u.Identity) // the CSV has no identity column
	switch {
	case *asJSON:
		return writeJSON(e.stdout, u)
	case *asCSV:
		return writeUsageCSV(e.stdout, u)
	}
	return writeUsage(e.stdout, u)
}

// writeUsage prints u: the identity, then a row per day and the total, aligned.
func writeUsage(w io.Writer, u checkapi.Usage) error {
	if err := writeAttributes(w, [][2]string{{"identity", u.Identity}}); err != nil {
		return err
	}
	tw := newTable(w)
	fmt.Fprintln(tw, "DATE\tALLOWED\tLIMITED\tCOST")
	for _, d := range u.Days {
		fmt.Fprintf(tw, "%s\t%d\t%d\t%d\n", d.Date, d.Allowed, d.Limited, d.Cost)
	}
	fmt.Fprintf(tw, "total\t%d\t%d\t%d\n", u.Total.Allowed, u.Total.Limited, u.Total.Cost)
	return tw.Flush()
}

// writeUsageCSV prints u's days as CSV under the header date,allowed,limited,cost.
func writeUsageCSV(w io.Writer, u checkapi.Usage) error {
	cw := csv.NewWriter(w)
	rows := [][]string{{"date", "allowed", "limited", "cost"}}
	for _, d := range u.Days {
		rows = append(rows, []string{d.Date, strconv.FormatInt(d.Allowed, 10), strconv.FormatInt(d.Limited, 10), strconv.FormatInt(d.Cost, 10)})
	}
	return cw.WriteAll(rows)
}

// day is the value of --from or --to: given, never empty (a script's unset variable:
// --from "$START"), which was taken as not given, and reported today alone. checkDays
// reads it.
type day string

func (d *day) String() string { return string(*d) }

// Set takes v unless it is empty.
func (d *day) Set(v string) error {
	if v == "" {
		return errors.New("empty: want a day as YYYY-MM-DD, or leave the flag out for the default")
	}
	*d = day(v)
	return nil
}

// checkDays returns what is wrong with --from and --to, which the check function would
// refuse whatever its day (the caller makes it a usage error): a day not written
// YYYY-MM-DD (check.ParseDay, the function's own reading), or --from after --to. A day
// after today or beyond the days kept is the function's to say, by Redis's clock.
func checkDays(from, to string) error {
	var days [2]time.Time
	for i, d := range []struct{ flag, day string }{{"--from", from}, {"--to", to}} {
		if d.day == "" {
			continue
		}
		var err error
		if days[i], err = check.ParseDay(d.day); err != nil {
			return fmt.Errorf("%s %w", d.flag, err)
		}
	}
	if from != "" && to != "" && days[0].After(days[1]) {
		return fmt.Errorf("--from %s is after --to %s: the days are reversed", from, to)
	}
	return nil
}
