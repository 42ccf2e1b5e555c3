package main

import (
	"encoding/json"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/bucketgate/bucketgate"
	"github.com/bucketgate/bucketgate/checkapi"
	"github.com/bucketgate/bucketgate/internal/bucket"
)

// bucketgate usage reports an identity's checks per day through the check function, as
// a table, JSON or CSV; a range the function cannot answer is its refusal, naming the
// flag's field, and a Redis that is gone, or that holds what is not a day's count, is
// said so.
func TestUsageCommand(t *testing.T) {
	d, srv := newDeployment(t)
	key := strings.TrimSpace(d.ok("keys", "create", "--plan", "gold"))
	id := "key:" + bucketgate.KeyDigest(key)
	for range 3 {
		d.authz.decide(t, key)
	}
	var u checkapi.Usage
	if err := json.Unmarshal([]byte(d.ok("usage", "--json", key)), &u); err != nil {
		t.Fatal(err)
	}
	today := u.To // Redis's day
	if u.Identity != id || u.From != today || len(u.Days) != 1 || u.Total != (checkapi.UsageCounts{Allowed: 3, Cost: 3}) {
		t.Fatalf("usage --json: %+v", u)
	}
	table := d.ok("usage", id)
	if want := "identity  " + id + "\nDATE        ALLOWED  LIMITED  COST\n" + today + "  3        0        3\ntotal       3        0        3\n"; table != want {
		t.Fatalf("usage:\n%s\nwant\n%s", table, want)
	}
	day, err := time.Parse(time.DateOnly, today)
	if err != nil {
		t.Fatal(err)
	}
	yesterday, longAgo := day.AddDate(0, 0, -1).Format(time.DateOnly), day.AddDate(0, 0, -40).Format(time.DateOnly)
	if csv := d.ok("usage", "--csv", "--from", yesterday, key); csv != "date,allowed,limited,cost\n"+yesterday+",0,0,0\n"+today+",3,0,3\n" {
		t.Fatalf("usage --csv:\n%s", csv)
	}
	// The group's usage errors name the command after "usage:", as every other group's
	// do ("usage: config put: want 1 argument(s)"): "usage: want 1 argument(s)" named
	// none.
	d.fails(exitUsage, "bucketgate: usage: usage: --json or --csv, not both\n", "usage", "--json", "--csv", key)
	d.fails(exitUsage, "bucketgate: usage: usage: want 1 argument(s), got 0\n", "usage")
	d.fails(exitUsage, "bucketgate: usage: usage: flag provided but not defined: -day\n", "usage", "--day", "2026-01-01", key)
	for _, tc := range []struct {
		name string
		args []string
		want string
	}{
		{"an empty --from", []string{"--from", ""}, `bucketgate: usage: usage: invalid value "" for flag -from: empty: want a day as YYYY-MM-DD, or leave the flag out for the default`},
		{"an empty --to", []string{"--to=", "--json"}, `for flag -to: empty: want a day as YYYY-MM-DD`},
		{"a blank --from", []string{"--from", " "}, `bucketgate: usage: usage: --from " ": want a day as YYYY-MM-DD`},
		{"a month 13", []string{"--from", "2026-13-01"}, `bucketgate: usage: usage: --from "2026-13-01": want a day as YYYY-MM-DD, such as 2026-11-25`},
		{"a day unpadded", []string{"--to", "2026-1-5"}, `bucketgate: usage: usage: --to "2026-1-5": want a day as YYYY-MM-DD`},
		{"a time", []string{"--to", today + "T00:00:00Z"}, `bucketgate: usage: usage: --to "` + today + `T00:00:00Z": want a day as YYYY-MM-DD`},
		{"reversed", []string{"--from", today, "--to", yesterday}, "bucketgate: usage: usage: --from " + today + " is after --to " + yesterday + ": the days are reversed"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			d.t = t
			d.fails(exitUsage, tc.want, append(append([]string{"usage"}, tc.args...), key)...)
		})
	}
	d.t = t
	d.fails(exitError, "from: "+longAgo+" is beyond the 35 days of usage kept", "usage", "--from", longAgo, key)

	// A day Redis holds that is not bucketgate's count: said so, not taken for a Redis
	// that did not answer, which a retry would mend.
	if _, err := srv.Command(t.Context(), "HSET", bucket.UsageKey(id), strconv.FormatInt(day.AddDate(0, 0, -1).Unix()/86400, 10), "garbage"); err != nil {
		t.Fatal(err)
	}
	d.fails(exitError, "Redis holds what is not bucketgate's usage", "usage", "--from", yesterday, key)
	if _, _, stderr := d.run("usage", "--from", yesterday, key); strings.Contains(stderr, "did not answer") {
		t.Fatalf("usage of a day Redis holds garbage for: %s", stderr)
	}
	srv.Close()
	d.fails(exitError, "could not report the usage: usage of "+id+": Redis did not answer", "usage", key)
}
