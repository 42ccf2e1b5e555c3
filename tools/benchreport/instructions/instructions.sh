#!/usr/bin/env bash
# Redis-side instructions per decision, counted by callgrind inside EVALSHA: the same
# figure on a busy machine as on an idle one. Runs redis-server under valgrind on a free
# loopback port, sends N decisions over 1,000 random identities with redis-benchmark, and
# prints instructions per call for
# bucket.lua with 1 and 2 rules (checks, and refunds and resets of 1 rule) and for
# go-redis/redis_rate's GCRA script, read from the
# module cache (go mod download), not copied here. Every contender gets a burst of 10 and
# one token per 1,000 s: valgrind runs slowly, and a refill that mattered within the run
# would make the mix of allowed and denied requests (about half each at the default N,
# as in BENCHMARKS.md item 1) depend on the machine's speed.
#
# usage: instructions.sh [N] [leases]   (default 20000; needs valgrind, redis-server,
# redis-benchmark). With "leases", only the figures of issue 31: a check, a reserve, a
# settle and an acquire, and settles with usage kept.
set -euo pipefail
n=${1:-20000}
only=${2:-}
root=$(cd "$(dirname "$0")/../../.." && pwd)
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT

for tool in valgrind callgrind_annotate redis-server redis-cli redis-benchmark; do
  command -v "$tool" >/dev/null || { echo "instructions.sh: $tool not found (apt-get install valgrind redis-server redis-tools)" >&2; exit 1; }
done

peer=$(cd "$root/tools" && go mod download -json github.com/go-redis/redis_rate/v10 | sed -n 's/^[[:space:]]*"Dir": "\(.*\)",$/\1/p')
# redis_rate keeps its allowN script in a Go raw string: the text between its backquotes.
awk '/allowN = redis.NewScript\(`/{on=1; next} on && /^`\)/{exit} on' "$peer/lua.go" >"$work/gcra.lua"
[ -s "$work/gcra.lua" ] || { echo "instructions.sh: no allowN script in $peer/lua.go" >&2; exit 1; }

free_port() { python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])'; }

# start: redis-server under callgrind on a free loopback port ($port), counting inside
# EVALSHA alone ($out, $pid); stop: shuts it down and sets $total, the instructions counted.
# Both set the caller's locals port, out, pid and total.
start() {
  port=$(free_port)
  out="$work/callgrind.$port"
  valgrind --tool=callgrind --callgrind-out-file="$out" --collect-atstart=no --toggle-collect=evalShaCommand \
    redis-server --port "$port" --bind 127.0.0.1 --save '' --appendonly no >"$work/valgrind.log" 2>&1 &
  pid=$!
  for _ in $(seq 100); do redis-cli -p "$port" ping >/dev/null 2>&1 && break; sleep 0.2; done
}
stop() {
  redis-cli -p "$port" shutdown nosave >/dev/null 2>&1 || true
  wait "$pid" || true
  total=$(callgrind_annotate "$out" 2>/dev/null | awk '/PROGRAM TOTALS/{gsub(",","",$1); print $1}')
}

# count SCRIPT PREP ARGS...: instructions per EVALSHA of SCRIPT with key bg:{<random>} and
# ARGS. With PREP (an operation, such as a cost), the same N calls of SCRIPT with PREP in
# place of ARGS' first go first, uncounted (EVAL, not EVALSHA): they give the identities
# state to refund or reset. With USAGE=1 in the environment, a second key follows: the
# usage archive bg:{<random>}:usage (redis-benchmark draws each __rand_int__ apart, so it
# is another identity's: no matter here, where it is only declared); with RESETS=1, the
# resets bg:{<random>}:reset, a reset's second key.
count() {
  local script=$1 prep=$2; shift 2
  local port out pid total
  start
  if [ -n "$prep" ]; then
    redis-benchmark -p "$port" -n "$n" -c 1 -r 1000 EVAL "$(cat "$script")" 1 'bg:{__rand_int__}' "$prep" "${@:2}" >/dev/null
  fi
  local sha
  sha=$(redis-cli -p "$port" script load "$(cat "$script")")
  local keys=(1 'bg:{__rand_int__}')
  [ -n "${USAGE:-}" ] && keys=(2 'bg:{__rand_int__}' 'bg:{__rand_int__}:usage')
  [ -n "${RESETS:-}" ] && keys=(2 'bg:{__rand_int__}' 'bg:{__rand_int__}:reset')
  redis-benchmark -p "$port" -n "$n" -c 1 -r 1000 EVALSHA "$sha" "${keys[@]}" "$@" >/dev/null 2>"$work/errors"
  stop
  # a script's error reply is counted as a call: a figure of errors is no figure
  if [ -s "$work/errors" ]; then echo "instructions.sh: $(head -1 "$work/errors")" >&2; exit 1; fi
  echo $((total / n))
}

