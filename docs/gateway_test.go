package docs_test

import (
	"bufio"
	"context"
	"net/http"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/bucketgate/bucketgate/internal/guard"
	"github.com/bucketgate/bucketgate/internal/testkit/redistest"
)

// gatewayDoc shows the sessions of make run on a real Redis and with unknown keys
// refused, and gatewaySessionStarts start their blocks.
const gatewayDoc = "docs/api-gateway.md"

var gatewaySessionStarts = []string{"$ redis-server --port", "$ RATE_LIMIT_CONFIG="}

// Patterns of the commands the sessions show, which the test replays.
var (
	loopOf   = regexp.MustCompile(`^for i in \$\(seq (\d+)\); do (curl .*); done; echo$`)
	redisCLI = regexp.MustCompile(`^redis-cli -p \d+ (.+)$`)
	usageDay = regexp.MustCompile(`(?m)^u:(\d+):`)
)

// The sessions of make run in docs/api-gateway.md (on a real Redis, and what happens
// when it goes away; unknown keys refused) are what the local gateway and Redis answer:
// replayed against bucketgate-local serve and a real redis-server, each command prints
// what the doc shows, but for what moves with the clock (the Date header, a bucket's
// tokens and time, the day of the usage counter and the key's expiry with it).
func TestGatewaySessions(t *testing.T) {
	for _, start := range gatewaySessionStarts {
		t.Run(strings.Fields(start)[1], func(t *testing.T) {
			var (
				g       *gateway
				srv     *redistest.Server
				docDay  int // the usage counter's day the doc shows
				realDay int // and the one Redis holds
			)
			for _, c := range sessionBlock(t, gatewayDoc, start) {
				cmd, _, _ := strings.Cut(c.command, "  #")
				cmd = strings.TrimSpace(cmd)
				got, want := "", c.output
				switch {
				case strings.HasPrefix(cmd, "redis-server "):
					srv = redistest.Start(t)
					continue
				case strings.HasSuffix(cmd, " make run"):
					var env []string
					for _, w := range words(cmd, true)[0] {
						switch name, _, isVar := strings.Cut(w, "="); {
						case !isVar || name == "PORT": // make run, on a free port
						case name == "REDIS_ADDR":
							env = append(env, "REDIS_ADDR="+srv.Addr)
						default:
							env = append(env, w)
						}
					}
					g = startGateway(t, env...)
					continue
				case loopOf.MatchString(cmd):
					m := loopOf.FindStringSubmatch(cmd)
					n, _ := strconv.Atoi(m[1])
					// Redis's own clock runs: a loop slower than a second refilled a token
					// of the bucket of 1 a second. Such a loop is run again, on an emptied
					// Redis once the deny cache has forgotten its 429, three times at most.
					for try := 1; ; try++ {
						began := time.Now()
						for range n {
							out, _ := curl(t, g, m[2])
							got += out
						}
						took := time.Since(began)
						if undated(got) == undated(want) || took < time.Second || srv == nil {
							break
						}
						if try == 3 {
							t.Skipf("%s took %v on this machine three times, and a bucket of 1 token a second refilled meanwhile: %q", cmd, took, got)
						}
						if _, err := srv.Command(context.Background(), "FLUSHALL"); err != nil {
							t.Fatal(err)
						}
						time.Sleep(guard.DenyCacheMaxAge + 100*time.Millisecond)
						got = ""
					}
				case strings.HasPrefix(cmd, "curl "):
					if srv != nil && !srv.Running() {
						// A person types this more than a second after the 429: the deny
						// cache has forgotten it, and the request goes to Redis.
						time.Sleep(guard.DenyCacheMaxAge + 100*time.Millisecond)
					}
					// A loaded machine's Redis has taken longer than the gateway's
					// slowMachineTimeout: a 503 where the doc shows another answer is
					// asked again, twice at most, and the log says so.
					var status int
					got, status = curl(t, g, cmd)
					for try := 1; try <= 2 && status == http.StatusServiceUnavailable && undated(got) != undated(want); try++ {
						t.Logf("%s: 503 (Redis slower than %s on this machine), asked again", cmd, slowMachineTimeout)
						got, status = curl(t, g, cmd)
					}
				case cmd == "kill $RS":
					srv.Stop()
					continue
				case redisCLI.MatchString(cmd):
					args := words(redisCLI.FindStringSubmatch(cmd)[1], true)[0]
					if args[0] == "--scan" {
						args = []string{"KEYS", "*"}
					}
					var err error
					if got, err = srv.Command(context.Background(), args...); err != nil {
						t.Fatal(err)
					}
					switch strings.ToUpper(args[0]) {
					case "HGETALL":
						docDay, realDay = dayOf(t, want), dayOf(t, got)
						got, want = stillFields(got), stillFields(want)
					case "PEXPIRETIME": // the doc's expiry, moved by the days between
						shown, err := strconv.ParseInt(strings.TrimSpace(want), 10, 64)
						if err != nil || docDay == 0 {
							t.Fatalf("%s: PEXPIRETIME shows %q after the day %d", gatewayDoc, want, docDay)
						}
						want = strconv.FormatInt(shown+int64(realDay-docDay)*24*time.Hour.Milliseconds(), 10)
					}
				default:
					t.Fatalf("%s: the session runs %q, which no test replays", gatewayDoc, c.command)
				}
				if undated(got) != undated(want) {
					t.Errorf("%s prints:\n%s\n%s shows:\n%s", cmd, got, gatewayDoc, want)
				}
			}
			if g == nil {
				t.Fatalf("%s: the session starts no gateway", gatewayDoc)
			}
		})
	}
}

