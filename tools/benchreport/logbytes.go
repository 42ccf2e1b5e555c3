package benchreport

import (
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/service/dynamodb"

	"github.com/bucketgate/bucketgate/internal/testkit/logbytes"
)

// goalLogBytes is the most bytes an allowed authorizer invocation may write to
// CloudWatch Logs at the template's defaults, on average over a busy instance,
// Lambda's lines included (issue 30).
const goalLogBytes = 250

// LogBytesPlan is item 11: the rates of one instance measured, the one the headline is
// for (a busy instance), and the seconds measured at each.
type LogBytesPlan struct {
	Rates    []int
	Headline int
	Seconds  int
}

// LogBytes is item 11: the bytes per authorizer invocation, by levels, outcome and rate.
type LogBytes struct {
	Plan    LogBytesPlan
	Results []logbytes.Result
}

// logBytesLevels are the levels item 11 measures, in the order of its line.
var logBytesLevels = []logbytes.Levels{logbytes.Defaults, logbytes.Debug}

// MeasureLogBytes runs plan's cases on the registry table of client (dynalite's, its
// environment set for the functions' AWS SDK) and returns them.
func MeasureLogBytes(t testing.TB, client *dynamodb.Client, plan LogBytesPlan) LogBytes {
	f := logbytes.NewFixture(t, client)
	lb := LogBytes{Plan: plan}
	for _, levels := range logBytesLevels {
		for _, limited := range []bool{false, true} {
			for _, rate := range plan.Rates {
				lb.Results = append(lb.Results, f.Measure(t, logbytes.Case{Levels: levels, Limited: limited, Rate: rate, Seconds: plan.Seconds}))
			}
		}
	}
	return lb
}

// result returns the measurement of levels, outcome and rate; the zero Result if none.
func (lb LogBytes) result(levels logbytes.Levels, limited bool, rate int) logbytes.Result {
	for _, r := range lb.Results {
		if r.Levels == levels && r.Limited == limited && r.Rate == rate {
			return r
		}
	}
	return logbytes.Result{}
}

// headline returns the bytes per invocation at the headline rate.
func (lb LogBytes) headline(levels logbytes.Levels, limited bool) float64 {
	return lb.result(levels, limited, lb.Plan.Headline).PerInvocation()
}

// Line is item 11 in one line, issue 30's form: the headline rate's bytes.
func (lb LogBytes) Line() string {
	return fmt.Sprintf("log bytes/invocation: allowed %.0f, limited %.0f (defaults); allowed %.0f, limited %.0f (DEBUG)",
		lb.headline(logbytes.Defaults, false), lb.headline(logbytes.Defaults, true), lb.headline(logbytes.Debug, false), lb.headline(logbytes.Debug, true))
}

// Met says whether an allowed invocation at the defaults meets the goal, every
// invocation's metrics written.
func (lb LogBytes) Met() bool {
	for _, r := range lb.Results {
		if r.Written != r.Invocations {
			return false
		}
	}
	return len(lb.Results) > 0 && lb.headline(logbytes.Defaults, false) <= goalLogBytes
}

// Section writes item 11 through p.
func (lb LogBytes) Section(p func(format string, args ...any)) {
	pl := lb.Plan
	p("## 11. Log bytes per invocation\n\n```\n%s\n```\n\n", lb.Line())
	p("What an authorizer invocation costs in CloudWatch Logs, which bills every byte a function writes: its EMF\n")
	p("metric lines (stdout), its log lines (stderr) and the lines Lambda writes for it. One instance as Lambda\n")
	p("runs it (`app.Build`, the template's environment: a registry table on the run's dynalite, the stack's name)\n")
	p("serves one registered API key at a steady rate, allowed (a plan with room for every request) or limited (a\n")
	p("spent plan: the deny cache answers, as it answers most requests after the last token); %d s measured after a\n", pl.Seconds)
	p("warm-up, on its own clock, so that a rate of 1,000 a second takes no second here (internal/testkit/logbytes).\n")
	p("The line above is at %d requests a second: a busy instance, one request every %v. Defaults: the template's\n", pl.Headline, time.Second/time.Duration(max(pl.Headline, 1)))
	p("`LogLevel` INFO and `SystemLogLevel` WARN; DEBUG: `LogLevel` DEBUG. Lambda's lines are counted, not measured:\n")
	platform, _ := logbytes.PlatformBytes("INFO")
	p("at `SystemLogLevel` WARN it writes none per invocation; at INFO its `platform.start` and `platform.report`\n")
	p("(%d bytes in the JSON format, as AWS documents them) would add %d bytes to every figure. A line's newline is\n", platform, platform)
	p("not counted: a log event holds none. Goal: an allowed request at the defaults, at most %d bytes.\n\n", goalLogBytes)
	p("| bytes per invocation |")
	for _, rate := range pl.Rates {
		p(" %d/s |", rate)
	}
	p("\n|---|")
	for range pl.Rates {
		p("---|")
	}
	p("\n")
	for _, levels := range logBytesLevels {
		for _, limited := range []bool{false, true} {
			name := "defaults"
			if levels == logbytes.Debug {
				name = "DEBUG"
			}
			outcome := "allowed"
			if limited {
				outcome = "limited"
			}
			p("| %s, %s |", outcome, name)
			for _, rate := range pl.Rates {
				r := lb.result(levels, limited, rate)
				n := float64(max(r.Invocations, 1))
				p(" %.1f (%.1f + %.1f) |", r.PerInvocation(), float64(r.EMF)/n, float64(r.Logs)/n)
			}
			p("\n")
		}
	}
	p("\nIn parentheses, per invocation: the metrics, then the log lines. The metrics are each instance's sums,\n")
	p("written at most once a second while traffic flows (`METRICS_FLUSH_MS`, 1000 by default): the first\n")
	p("invocation a second or more after the last write writes what the invocations since have gathered, a line\n")
	p("per outcome with every `RedisLatency` value (100 to a line, the embedded metric format's limit). An\n")
	p("instance serving fewer than one request a second writes each at once, as before (the 1/s column). At\n")
	p("the defaults an allowed request writes no log line; a limited one writes its decision line, which the\n")
	p("Contributor Insights rule of the top limited identities reads.\n\n")
	h := lb.result(logbytes.Defaults, false, pl.Headline)
	p("Every invocation's decision is counted in the metrics written (%d of %d at %d/s). What waits between two\n", h.Written, h.Invocations, pl.Headline)
	p("writes is at most a second of an instance's requests: when Lambda freezes the instance it waits for the\n")
	p("next invocation, which writes it under its own minute; when Lambda ends the instance the function writes\n")
	p("it at the SIGTERM Lambda sends first. Here the instance served %d more requests, one second cut short, and\n", pl.Headline-1)
	p("stopped: %d of them were held, for the write at SIGTERM.\n\n", h.Held)
	p("The metrics of the last second at %d/s, allowed, at the defaults:\n\n```\n%s```\n", pl.Headline, truncateLine(h.Last, 600))
}

// truncateLine returns s with each line cut to n bytes, marked where cut.
func truncateLine(s string, n int) string {
	var b strings.Builder
	for line := range strings.Lines(s) {
		line = strings.TrimSuffix(line, "\n")
		if len(line) > n {
			line = line[:n] + fmt.Sprintf("... (%d bytes)", len(line))
		}
		b.WriteString(line + "\n")
	}
	return b.String()
}
