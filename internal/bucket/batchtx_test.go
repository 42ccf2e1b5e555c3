package bucket_test

import (
	"context"
	"errors"
	"slices"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/redis/rueidis"

	"github.com/bucketgate/bucketgate"
	"github.com/bucketgate/bucketgate/internal/bucket"
	"github.com/bucketgate/bucketgate/internal/redisconn"
	"github.com/bucketgate/bucketgate/internal/testkit/redistest"
)

// TestDecideBatchTransactionReplies: the two calls of one identity in a batch, inside
// MULTI ... EXEC, are answered by the elements of EXEC's reply in order, held to its
// length; sent again together when Redis refused to queue one (TRYAGAIN: none ran);
// each answered why when it refused one otherwise (LOADING, NOPERM, OOM: not EXEC's
// EXECABORT); answered EXEC's error when it failed otherwise; and each its own answer
// when Redis ran them outside a transaction (MULTI refused), one refused sent again only
// when no later one ran, and then without MULTI; on a cluster, sent again together when EXEC was redirected
// (none ran), and answered so when it was every time. A fake server gives the replies.
func TestDecideBatchTransactionReplies(t *testing.T) {
	const both = "*2\r\n-ERR the first ran\r\n-ERR the second ran\r\n"
	const moved = "-MOVED 1 {fake}\r\n" // {fake}: the fake's address
	tests := []struct {
		name    string
		reply   func(cmd string, execs, evalshas int32) string // the EXECs and EVALSHAs answered before
		want    []string                                       // in each call's error
		bad     bool                                           // each call's error is ErrBadReply
		execs   int32
		cluster bool // a cluster of one master (the fake), named by moved
	}{
		{"EXEC answers each call in order", func(cmd string, _, _ int32) string {
			return map[string]string{"MULTI": "+OK\r\n", "EVALSHA": "+QUEUED\r\n", "EXEC": both}[cmd]
		}, []string{"the first ran", "the second ran"}, false, 1, false},
		{"EXEC answers fewer replies than calls", func(cmd string, _, _ int32) string {
			return map[string]string{"MULTI": "+OK\r\n", "EVALSHA": "+QUEUED\r\n", "EXEC": "*1\r\n-ERR the first ran\r\n"}[cmd]
		}, nil, true, 1, false},
		{"EXEC answers more replies than calls", func(cmd string, _, _ int32) string {
			return map[string]string{"MULTI": "+OK\r\n", "EVALSHA": "+QUEUED\r\n", "EXEC": "*3\r\n:1\r\n:2\r\n:3\r\n"}[cmd]
		}, nil, true, 1, false},
		{"a call refused before queuing: both sent again together", func(cmd string, execs, evalshas int32) string {
			switch {
			case cmd == "MULTI":
				return "+OK\r\n"
			case cmd == "EVALSHA" && evalshas == 1: // the second of the first round
				return "-TRYAGAIN Multiple keys request during rehashing of slot\r\n"
			case cmd == "EVALSHA":
				return "+QUEUED\r\n"
			case execs == 0:
				return "-EXECABORT Transaction discarded because of previous errors.\r\n"
			}
			return both
		}, []string{"the first ran", "the second ran"}, false, 2, false},
		{"EXEC refused otherwise", func(cmd string, _, _ int32) string {
			return map[string]string{"MULTI": "+OK\r\n", "EVALSHA": "+QUEUED\r\n", "EXEC": "-EXECABORT Transaction discarded because of previous errors.\r\n"}[cmd]
		}, []string{"EXECABORT", "EXECABORT"}, false, 1, false},
		// A call refused before queuing for another reason (Redis loading its data, an
		// ACL without EVALSHA, a full Redis) makes EXEC answer EXECABORT: none ran, and
		// each call gets that reason, as a call alone would.
		{"a call refused while Redis loads: each gets LOADING", refusedOne(0, "-LOADING Redis is loading the dataset in memory\r\n"),
			[]string{"LOADING Redis is loading", "LOADING Redis is loading"}, false, 1, false},
		{"a call refused by the ACL: each gets NOPERM", refusedOne(1, "-NOPERM User limiter has no permissions to run the 'evalsha' command\r\n"),
			[]string{"NOPERM User limiter", "NOPERM User limiter"}, false, 1, false},
		{"a call refused on a full Redis: each gets OOM", refusedOne(0, "-OOM command not allowed when used memory > 'maxmemory'.\r\n"),
			[]string{"OOM command not allowed", "OOM command not allowed"}, false, 1, false},
		{"MULTI refused: each call ran alone", func(cmd string, _, _ int32) string {
			return map[string]string{"MULTI": "-NOPERM no MULTI for you\r\n", "EVALSHA": "-ERR ran alone\r\n", "EXEC": "-ERR EXEC without MULTI\r\n"}[cmd]
		}, []string{"ran alone", "ran alone"}, false, 1, false},
		// Without MULTI (an ACL that lacks it), a call refused (TRYAGAIN: none ran) that a
		// later call of its identity overtook is not sent again: it would run after it.
		{"MULTI refused, the first call refused and the second ran: the first not sent again", func(cmd string, _, evalshas int32) string {
			switch {
			case cmd == "MULTI":
				return "-NOPERM no MULTI for you\r\n"
			case cmd == "EVALSHA" && evalshas == 0:
				return "-TRYAGAIN Multiple keys request during rehashing of slot\r\n"
			case cmd == "EVALSHA":
				return "-ERR ran alone\r\n"
			}
			return "-ERR EXEC without MULTI\r\n"
		}, []string{"NOPERM no MULTI for you", "ran alone"}, false, 1, false},
		// Both refused are sent again, one by one, MULTI not again: rueidis follows no
		// redirection inside a transaction whose MULTI was refused.
		{"MULTI refused, both calls refused: both sent again without MULTI", func(cmd string, _, evalshas int32) string {
			switch {
			case cmd == "MULTI":
				return "-NOPERM no MULTI for you\r\n"
			case cmd == "EVALSHA" && evalshas < 2:
				return "-TRYAGAIN Multiple keys request during rehashing of slot\r\n"
			case cmd == "EVALSHA":
				return "-ERR ran alone\r\n"
			}
			return "-ERR EXEC without MULTI\r\n"
		}, []string{"ran alone", "ran alone"}, false, 1, false},
		// On a cluster, a slot that moves between the calls' queuing and EXEC makes EXEC
		// answer MOVED (or ASK): Redis discards the transaction, and rueidis sends EXEC
		// alone to the node named, which answers that no MULTI came first.
		{"EXEC redirected: both sent again together", func(cmd string, execs, _ int32) string {
			switch {
			case cmd == "MULTI":
				return "+OK\r\n"
			case cmd == "EVALSHA":
				return "+QUEUED\r\n"
			case execs == 0:
				return moved
			case execs == 1:
				return "-ERR EXEC without MULTI\r\n"
			}
			return both
		}, []string{"the first ran", "the second ran"}, false, 3, true},
		{"EXEC asked elsewhere (its slot moving): both sent again together", func(cmd string, execs, _ int32) string {
			switch {
			case cmd == "MULTI", cmd == "ASKING":
				return "+OK\r\n"
			case cmd == "EVALSHA":
				return "+QUEUED\r\n"
			case execs == 0:
				return "-ASK 1 {fake}\r\n"
			case execs == 1:
				return "-ERR EXEC without MULTI\r\n"
			}
			return both
		}, []string{"the first ran", "the second ran"}, false, 3, true},
		{"EXEC redirected after a call was refused: the one queued sent again", func(cmd string, execs, evalshas int32) string {
			switch {
			case cmd == "MULTI":
				return "+OK\r\n"
			case cmd == "EVALSHA" && evalshas == 0:
				return "-OOM command not allowed when used memory > 'maxmemory'.\r\n"
			case cmd == "EVALSHA" && evalshas == 1:
				return "+QUEUED\r\n"
			case cmd == "EVALSHA": // sent again alone
				return "-ERR the second ran\r\n"
			case execs == 0:
				return moved
			}
			return "-ERR EXEC without MULTI\r\n"
		}, []string{"OOM command not allowed", "the second ran"}, false, 2, true},
		{"EXEC redirected every time: nothing ran", func(cmd string, execs, _ int32) string {
			switch {
			case cmd == "MULTI":
				return "+OK\r\n"
			case cmd == "EVALSHA":
				return "+QUEUED\r\n"
			case execs%2 == 0:
				return moved
			}
			return "-ERR EXEC without MULTI\r\n"
		}, []string{"EXEC of a transaction redirected", "none of its calls ran"}, false, 2 * (1 + bucket.MaxTryAgains), true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var execs, evalshas atomic.Int32
			var addr atomic.Value // the fake's, once started
			start := redistest.StartFake
			if tt.cluster {
				start = redistest.StartFakeCluster
			}
			fake := start(t, func(cmd []string) string {
				name := strings.ToUpper(cmd[0])
				reply := strings.ReplaceAll(tt.reply(name, execs.Load(), evalshas.Load()), "{fake}", addr.Load().(string))
				switch name {
				case "EXEC":
					execs.Add(1)
				case "EVALSHA":
					evalshas.Add(1)
				}
				if reply == "" {
					return "-ERR unexpected " + name + "\r\n"
				}
				return reply
			})
			addr.Store(fake.Addr)
			q := bucketgate.Request{Identity: "twice", Rules: free, Cost: 1}
			_, errs := bucket.New(redistest.Client(t, fake.Addr)).DecideBatch(context.Background(), []bucketgate.Request{q, q})
			for i, err := range errs {
				switch {
				case tt.bad && !errors.Is(err, bucket.ErrBadReply):
					t.Errorf("call %d: %v, want a bad reply", i, err)
				case !tt.bad && (err == nil || !strings.Contains(err.Error(), tt.want[i])):
					t.Errorf("call %d: %v, want %q", i, err, tt.want[i])
				}
			}
			if got := execs.Load(); got != tt.execs {
				t.Errorf("%d EXECs, want %d", got, tt.execs)
			}
		})
	}
}