# count_cmds PREP CMDS: instructions per call of the EVALSHA lines of file CMDS (redis-cli's
# inline syntax, @SHA@ for the script's SHA1), the same count after the lines of file PREP
# (uncounted: their figure is counted alone and taken off). redis-benchmark draws keys at
# random; a reserve and its settle need one record each, named here.
count_cmds() {
  local prep=$1 cmds=$2 port out pid total calls sha
  start
  sha=$(redis-cli -p "$port" script load "$(cat "$bucket")")
  cat $prep "$cmds" | sed "s/@SHA@/$sha/" | redis-cli -p "$port" >"$work/replies"
  if grep -q ERR "$work/replies"; then echo "instructions.sh: $(grep -m1 ERR "$work/replies")" >&2; exit 1; fi
  stop
  calls=$(wc -l <"$cmds")
  echo $((total / calls))
}

bucket=$root/internal/lua/bucket.lua
rule=(burst:tokens burst:ts 10 0.001)

# Issue 31: bucket.Limiter sends a reserve as the check of its estimate (its id, signed,
# carries the rest): the check's call. A settle: reserves of 5 tokens (checks) on a
# bucket of 1000, 20 per identity, each settled at 3 (2 tokens given back), against the
# same reserves alone; each settle writes its outcome under its own record key and, as it
# gives back, reads the identity's resets with its reserve's time, as bucket.Limiter
# sends it (a settle above its estimate, a debit, sends neither).
# With usage kept 35 days (settles_usage): the same reserves counted in usage, settled at
# 3 (below the estimate: a refund, the day's cost corrected by -2) and at 7 (above it: a
# debit, the cost corrected by +2).
awk -v n="$n" 'BEGIN { for (i = 0; i < n; i++) printf "EVALSHA @SHA@ 1 bg:{%d} 5 burst:tokens burst:ts 1000 0.001\n", i % 1000 }' >"$work/reserve5"
awk -v n="$n" 'BEGIN { for (i = 0; i < n; i++) printf "EVALSHA @SHA@ 2 bg:{%d} bg:{%d}:usage 5 35 burst:tokens burst:ts 1000 0.001\n", i % 1000, i % 1000 }' >"$work/reserve5u"
settle_lines() { # ACTUAL DAYS FILE: a settle of each reserve at ACTUAL, usage kept DAYS ('0': none)
  awk -v n="$n" -v a="$1" -v d="$2" 'BEGIN { for (i = 0; i < n; i++) {
    if (a < 5) printf "EVALSHA @SHA@ 4 bg:{%d} bg:{%d}:usage bg:{%d}:s:%d bg:{%d}:reset s%d %s \"5 99999999999999 600000 99999999399999\" burst:tokens burst:ts 1000 0.001\n", i % 1000, i % 1000, i % 1000, i, i % 1000, a, d
    else printf "EVALSHA @SHA@ 3 bg:{%d} bg:{%d}:usage bg:{%d}:s:%d s%d %s \"5 99999999999999 600000\" burst:tokens burst:ts 1000 0.001\n", i % 1000, i % 1000, i % 1000, i, a, d } }' >"$3"
}
settle_lines 3 0 "$work/settle"
settle_lines 3 35 "$work/settle_below"
settle_lines 7 35 "$work/settle_above"
# settles_usage CHECK: prints the line of settles with usage, over the check's figure.
settles_usage() {
  local reserved below above
  reserved=$(count_cmds '' "$work/reserve5u")
  below=$(( $(count_cmds "$work/reserve5u" "$work/settle_below") - reserved ))
  above=$(( $(count_cmds "$work/reserve5u" "$work/settle_above") - reserved ))
  awk -v x="$1" -v b="$below" -v a="$above" 'BEGIN {
    printf "round-3 settles with usage kept: below the estimate %d (%.2fx the check), above it %d (%.2fx)\n", b, b / x, a, a / x }'
}
# An acquire: the check above (the same bucket, the same mix of allowed and denied) with
# a concurrency rule of 100 in flight, as bucket.Limiter sends it (the lease in the hold,
# the rule's sorted set after the state's key); every lease its own member, none
# released (an identity holds 10 at most: the bucket binds). acquire_all: the same on a
# bucket of 1000 (every call admitted: each takes a lease), beside an admitted check.
acquire_lines() { # CAPACITY FILE
  awk -v n="$n" -v cap="$1" 'BEGIN { for (i = 0; i < n; i++) printf "EVALSHA @SHA@ 2 bg:{%d} bg:{%d}:c:streams 1 0 \"@300000/100 n%d\" burst:tokens burst:ts %d 0.001\n", i % 1000, i % 1000, i, cap }' >"$2"
}
acquire_lines 10 "$work/acquire"
acquire_lines 1000 "$work/acquire_all"
if [ "$only" = leases ]; then
  one=$(count "$bucket" '' "${rule[@]}")
  admitted=$(count "$bucket" '' burst:tokens burst:ts 1000 0.001)
  reserve=$one
  reserve5=$(count_cmds '' "$work/reserve5")
  settle=$(( $(count_cmds "$work/reserve5" "$work/settle") - reserve5 ))
  acquire=$(count_cmds '' "$work/acquire")
  acquire_all=$(count_cmds '' "$work/acquire_all")
  awk -v x="$one" -v a="$admitted" -v r="$reserve" -v s="$settle" -v q="$acquire" -v qa="$acquire_all" 'BEGIN {
    printf "lease instructions/call: check %d, reserve %d (%.2fx the check), settle %d (%.2fx the check; an admitted check %d, %.2fx), acquire %d (%.2fx the check; every one admitted %d, %.2fx an admitted check)\n", x, r, r / x, s, s / x, a, s / a, q, q / x, qa, qa / a }'
  settles_usage "$one"
  exit 0
