package docs_test

import (
	"bufio"
	"fmt"
	"io"
	"net"
	"net/http"
	"os/exec"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/alicebob/miniredis/v2"

	"github.com/bucketgate/bucketgate/internal/guard"
)

// quotaSessionDoc shows the session of a monthly quota in two blocks, one per
// terminal, and quotaSessionStarts start them.
const quotaSessionDoc = "docs/keys.md"

var quotaSessionStarts = []string{"$ export RATE_LIMIT_CONFIG=", "$ for i in $(seq"}

// quotaSessionTime is Redis's clock, held still, while the session is replayed: the
// session shows its figures.
var quotaSessionTime = time.Date(2026, 11, 25, 17, 36, 50, 0, time.UTC)

// Patterns of the commands the session shows, which the test replays.
var (
	curlLoop   = regexp.MustCompile(`^for i in \$\(seq (\d+)\); do curl -s -o /dev/null -w '%\{http_code\} ' localhost:8080(/\S*); done; echo$`)
	curlGrep   = regexp.MustCompile(`^curl -si localhost:8080(/\S*) \| grep -E '(.+)'$`)
	localExp   = regexp.MustCompile(`^export (AWS_\S+ .*)$`)
	cliCommand = regexp.MustCompile(`^go run \./cmd/bucketgate (.+)$`)
)

// The session of a monthly quota (docs/keys.md) is what make run and the CLI print:
// replayed against the real local gateway (bucketgate-local serve, with the session's
// configuration) and the real CLI, on a Redis whose clock is held at quotaSessionTime,
// each command's output is the doc's, line for line.
func TestQuotaSession(t *testing.T) {
	var block []sessionCommand
	for _, start := range quotaSessionStarts {
		block = append(block, sessionBlock(t, quotaSessionDoc, start)...)
	}
	mr := miniredis.RunT(t)
	mr.SetTime(quotaSessionTime)
	var g *gateway
	var cliEnv []string
	for _, c := range block {
		got, check := "", true
		if loop := curlLoop.FindStringSubmatch(c.command); loop != nil {
			n, _ := strconv.Atoi(loop[1])
			var codes []string
			for range n {
				codes = append(codes, strconv.Itoa(get(t, g.url+loop[2]).StatusCode))
			}
			got = strings.Join(codes, " ")
		} else if grep := curlGrep.FindStringSubmatch(c.command); grep != nil {
			// A person types this command more than a second after the loop: the
			// gateway's deny cache has forgotten the denial its last check foresaw, and
			// Redis answers (and counts) this one.
			time.Sleep(guard.DenyCacheMaxAge + 100*time.Millisecond)
			got = headerLines(t, strings.TrimPrefix(g.url, "http://"), grep[1], regexp.MustCompile(grep[2]))
		} else if exp := localExp.FindStringSubmatch(c.command); exp != nil {
			cliEnv, check = strings.Fields(strings.ReplaceAll(exp[1], "http://127.0.0.1:8080", g.url)), false
		} else if cli := cliCommand.FindStringSubmatch(c.command); cli != nil {
			run := exec.Command(command(t, "bucketgate"), strings.Fields(cli[1])...)
			run.Env = cleanEnv(cliEnv...)
			out, err := run.CombinedOutput()
			if err != nil {
				t.Fatalf("%s: %v\n%s", c.command, err, out)
			}
			got = string(out)
		} else if config, ok := strings.CutPrefix(c.command, "export RATE_LIMIT_CONFIG="); ok {
			config = strings.TrimSuffix(strings.TrimPrefix(config, "'"), "'")
			g, check = startGateway(t, "RATE_LIMIT_CONFIG="+config, "REDIS_ADDR="+mr.Addr()), false
		} else if c.command != "make run" { // make run: the gateway, started with the configuration
			t.Fatalf("%s: the session runs %q, which no test replays", quotaSessionDoc, c.command)
		}
		if check && trimLines(got) != trimLines(c.output) {
			t.Errorf("%s prints:\n%s\n%s shows:\n%s", c.command, got, quotaSessionDoc, c.output)
		}
	}
	if g == nil {
		t.Fatalf("%s: the session starts no gateway", quotaSessionDoc)
	}
}

// sessionCommand is one command of a session block and the lines shown after it.
type sessionCommand struct{ command, output string }

// sessionBlock returns the commands of the code block of doc whose first line starts
// with start, each with what it printed; a command ends at the next "$ " or the block's
// end, and "..." stands for output the replay does not check.
func sessionBlock(t *testing.T, doc, start string) []sessionCommand {
	t.Helper()
	_, after, ok := strings.Cut(readFile(t, doc), "```\n"+start)
	if !ok {
		t.Fatalf("%s: no block starting %q", doc, start)
	}
	block, _, ok := strings.Cut(start+after, "\n```\n")
	if !ok {
		t.Fatalf("%s: the block starting %q does not end", doc, start)
	}
	var cmds []sessionCommand
	for line := range strings.Lines(block + "\n") {
		switch {
		case strings.HasPrefix(line, "$ "):
			cmds = append(cmds, sessionCommand{command: strings.TrimSpace(strings.TrimPrefix(line, "$ "))})
		case len(cmds) == 0:
			t.Fatalf("%s: %q before any command", doc, line)
		case strings.TrimSpace(line) == "...":
		default:
			cmds[len(cmds)-1].output += line
		}
	}
	return cmds
}