// refusedOne is the reply of a server that queues the calls of a transaction but the
// one of index refused (from 0), which it refuses with reply, and aborts EXEC.
func refusedOne(refused int32, reply string) func(cmd string, execs, evalshas int32) string {
	return func(cmd string, _, evalshas int32) string {
		switch {
		case cmd == "MULTI":
			return "+OK\r\n"
		case cmd == "EVALSHA" && evalshas == refused:
			return reply
		case cmd == "EVALSHA":
			return "+QUEUED\r\n"
		case cmd == "EXEC":
			return "-EXECABORT Transaction discarded because of previous errors.\r\n"
		}
		return ""
	}
}

// TestDecideBatchRefusedAsAlone: on a real server whose user may not send the script's
// text (an ACL of your own without EVAL: docs/deploy.md's string gives it), the two calls
// of one identity in a batch, after the server lost the script, are each refused as a
// request alone is: its transaction's EVAL with the text is refused, its EVALSHA queued
// after it, and EXEC aborted; neither is answered EXECABORT, which names no cause.
func TestDecideBatchRefusedAsAlone(t *testing.T) {
	srv := redistest.Start(t)
	ctx := context.Background()
	acl := slices.DeleteFunc(strings.Fields(redisconn.MinimalACL), func(s string) bool { return s == "+eval" })
	if _, err := srv.Command(ctx, append(append([]string{"ACL", "SETUSER", "limiter"}, acl...), ">pw")...); err != nil {
		t.Fatal(err)
	}
	c, err := rueidis.NewClient(rueidis.ClientOption{InitAddress: []string{srv.Addr}, DisableCache: true, Username: "limiter", Password: "pw"})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(c.Close)
	l := bucket.New(c)
	_, alone := l.Decide(ctx, bucketgate.Request{Identity: "alone", Rules: free, Cost: 1})
	if alone == nil || !strings.Contains(alone.Error(), "NOPERM") {
		t.Fatalf("a request alone without EVAL: %v, want the ACL's refusal", alone)
	}
	q := bucketgate.Request{Identity: "twice", Rules: free, Cost: 1}
	_, errs := l.DecideBatch(ctx, []bucketgate.Request{q, q})
	for i, err := range errs {
		if err == nil || err.Error() != alone.Error() {
			t.Errorf("call %d of the batch: %v, want %v as alone", i, err, alone)
		}
	}
}