// curl answers the curl command line cmd, against g in place of the host and port it
// names, as curl prints it: with -w '%{http_code}...' that alone, with -i the whole
// answer (rawAnswer), else the body; and the answer's status. It knows the options the
// docs use: -s, -i, -si, -o /dev/null, -w and -H.
func curl(t *testing.T, g *gateway, cmd string) (out string, status int) {
	t.Helper()
	args := words(cmd, true)[0][1:]
	var (
		headers          []string
		format, url      string
		include, discard bool
	)
	for i := 0; i < len(args); i++ {
		switch a := args[i]; {
		case a == "-s":
		case a == "-i" || a == "-si":
			include = true
		case a == "-o" && i+1 < len(args) && args[i+1] == "/dev/null":
			discard, i = true, i+1
		case (a == "-w" || a == "-H") && i+1 < len(args):
			if a == "-w" {
				format = args[i+1]
			} else {
				headers = append(headers, args[i+1])
			}
			i++
		case !strings.HasPrefix(a, "-") && url == "":
			url = a
		default:
			t.Fatalf("%s: no test replays curl's %s", cmd, a)
		}
	}
	_, path, ok := strings.Cut(url, "/")
	if !ok || !strings.HasPrefix(url, "localhost:") {
		t.Fatalf("%s: curl of %q: want localhost:PORT/path", cmd, url)
	}
	addr := strings.TrimPrefix(g.url, "http://")
	answer := rawAnswer(t, addr, "/"+path, headers...)
	head, body, _ := strings.Cut(answer, "\n\n")
	resp, err := http.ReadResponse(bufio.NewReader(strings.NewReader(head+"\n\n")), nil)
	if err != nil {
		t.Fatalf("%s: %v", cmd, err)
	}
	switch {
	case format != "":
		return strings.ReplaceAll(strings.ReplaceAll(format, "%{http_code}", strconv.Itoa(resp.StatusCode)), `\n`, "\n"), resp.StatusCode
	case discard:
		return "", resp.StatusCode
	case include:
		return answer, resp.StatusCode
	}
	return body, resp.StatusCode
}

// undated is text without its Date header line, in trimLines' form.
func undated(text string) string {
	var lines []string
	for line := range strings.Lines(trimLines(text)) {
		if !strings.HasPrefix(line, "Date: ") {
			lines = append(lines, line)
		}
	}
	return trimLines(strings.Join(lines, ""))
}

// dayOf returns the day of the usage counter u:<day>:... that an HGETALL answer lists.
func dayOf(t *testing.T, answer string) int {
	t.Helper()
	m := usageDay.FindStringSubmatch(answer)
	if m == nil {
		t.Fatalf("no usage counter u:<day>: in %q", answer)
	}
	day, _ := strconv.Atoi(m[1])
	return day
}

// stillFields is an HGETALL answer, a field and its value a line each, with the values
// that move with the clock (a bucket's tokens and time) as "<moves>", and the day of
// the usage counters as "<day>".
func stillFields(answer string) string {
	lines := strings.Split(strings.TrimSpace(answer), "\n")
	for i := 0; i+1 < len(lines); i += 2 {
		if strings.HasSuffix(lines[i], ":tokens") || strings.HasSuffix(lines[i], ":ts") {
			lines[i+1] = "<moves>"
		}
		lines[i] = usageDay.ReplaceAllString(lines[i], "u:<day>:")
	}
	return strings.Join(lines, "\n")
}