fi
# Checks of cost 1 leave the operation out, as bucket.Limiter sends them.
one=$(count "$bucket" '' "${rule[@]}")
two=$(count "$bucket" '' burst:tokens burst:ts daily:tokens daily:ts 10 0.001 1000 0.011574074074074073)
gcra=$(count "$work/gcra.lua" '' 10 1 1000 1) # burst, rate, period (s), cost: redis_rate's ARGV
# Operations on 1 rule of capacity 1000: checks that all take a token (each writes),
# and refunds and resets of identities that checks of cost 500 gave state first: each
# refund writes (about 20 per identity, never filling the bucket); the first reset of an
# identity removes its fields, the later ones find none.
big=(burst:tokens burst:ts 1000 0.001)
admitted=$(count "$bucket" '' "${big[@]}")
refund=$(count "$bucket" 500 -1 "${big[@]}")
reset=$(RESETS=1 count "$bucket" 500 reset "${big[@]}")
# Round 3 (issues 29 and 31): the check above (usage off), the same check with usage kept
# 35 days (the operation and the days in ARGV), and one bucket with one monthly quota
# (limit 1000: the bucket binds, as above), usage on. Figures of operations not built yet
# print as "-".
usage=$(USAGE=1 count "$bucket" '' 1 35 "${rule[@]}")
quota=$(USAGE=1 count "$bucket" '' 1 35 burst:tokens burst:ts monthly:used monthly:end 10 0.001 1000 -101)
awk -v x="$one" -v y="$two" -v z="$gcra" 'BEGIN {
  printf "redis-side instructions/decision: bucketgate 1 rule %d, 2 rules %d, redis_rate %d, ratio X/Z %.3f, Y/X %.2f\n", x, y, z, x / z, y / x }'
awk -v x="$one" -v a="$admitted" -v f="$refund" -v r="$reset" 'BEGIN {
  printf "redis-side instructions/operation, 1 rule: check %d (every one admitted: %d), refund %d (%.2fx an admitted check), reset %d (%.2fx a check)\n", x, a, f, f / a, r, r / x }'
reserve=$one
reserve5=$(count_cmds '' "$work/reserve5")
settle=$(( $(count_cmds "$work/reserve5" "$work/settle") - reserve5 ))
acquire=$(count_cmds '' "$work/acquire")
printf 'round-3 instructions/decision: check %d, check+usage %d, bucket+quota %d, reserve %d, settle %d, acquire %d\n' "$one" "$usage" "$quota" "$reserve" "$settle" "$acquire"
settles_usage "$one"