// headerLines is what curl -si | grep -E pick prints of a GET of path from the server at
// addr (host:port): its status line and header lines as they came, the lines pick
// matches.
func headerLines(t *testing.T, addr, path string, pick *regexp.Regexp) string {
	t.Helper()
	head, _, _ := strings.Cut(rawAnswer(t, addr, path), "\n\n")
	var out string
	for line := range strings.Lines(head + "\n") {
		if line = strings.TrimRight(line, "\n"); pick.MatchString(line) {
			out += line + "\n"
		}
	}
	return out
}

// rawAnswer is what curl -si prints of a GET of path, with the header lines given
// ("X-API-Key: k"), from the server at addr (host:port): its status line and header
// lines as they came, a blank line and the body, with line feeds for CRLF. Read from
// the connection, as curl shows it: a Go client would write every name in its
// canonical case and in its own order.
func rawAnswer(t *testing.T, addr, path string, header ...string) string {
	t.Helper()
	conn, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	req := fmt.Sprintf("GET %s HTTP/1.1\r\nHost: %s\r\n", path, addr)
	for _, h := range header {
		req += h + "\r\n"
	}
	if _, err := io.WriteString(conn, req+"\r\n"); err != nil {
		t.Fatal(err)
	}
	var answer strings.Builder // what the answer's reading took from the connection: all of it
	resp, err := http.ReadResponse(bufio.NewReader(io.TeeReader(conn, &answer)), nil)
	if err == nil {
		_, err = io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
	}
	if err != nil {
		t.Fatalf("GET %s: %v", path, err)
	}
	return strings.ReplaceAll(answer.String(), "\r\n", "\n")
}

// get sends a GET to url, as curl does, and returns the answer, its body read.
func get(t *testing.T, url string) *http.Response {
	t.Helper()
	resp, err := http.Get(url)
	if err != nil {
		t.Fatal(err)
	}
	_, _ = io.Copy(io.Discard, resp.Body)
	resp.Body.Close()
	return resp
}

// trimLines is text without the blanks at the end of its lines and of itself.
func trimLines(text string) string {
	var lines []string
	for line := range strings.Lines(text) {
		lines = append(lines, strings.TrimRight(line, " \t\r\n"))
	}
	return strings.TrimRight(strings.Join(lines, "\n"), "\n")
}

// A newcomer who runs the README's loop (eleven requests in a row, the eleventh 429) and
// then bucketgate usage sees no check limited: the gateway's deny cache answered the
// eleventh without Redis. The paragraph of docs/keys.md that tells usage's columns, where
// the README sends them for a usage report, says so.
func TestUsageLeavesOutTheDenyCachesDenials(t *testing.T) {
	columns := ""
	for paragraph := range strings.SplitSeq(section(t, quotaSessionDoc, "Quotas and usage of a caller: bucketgate usage"), "\n\n") {
		if strings.Contains(paragraph, "the checks limited") {
			columns = paragraph
		}
	}
	if !strings.Contains(columns, "deny cache") {
		t.Errorf("%s: the paragraph that tells usage's columns does not say that a denial the deny cache answered is not counted:\n%s", quotaSessionDoc, columns)
	}
	mr := miniredis.RunT(t)
	mr.SetTime(quotaSessionTime)
	g := startGateway(t, "REDIS_ADDR="+mr.Addr())
	var codes []string
	start := time.Now()
	for range 11 {
		req, err := http.NewRequest(http.MethodGet, g.url+"/scores", nil)
		if err != nil {
			t.Fatal(err)
		}
		req.Header.Set("X-API-Key", "k")
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		codes = append(codes, strconv.Itoa(resp.StatusCode))
	}
	took := time.Since(start)
	if got, want := strings.Join(codes, " "), strings.Repeat("200 ", 10)+"429"; got != want {
		t.Fatalf("the README's loop: %s, want %s", got, want)
	}
	run := exec.Command(command(t, "bucketgate"), "usage", "--csv", "127.0.0.1")
	run.Env = cleanEnv("AWS_ENDPOINT_URL_LAMBDA="+g.url, "AWS_REGION=us-east-1", "AWS_ACCESS_KEY_ID=local", "AWS_SECRET_ACCESS_KEY=local")
	out, err := run.Output()
	if err != nil {
		t.Fatalf("bucketgate usage: %v\n%s", err, out)
	}
	want := "date,allowed,limited,cost\n2026-11-25,10,0,10\n"
	if took > guard.DenyCacheMaxAge && string(out) == "date,allowed,limited,cost\n2026-11-25,10,1,10\n" {
		// A machine this slow let the cached denial end: Redis decided the eleventh.
		t.Logf("the loop took %v, longer than a cached denial lives (%v): the eleventh counted as limited", took, guard.DenyCacheMaxAge)
		return
	}
	if string(out) != want {
		t.Errorf("bucketgate usage --csv 127.0.0.1 after the README's loop (%v):\n%s\nwant\n%s", took, out, want)
	}
}
