-- bucketgate: one operation on an identity's rules, token buckets and quotas on the
-- calendar, atomically: a check (take cost tokens from every rule, or nothing), a
-- refund or a reset; and, for a check that takes tokens, the identity's usage of the day.
--
-- This header is where the layout of KEYS, ARGV and the reply is written; lua.go names
-- the same positions for the Go side.
--
-- KEYS[1]   the identity's state hash, "<prefix>{<identity>}". A bucket keeps two fields
--           in it: "<rule>:tokens" (a double) and "<rule>:ts" (the Redis TIME of its last
--           write, in microseconds). A quota keeps "<rule>:used" (what it admitted in its
--           window, a whole number) and "<rule>:end" (when that window ends, Unix
--           seconds). Marks for events (see Crossings below), which a previous release
--           reads as the same numbers: a bucket's stamp starts with '+' from its first
--           denial until it is next full; a quota's end starts with '+' after its first
--           denial in the window, and ends with 'e0' once 80% of its limit was reported
--           in the window, 'E0' once 100% also was ("+1767225600E0"; not leading zeros,
--           which gopher-lua, miniredis's Lua, reads as octal); "<rule>:limit", the
--           limit (a whole number) of the thresholds an admission last reported, written
--           with them, kept from window to window and removed by a reset.
--           A rule with no fields is full. With usage, the current UTC day D
--           (days since 1970-01-01) keeps up to three fields: "u:<D>:a" (checks allowed),
--           "u:<D>:x" (the cost they took above one each: the cost admitted is a + x, and
--           a check of cost 1 touches no x) and "u:<D>:l" (checks limited); no rule's field
--           starts "u:<digit>" (a rule name has no ':').
-- KEYS[3]   with a hold (f = 3) only: the record of an idempotent request,
--           "<prefix>{<identity>}:h:<nonce>", or of a settled reservation,
--           "<prefix>{<identity>}:s:<nonce>" (see "Holds" below); KEYS[2] is then given
--           with or without usage.
-- KEYS[..]  with a lease only (a hold starting '@'; see "Leases" below), the last KEYS:
--           the sorted set of each concurrency rule, "<prefix>{<identity>}:c:<rule>", in
--           the hold's order, after KEYS[2] only with usage or a record, and KEYS[3]
--           only with a record.
-- KEYS[2|4] the identity's resets, a reset's KEYS[2] and KEYS[4] of a settle that gives
--           back with its reserve's time: "<prefix>{<identity>}:reset", a hash of one
--           field per rule a reset named, its name, = when (Unix ms), living 3600000 ms
--           (bucketgate.MaxTTL, a reservation's longest ttl) past the last reset (see
--           "Holds" below). Neither a check nor another settle reads it.
-- KEYS[2]   with usage or a hold only (but a reset's): the identity's usage archive, "<prefix>{<identity>}:usage"
--           (the same hash tag: the same cluster slot), a hash of one field per earlier
--           day D, "<D>" = "<allowed> <cost> <limited>".
-- ARGV      first f values (f = #ARGV % 4) that apply to the call, then the rules':
--   f = 0     nothing: a check of cost 1, no usage counted (4n values for n rules).
--   f = 1     ARGV[1], the operation:
--               n >= 0    a check of cost n: allowed when every enforced rule holds n
--                         tokens, and then n is taken from every rule; 0 is a peek.
--               -n        a refund of n >= 1: n tokens back to every rule that has state,
--                         never above its capacity, and never lowering a rule (see
--                         below); a quota's count lowered by n, to 0 at least.
--               "reset"   every rule's fields removed: every rule full again (the key goes
--                         with its last field); each rule's name and now (Unix ms) written
--                         to its resets, KEYS[2], which live 3600000 ms more.
--   f = 2     ARGV[1], the operation, and ARGV[2], the days usage is kept (1 to 400,
--             today included): a check that takes tokens (cost >= 1) counts in the usage
--             of the day; another operation ignores it (a settle's is f = 3).
--   f = 3     a hold: ARGV[1] the operation as for f = 1, or "s<a>" (a settle at the
--             actual cost a, 0 to 1e9); ARGV[2] the days usage is kept as for f = 2, or
--             '0' for none; ARGV[3] the hold (see "Holds"). A hold is for a check that
--             takes tokens, a refund or a settle.
--           Then, for n rules: the 2n field names, the two of each rule in turn
--           ("<rule>:tokens" and "<rule>:ts", or "<rule>:used" and "<rule>:end"); then 2n
--           numbers, two per rule in the same order: a bucket's capacity (whole tokens)
--           and refill per second; a quota's limit (whole tokens) and period: -1 a UTC
--           day, -7 a week from Monday, -100 - a a month from day a (1 to 28) to the same
--           day of the next month. The capacity or limit is negated for a shadow rule.
--           The caller spells the field names, so that HMGET reads them straight from
--           ARGV and no name is built here.
--
-- Bounds, the same as bucketgate.Rule.Validate: capacity and limit 1 to 1e9, refill per
-- second above 0 and at most 1e9, capacity / refill at most 31622400 s (366 days; the
-- division is held to 31622400.000001, a microsecond more, so that a rate of tokens per
-- period that fills in exactly 366 days passes though it rounds above), a period of the
-- three, cost and refund at most every enforced rule's capacity or limit (a shadow rule
-- denies in shadow what it cannot hold, and a refund fills it at most), no field name twice
-- (the Go side also refuses a bucket and a quota of one name). A capacity, a limit, a
-- refill or a period that is not a number at all stops the script with Lua's
-- arithmetic error (they are read by arithmetic, not tonumber, which would read each
-- twice); the Go side never sends one. The days usage is kept, and KEYS[2], are read and
-- checked when a write needs them (the day's first usage), before any write.
--
-- Windows: a quota counts in the window of its period that holds Redis's TIME, in UTC:
-- day D runs from D * 86400 to (D + 1) * 86400; a week from the Monday on or before D; a
-- month from day a of D's month when D's day of the month is a or later, else of the
-- month before (the civil date by H. Hinnant's days-to-civil arithmetic, years counted
-- from March). Its stored count applies until the window stored with it ends (a window
-- written under a clock ahead ends later: the count stands, so that no window admits
-- more than its limit); then it counts from 0 in the window that holds now, whose end the
-- calendar gives: only then, so that most calls compute no date. But a day's or a week's
-- stored end more than its period and a minute away, or a week's not on a Monday, is
-- another period's (the rule changed period under its name): its count stands until the
-- window of the day or week that holds now ends, which it is written with, unmarked. A quota's room is its
-- limit less its count (0 at least); its wait, when short, is until its window ends.
--
-- A shadow rule is decided as if it were enforced, but never denies: a check is allowed
-- or denied by the enforced rules alone, and the reply's figures describe them alone. When
-- a check is allowed, a shadow rule holding cost tokens gives them, and one holding fewer
-- is a shadow denial: it gives nothing (its fields are brought up to now, which changes
-- no figure); when the enforced rules deny, nothing is written, shadow rules included.
--
-- Reply: four integers {flags, wait (ms until an identical check could be allowed,
-- rounded up: the retry-after when denied, 0 when it could be now), reset after (ms until
-- every rule is full: every bucket full, and every quota that counted something at its
-- window's end; rounded up), now (Redis TIME, us)}, over the enforced rules, after the
-- operation. flags packs, from its lowest bit: allowed (1 bit: 0 or 1), the binding
-- rule (4 bits: the 1-based index of the rule; 0 when every rule is shadow), the wait
-- rule (4 bits: the index of the rule the wait is for, 0 when wait is 0), the shadow
-- denials of an allowed check (8 bits: bit r-1 for rule r), and from bit 17 on remaining
-- (the floor of the fewest tokens left, a quota's room, below 2^30): allowed + 2 binding
-- + 32 wait rule + 512 denials + 131072 remaining. Bit 47 says that the check crossed
-- a threshold (Crossings, below); bits 48 to 52 are 0: kept for notices of later versions
-- (a debt), so that the reply stays below 2^53, exact in a double. A refund and a reset
-- are allowed with no wait. A peek (a check of cost 0) replies two more integers per
-- rule, enforced and shadow, in ARGV's order: the floor of a bucket's tokens or a
-- quota's room, then the ms until the bucket is full (0 when it is) or until the quota's
-- window ends, rounded up.
--
-- Crossings (events): a check replies, with bit 47 of flags set, 1 + 2n more integers
-- when it crossed something, once per window whatever the number of callers: a bit set
-- (bit r-1: rule r's first denial in its window, "Rate Limited"; bit 15+r: rule r's
-- count reached 80% of its limit in its window; bit 31+r: 100%), then two integers per
-- rule in ARGV's order, 0 and 0 for a rule that crossed nothing: a bucket's floor of
-- tokens (below 0 for a settle's debt) and the ms until it is full (rounded up); a quota's count and its window's end
-- (Unix seconds). Only enforced rules cross. A bucket's window runs from its first
-- denial (which marks its stamp: the denial's one more write) until it is full again
-- (the next admission finding it full writes the stamp unmarked); a quota's is its
-- calendar window: its first denial marks its end, and an admission that moves its count
-- across 80% or 100% of its limit reports it unless the end's suffix says it was (a refund
-- that lowered the count below leaves them) of this limit: under a suffix, the crossing
-- reads "<rule>:limit" (HGET; none, written by an earlier release, or not a number, by
-- hand or another version: this limit), and a limit changed in the window counts as
-- nothing reported; a threshold reported writes it (one HSET more, once or twice a
-- window). It is one limit, the last reported of: a limit changed and changed back in
-- the window (100, 90, 100) reports the first's thresholds again as the count reaches
-- them (a list of limits would cost every crossing a parse, for a plan changed twice). A reset removes the marks with the fields.
-- The common admission pays one string length per stored bucket and a few tests: under
-- make bench-instructions' callgrind, a check of 1 rule half limited 55,082 instructions
-- (54,371 before crossings: most of it the mark, one HSET per identity and window),
-- every check admitted 65,610 (65,324).
--
-- A check that takes tokens writes every rule and sets the key to expire 1000 ms (the
-- margin, bucket.ExpiryMargin) after every bucket written is full again (its time rounded
-- up with now's) and every quota written has reached its window's end (exactly: so that
-- each admission of the window finds the expiry its first set, and makes no call), never
-- shortening its life (PEXPIREAT GT, or NX on a key that has no expiry yet). A denial or
-- a peek writes no rule. But a call that
-- admits nothing (a denial, a peek, a refund; not a settle, whose rules are its
-- reserve's) finding a bucket stored lets the key live (PEXPIREAT GT, its one call more)
-- 999 ms past the time every rule is full under its own rules (a denial's: its shadow
-- ones as they stand, since it takes nothing of them; a denial by a lease's set: as its
-- admission would have): the expiry was set under
-- the last admission's, and another plan (a slower refill, a larger capacity) needs
-- longer, which would otherwise find the bucket full once the old plan's expiry passed
-- (quotas keep their windows' ends, which no plan moves later). No call when a quota's
-- window stored, or for a denial counted in usage the day's usage, makes the key live
-- that long already. Under make bench-instructions' callgrind: a check of 1 rule half
-- limited 60,564 (55,922 before: the denial's call), every check admitted 66,987
-- (66,581), a refund 73,742 (64,939), a settle below its estimate 111,717 (101,530)
-- before settles were left out. A refund adds its tokens to the count each bucket with
-- state stored, at that count's stamp, capped at the capacity unless the count already
-- held more (stored under a plan of a larger capacity: then it stays as it is); it
-- writes only the counts it raised, and leaves the stamps. So a refund never lowers a
-- bucket, whatever plan it names: at any later time, refilled at any rate,
-- a rule holds at least what it would have held without it (refilling the count to now
-- under the refund's rate, as a check does, would lose the refill a faster plan gives).
-- A refund lowers a quota's count in its window by its tokens, to 0 at least, and writes
-- only a count it lowered; a window that has ended has nothing to give back. Its reply's
-- figures are those of the counts written, refilled to now under the request's rules.
-- Arguments are checked before any write; a bad one is an error reply starting with
-- "ERR bucketgate:". Stored fields that are not the script's stop a check or a refund
-- before any write: that identity fails until its fields expire or are reset. A field
-- that is not a number, or a count without its stamp or window, stops it with Lua's own
-- arithmetic error (lua.ArithmeticErrors); a stamp or window without its count, or a
-- count, stamp or window that is not finite (or a count below zero once refilled), with
-- an error reply starting with "ERR bucketgate-state:"; a day's usage count that is not
-- a whole number, with Lua's error (allowed) or Redis's (HINCRBY, limited). A reset reads
-- no field.
--
-- Holds (f = 3): a settle, or an idempotent request. A reserve is no hold: the caller sends
-- it as the check of its estimate and signs what its settle needs (the estimate and the
-- expiry) into its id. A settle ("s<a>", hold "<estimate> <expiry> <life>") is refused at
-- or past its reservation's expiry (Unix ms; an error, the estimate stays taken) unless it
-- was settled before, whose outcome then answers from its record (GET); otherwise
-- an actual cost below the estimate is a refund of the difference (as above; a hold
-- "<estimate> <expiry> <life> <reserved>" gives its reserve's time, Unix ms: a rule whose
-- reset (KEYS[4], one HMGET) came at or after it gives nothing back, as the reset refilled
-- what the reserve took; a mark that is not a number stops it with Lua's error; and
-- then " <w1>,...,<wn>" each quota's window end, Unix s, at the reserve: a quota gives
-- back only in that window, as a later one never held the estimate; on the reserve's UTC
-- day, in the window stored, which no midnight ended since, whatever window a plan edited
-- since, its anchor or its period, puts the reserve in), above it a
-- debit of the difference that never denies: a bucket goes down to minus its capacity at
-- most, a quota's count up to twice its limit at most (one past that already, its
-- capacity or limit cut by a plan since, stays as it is: a debit never gives back), every
-- rule is written as by a check;
-- a hold ending " k<skip>" names the rules the reserve took nothing from (bit r-1 for
-- rule r): those it was a shadow denial of, and those it did not have (added since): they
-- get nothing back and give nothing more;
-- with usage (ARGV[2] not '0') it corrects the day's cost by the actual cost less the
-- estimate and counts no check (Usage, below). Before any other write, its outcome "<flags>
-- <wait> <reset> <now> <actual> <field>" goes to its record, KEYS[3] (SET NX GET, living
-- life ms past the expiry), field the binding rule's first field name ('-' for none): a
-- record there already is a settle made before, whose outcome answers, nothing written,
-- its binding rule the one of this call's rules with that field, as a plan may have
-- added, moved or removed rules since (none, 0 remaining, when it has none: removed, or
-- of another kind now; a record without the field, of an earlier version, keeps its
-- index when in range). An idempotent request (hold "<life> <fp>") reads its record first:
-- found, its fingerprint must be fp (else an error) and its decision "<fp> <flags> <wait>
-- <reset> <now>" answers again, nothing written; not found, the request is decided and its
-- record written last (SET PX life). A stored bucket count below zero is a settle's debt:
-- it refills as any count, a check waits until it holds the cost, a peek shows 0 left.
-- Errors about a hold start "ERR bucketgate-hold:" and write nothing. A hold's reply is the
-- four integers and two more: 1 when the answer is a decision or outcome given again (else
-- 0), and a settle's actual cost (else 0).
--
-- Leases (f = 3, a hold "@<ttl>/<N1>/.../<Nm> <nonce>", after any other hold and a space):
-- concurrency rules 1 to m, numbered after the n rules of ARGV (rule n + k) and never
-- shadow, N their most leases in flight (1 to 10000), their sets the last m KEYS, scored by
-- each lease's expiry (Unix ms), member the nonce (never '~'), beside the set's mark: the
-- member '~', scored by the set's expiry. A check that takes tokens (cost >= 1), once
-- every other rule allows it, reads the lease and counts each set's leases (ZCARD less
-- the mark), rule by rule, and when a set holds N (expired ones too) removes its expired
-- leases (score <= now ms), 100 at most, the earliest (ZCOUNT, ZREMRANGEBYRANK: a call's
-- work stays bounded however many expired unreleased; later calls take the rest), and
-- counts those in flight (the set less its expired, swept or not: never more than N in
-- flight, but for N lowered by a plan since): N (or more) in flight still denies it,
-- binding and wait rule n + k, 0 remaining, its wait until the earliest in flight expires
-- (more in flight, until enough have for one to be free: the Nth latest) and its reset
-- until the latest does: nothing is taken,
-- nothing is crossed, and usage counts the denial as any other. Else, last, the nonce
-- goes into every set at now + ttl (1 to 3600000 ms; a member there already keeps the
-- later of its two expiries), and a rule with no more leases left (N less the set's
-- leases, expired ones not swept yet too, but for a set swept by this call, its leases
-- in flight) than the other rules' whole tokens left (or
-- when no other rule binds) is the binding rule, its leases left the remaining: on a
-- tie with a bucket or a quota the slot, which frees at the lease's expiry at the
-- latest, binds; on a tie of two concurrency rules, the first.
-- A set expires at the first whole minute (Unix time, a multiple of 60000 ms) at least
-- 1000 ms (the margin) past its latest lease, and its mark says when: ZADD GT CH adds the
-- lease and raises the mark to this lease's minute, and only when it moved the mark (two
-- members changed) does PEXPIREAT follow (NX on a new set, GT on another), so that most
-- acquires make two calls, ZCARD and ZADD. A lease that changes nothing had a mark as
-- late (every lease's minute is at most the mark), so two changes are the mark's move.
-- The mark goes only with the set, or in a sweep at the set's last millisecond, when
-- every lease goes too: a release of the last lease leaves the set and its mark. A set
-- without its mark (written by an earlier build of this release, or by hand) would count
-- one lease less until its next acquire adds the mark, and a mark above the set's
-- expiry (a set's expiry shortened by hand) would let the set go before its leases:
-- nothing but this script may write the sets.
-- A denial by another rule takes no lease, sweeps nothing and reads nothing of the lease
-- but its '@': the lease is read (and checked) only once every other rule allowed the
-- check, before any write, by one pattern. With no other rule (ARGV's n = 0) no state
-- hash is written but usage. A release: ARGV[1] "release", the hold "@0/<N...> <nonce>"
-- and no rule: each set's expired leases removed (100 at most, the earliest, as above),
-- then the nonce, expired and left by that sweep or not; reply {the sets that held it in
-- flight, now (us)}, 0 sets when it was released or expired before.
-- Under make bench-instructions' callgrind, an acquire (one bucket, one concurrency rule
-- of 100, half of the checks admitted as for the check's figure) costs 77,538, 1.39x a
-- check (55,935; goal 1.4x; 82,662 and 1.48x before): an admission's ZCARD and
-- ZADD, the lease's pattern, and the hold's ARGV value and the set's key on every call.
-- Reading the lease only when it is taken saved 4,600 a denial (its pattern); the mark
-- saves the PEXPIREAT (6,200) of most admissions but costs its ZADD 4,800 more (a member,
-- two flags, a number formatted). Sweeping every time (a fourth call) cost 97,793; the
-- lease's numbers found by plain string.find and string.sub, 3,200 more than the pattern;
-- sending the lease as ARGV[1] without the days and the hold ('1' and '0': strings the
-- script holds already), nothing. A count of the leases in the state hash instead of
-- ZCARD (4,200 an admission) was not built: its field would cost every call in the HMGET
-- (about 1,000, denials too) and an admission in the HSET (1,000 more), about 600 a call
-- saved at best, while a release would need a call more to keep the remaining exact, a
-- lease alone (n = 0) writes no hash, and a count lost or behind the set (a hash that
-- expired first) must never admit more: ZCARD again.
--
-- Usage (f = 2; a settle's, f = 3): a check that takes tokens adds, when allowed, 1 to
-- "u:<D>:a" (and its cost less one to "u:<D>:x") in the HMGET and HSET it makes anyway, or,
-- when denied, 1 to "u:<D>:l" with HINCRBY: the one write of a denial. A peek, a refund and
-- a reset count nothing, and a reset removes no usage. A settle (f = 3, ARGV[2] the days
-- kept) adds its actual cost less its reservation's estimate to "u:<D>:x" of the day it is
-- made on, D by TIME as any usage write, and "u:<D>:a" '0' when the day has none (a debit's
-- HSET writes it as it was): its reserve was counted as a check of the estimate, so the
-- day's cost is what was used. Above the estimate this rides in the HSET of the debit;
-- below it, in one HSET with the counts the refund raises (a call even when it raises
-- none); at the estimate nothing is written. A settle answered again, or refused, corrects
-- nothing. So "u:<D>:x" may be below zero, and a day's cost (a + x) too, when the day
-- settles reserves of earlier days (reserved at 23:59, settled at 00:01): the sum over the
-- days is right, and an archived day's cost may be below zero. The day's first usage (no
-- "u:<D>:a" yet, or a first "u:<D>:l" with none; a settle's too) moves the usage of earlier
-- days still in the state hash (the last active day's, L) to the archive (HGETALL of the
-- small hash; HSETNX, adding to a day archived before), removes the archive's days that
-- fell past keeping since day L (L - kept + 1 to D - kept; all of it when L is past
-- keeping; and every day past keeping when it still holds kept days or more, as it does
-- once the days kept are lowered), lets the archive live until day L's usage is no longer kept ((L + kept) *
-- 86400000 ms plus the margin) and the state hash until day D's is no longer; a later write
-- of the day needs no PEXPIREAT unless a rule lives past the day's end (not past the days
-- kept: the day's first write may have kept fewer, ARGV[2] raised since). A usage count that is not a
-- number moves as 0. So the state hash holds one day of usage at most, and a decision never
-- reads more.
-- Counted as make bench-instructions counts its settle (callgrind; reserves of 5 on a
-- bucket of 1000, each settled at 3, or at 7 here; usage kept 35 days, by a harness of the
-- same lines), a settle costs 121,244 below its estimate and 120,271 above it, against
-- 100,858 and 111,321 when settles counted no usage: the same calls, with two more fields
-- in the HMGET, two or four in the HSET, a table below the estimate, and above it no
-- PEXPIREAT (the day's usage keeps the key longer than the debit needs). Without usage a
-- settle costs what it did (make bench-instructions: 101,119 and 101,706 in two runs, a
-- check 55,801 and 55,998; 100,523 before).
--
-- The script runs once per decision, so it is written for few Lua instructions, few
-- calls out of the VM and few new tables and strings (make bench-instructions counts
-- them; each Lua instruction costs Redis about 50 machine instructions, each redis.call
-- several thousand): globals are read once into locals, one pass over the rules keeps
-- the figures of both outcomes (a single rule, the usual case, keeps only its own),
-- ceil(x) is x + (-x) % 1 and floor(x) is x - x % 1 (exact for doubles, no call), every
-- rule's fields go in one HSET for one or two rules, and integers go to Redis as strings
-- formatted by %d (7.0 formats a Lua number with the slower %.17g). Leaving the operation
-- out keeps ARGV within 4 values for one rule and 8 for two: Redis grows the table it
-- builds for ARGV by doubling, and each doubling costs as much as several values. A
-- quota is told from a bucket in the branch that checks an unusual rule's bounds, so
-- that the usual bucket pays one test for quotas.
--
-- How usage and quotas are counted was chosen by make bench-instructions' figures
-- (redis-server 7.0 under callgrind, machine instructions per call, a check of one rule
-- half of them limited, fresh identities; main before quotas: 53,561). This script: a
-- check without usage 54,161 (+1.1%), with usage 66,631 (1.23x; 70,800 in the steady
-- state, the day's first write moving yesterday to a 33-day archive), a bucket and a
-- monthly quota with usage 87,187 (1.61x; two buckets without usage cost 73,926, 1.36x).
-- The goals were 1.12x and 1.45x; what stands between:
--   - A redis.call costs 7,000 to 10,000 here, a write more than a read: the denial's
--     HINCRBY, the one write the design gives it, is 10,600 a denial, 5,300 a call of a
--     mix half limited. An HSET of a count read in the HMGET costs more (8,500, plus the
--     field read on every call and the number's parsing and formatting).
--   - Each value in ARGV, KEYS and the HMGET or HSET costs about 700 to 1,400 (the
--     listpack search, the Lua string), and glibc's strtod and %.17g 1,000 to 1,500 a
--     number: the days kept stay a string until needed, the cost above one (x) is kept
--     apart so that a check of cost 1 reads and writes one usage field, the day's names
--     are built by one string.format each (%d is cheap, %.14g is not), and the denial's
--     HINCRBY adds the string '1'. What is left: two ARGV values and a key, one field in
--     the HMGET and one in the HSET, a name and a number or two formatted.
--   - The day's counters in the state hash, named by the day (u:<D>:a), ride in the HMGET
--     and HSET the check makes anyway, and make the PEXPIREAT of later writes of the day
--     unneeded (-2,600 an admission). Keeping past days there too measured 64,500 on
--     fresh identities, but with 34 days in the hash every decision on it pays Redis's
--     linear search of a listpack of 70 fields: 118,000 with usage, 72,000 even for a
--     check without usage. History must not live in the hash every decision reads: hence
--     the archive, which only the day's first write touches.
--   - A separate usage hash counted with HINCRBY would cost two calls an admission;
--     BITFIELD counters in a string key, whose offsets must be formatted, 24,000 a call.
--   - A quota stores its window's end, not its start: a call within the window computes
--     no date (the civil calendar cost 7,000 a call); a quota then costs what a bucket
--     does (a bucket and a daily quota without usage: 74,500 against 73,400 for two
--     buckets). Two rules cost a third more than one whatever their kind.

local argv, call, tonumber, huge = ARGV, redis.call, tonumber, 1 / 0 -- math.huge is not infinite on every Lua
local key, nargs = KEYS[1], #argv

-- o is how many values of ARGV apply to the call: 0 (a check of cost 1), 1 (the
-- operation), 2 (the operation and the days usage is kept) or 3 (and the hold). The
-- usual cost, '1', skips tonumber: comparing Lua strings compares pointers.
local o = nargs % 4
if nargs < o + 4 and not (o == 3 and (string.byte(argv[3]) == 64 or string.find(argv[3], ' @', 1, true))) then -- a lease may come with no other rule
  return redis.error_reply('ERR bucketgate: ARGV must be the operation, the days usage is kept and the hold (or fewer: see the header), two field names per rule, then two numbers per rule')
end
local cost, give, op, keep = 1, 0 -- op: nil for a check, else 'refund' or 'reset'; keep: the days usage is kept (see below), nil when none is counted
-- With a hold (o = 3, "Holds" in the header): rec the record's key, life the ms a new
-- record lives, fp an idempotent request's fingerprint, settle a settle's actual cost,
-- est and exp its reservation's estimate and expiry (Unix ms; a settle's record lives
-- life ms past it), debit for a settle that takes more than its estimate.
local rec, life, fp, settle, est, exp, debit
-- rwins: a settle's window end (Unix s) of each rule at its reserve, when it gives back
-- to a quota: a quota gives back only in that window. rsv: its reserve's time (Unix ms),
-- when it gives back: a rule reset since then gives nothing back.
local rwins, rsv, skips
-- With a lease ("Leases" in the header): lease its text, read only when it is taken
-- (or released), after the other rules allowed the check; then lmost the most in flight
-- of each concurrency rule (its sorted set is KEYS[lk + k]), lnonce the lease's member,
-- lttl its ms to live.
local lease, lmost, lnonce, lttl, lk -- lk: the index in KEYS before the first set
if o > 0 then
  cost = argv[1]
  if o == 3 then
    local hold = argv[3]
    if string.byte(hold) == 64 then lease = hold else rec = KEYS[3] end -- '@': a lease alone
    if lease then
    elseif string.byte(cost) == 115 then -- 's': a settle at the actual cost that follows
      settle, cost = tonumber(string.sub(cost, 2)), '0'
      local wins
      est, exp, life, rsv, wins, skips = string.match(hold, '^(%d+) (%d+) (%d+) ?(%d*) ?([%d,]*) ?k?(%d*)$')
      if rsv == '' then rsv = nil end
      if skips == '' then skips = nil end
      if not (settle and settle >= 0 and settle <= 1e9 and settle % 1 == 0 and life and est + 0 >= 1 and est + 0 <= 1e9 and life + 0 >= 1 and rec and (not rsv or KEYS[4]) and (not skips or skips + 0 <= 255)) then
        return redis.error_reply('ERR bucketgate: a settle must be s and the actual cost, a whole number from 0 to 1e9, with its reservation\'s estimate (1 to 1e9), expiry and the ms its record lives (1 or more), then perhaps its reserve\'s time and each rule\'s window end at the reserve, then perhaps k and the rules it skips (0 to 255), and its record, KEYS[3] (and its resets, KEYS[4], with the time)')
      end
      if wins ~= '' then
        rwins = {}
        for w in string.gmatch(wins, '%d+') do rwins[#rwins + 1] = w + 0 end
      end
    else
      life, fp, lease = string.match(hold, '^(%d+) (%S+) ?(.*)$') -- and perhaps a lease
      if lease == '' then lease = nil end
      if not (fp and life + 0 >= 1 and rec and (not lease or string.byte(lease) == 64)) then
        return redis.error_reply('ERR bucketgate: a hold must be the ms a record lives (1 or more) and the fingerprint, with the record, KEYS[3]')
      end
    end
  end
  if cost == '1' then
    cost = 1
  else
    local n = tonumber(cost)
    if n and n >= 0 and n % 1 == 0 then
      cost = n
    elseif n and n <= -1 and n % 1 == 0 then
      cost, give, op = 0, -n, 'refund'
    elseif cost == 'reset' and KEYS[2] then
      cost, op = 0, 'reset'
    elseif cost == 'release' and lease then
      cost, op = 0, 'release'
    else
      return redis.error_reply('ERR bucketgate: operation must be a whole number (a cost >= 0, or -n to refund n) or reset (with its resets, KEYS[2])')
    end
  end
  -- The days usage is kept stay ARGV's string until a write needs them (the day's
  -- first), which reads and checks them first: most calls need no tonumber.
  if lease and cost == 0 and op ~= 'release' then -- a settle's cost is 0 here
    return redis.error_reply('ERR bucketgate: a lease is for a check that takes tokens')
  end
  if o == 2 and not op and cost > 0 then
    keep = argv[2]
  elseif o == 3 then
    if settle then
      if argv[2] ~= '0' then keep = argv[2] end -- a settle corrects the usage's cost
    elseif op == 'reset' or not op and cost == 0 then
      return redis.error_reply('ERR bucketgate: a hold is for a check that takes tokens, a refund or a settle')
    elseif not op and argv[2] ~= '0' then
      keep = argv[2]
    end
  end
end
-- Rule r's fields are ARGV[o+2r-1] and ARGV[o+2r], its two numbers ARGV[o+n2+2r-1] and
-- ARGV[o+n2+2r]: the loops below run i = 2r-1 over 1, 3, .., n2-1, and s[i], s[i+1]
-- are rule r's stored fields.
local n2 = (nargs - o) / 2

-- again(old) is the reply of a settle made before, from its record old (see "Holds"):
-- made for a settle alone, since a function made costs every call that makes it.
local again
if settle then again = function(old)
  local f1, w, r, n, a, field = string.match(old, '^(%d+) (%d+) (%d+) (%d+) (%d+) ?([^ ]*)$')
  if not a then
    return redis.error_reply('ERR bucketgate-state: the settled record of this reservation is not bucketgate\'s')
  end
  f1 = f1 + 0
  local b = (f1 - f1 % 2) / 2 % 16
  if field ~= '' or b > n2 / 2 then
    b = 0
    for i = 1, n2, 2 do
      if argv[o + i] == field then b = (i + 1) / 2 end
    end
  end
  if b == 0 then f1 = f1 % 2 else f1 = f1 - f1 % 32 + f1 % 2 + 2 * b end
  return {f1, w + 0, r + 0, n + 0, 1, a + 0} -- settled before: its first outcome
end end
local most = cost + give -- one of them is 0: what every capacity must hold
local least = most -- the least capacity this operation allows
if least < 1 then least = 1 end

-- Bounds are written as numbers where they are used, so that no local costs a load per
-- call: capacity 1e9 (bucketgate.MaxCapacity), refill 1e9 per second
-- (bucketgate.MaxRefillPerSecond), fill time 31622400.000001 s (bucketgate.MaxFillTime and a
-- microsecond for the division's rounding: bucketgate's maxFillSeconds), expiry
-- margin 1000 ms (bucket.ExpiryMargin), usage kept 400 days (bucket.MaxUsageDays).

local t = call('TIME')
local now = t[1] * 1000000 + t[2]
-- A settle on its reserve's UTC day gives back in the window stored, whatever rwins says:
-- no window ended since (each ends at a midnight UTC), though a plan may have moved it.
if rwins and rsv and rsv - rsv % 86400000 == (now - now % 86400000000) / 1000 then rwins = nil end
-- A hold (o = 3): a settle after its reservation's expiry is refused; an idempotent
-- request reads its record first (rv), and one found answers its first decision.
local rv
if rec then
  if settle then
    if (now - now % 1000) / 1000 >= exp + 0 then
      -- Past the expiry: a settle made before it still answers (a retry whose first
      -- answer was lost), from its record; else refused.
      local old = call('GET', rec)
      if not old then
        return redis.error_reply('ERR bucketgate-hold: reservation expired at ' .. exp .. ' ms (Unix time): it stays charged at its estimate')
      end
      return again(old)
    end
    est = est + 0
    if settle > est then
      cost, debit = settle - est, true
    else
      cost, give, op = 0, est - settle, 'refund'
    end
    most = cost + give
  else
    rv = call('GET', rec)
    if rv then
      local rfp, f, w, r, n = string.match(rv, '^(%S+) (%d+) (%d+) (%d+) (%d+)$')
      if not n or rfp ~= fp then
        return redis.error_reply('ERR bucketgate-hold: requestId was used first for another request (operation, cost, ttl or rules): a new request needs a new requestId')
      end
      return {f + 0, w + 0, r + 0, n + 0, 1, 0} -- decided before: its first decision
    end
  end
end
-- gone: by i, the rules of a settle that gives back which a reset named at or after its
-- reserve: they give nothing back (the reset refilled what the reserve took); and the
-- skipped ones, below.
local gone
if rsv and give > 0 then
  local f = {}
  for i = 1, n2, 2 do f[#f + 1] = string.match(argv[o + i], '^[^:]*') end
  local marks = call('HMGET', KEYS[4], unpack(f))
  rsv = rsv + 0
  for i = 1, n2, 2 do
    local at = marks[(i + 1) / 2]
    if at and at + 0 >= rsv then
      gone = gone or {}
      gone[i] = true
    end
  end
end
-- and the rules the reserve took nothing from (skips: those it was a shadow denial of,
-- those it did not have), so they get nothing back, nor give anything more to a debit.
if skips then
  local b = skips + 0
  for i = 1, n2, 2 do
    if b % 2 == 1 then
      gone = gone or {}
      gone[i] = true
    end
    b = (b - b % 2) / 2
  end
end
local need = cost -- what an enforced rule must hold: a peek, a refund and a debit never deny
if cost == 0 or debit then need = -huge end
-- A refund keeps the fields as read (before): the loop below overwrites s with levels.
-- With usage: day is the UTC day (days since 1970-01-01, also for quotas), ua the field
-- of its allowed checks and, for a check of a cost other than 1, ux that of their cost
-- above one each; s[n2 + 1] holds the day's allowed checks, and s[n2 + 2] (with ux) their
-- cost above one each.
local s, before, day, ua, ux
if op == 'reset' then
  s = {}
elseif keep then -- a check that takes tokens, or a settle (op 'refund' when it gives back)
  day = now - now % 86400000000
  day = day / 86400000000
  ua = string.format('u:%d:a', day)
  if cost ~= 1 or settle then ux = string.format('u:%d:x', day) end
  if n2 == 2 and not ux then
    s = call('HMGET', key, argv[o + 1], argv[o + 2], ua)
  elseif n2 == 4 and not ux then
    s = call('HMGET', key, argv[o + 1], argv[o + 2], argv[o + 3], argv[o + 4], ua)
  else
    local f = {unpack(argv, o + 1, o + n2)}
    f[n2 + 1], f[n2 + 2] = ua, ux
    s = call('HMGET', key, unpack(f))
  end
  if op then before = {unpack(s)} end
elseif op == 'refund' then -- a release has no rule: n2 = 0 below
  s = call('HMGET', key, unpack(argv, o + 1, o + n2)); before = {unpack(s)}
elseif n2 == 2 then s = call('HMGET', key, argv[o + 1], argv[o + 2]) elseif n2 == 0 then s = {} else s = call('HMGET', key, unpack(argv, o + 1, o + n2)) end

-- One pass over the rules: check each, refill it (a timestamp in the future, after a
-- failover to a skewed replica, counts as now; a refund adds its tokens before the cap)
-- and, with more than one rule, keep the figures of both outcomes, since whether every
-- enforced rule has cost tokens is known only at the end: those of a denial (d...) for
-- every rule, those of an admission while no rule has denied. Binding rule: when allowed,
-- the first with the fewest tokens left; when denied, the first denying rule with the
-- longest wait. Reset: the longest time until a rule is full. Wait, when allowed: the
-- longest time until a rule has cost tokens again. s[i] becomes rule r's tokens after an
-- admission (a quota's count), for HSET, and a quota's s[i + 1] its window's end. Shadow
-- rules keep their own figures: the index i of the last one met (shadow), their denials
-- (denials) and the longest time until a bucket is full (sreset; as it stands, for a
-- denial, dsreset; a quota's, qat), for the expiry. quotas has
-- bit r-1 set for each quota r, and ends, for a peek, a quota's ms until its window ends
-- by i. Locals that start nil are set by one instruction: binding and dbinding get their
-- rule before they are read, the shadow figures are set by the first shadow rule, stored
-- once a rule has state, quotas and ends by the first quota. An error about a rule names
-- it by its first field less its suffix (string.match(argv[o + i], '^[^:]*')), written
-- out on each error path: a helper function would be a new closure per call.
local allowed, fewest, wait, waitrule, resetafter, dfewest, dwait, dreset = 1, huge, 0, 0, 0, huge, 0, 0
local binding, dbinding, shadow, denials, sreset, dsreset, stored, quotas, ends
local held -- a bucket of the request has state: a call that admits nothing keeps it (see needs)
local lives -- the latest end (Unix s) of a quota's window stored with a count: the key lives past it
-- qat: the latest end (Unix s) of a quota's window that an admission (or a call that
-- admits nothing) leaves a count in: the key lives exactly the margin past it, not
-- rounded with now as a bucket's time is (so that a later admission of the window finds
-- the expiry its first set, and makes no call). qreset: the enforced quotas' part of an
-- admission's reset after, kept apart from the buckets' (resetafter) until the loop ends.
local qat, qreset
-- Crossings (see the header), nil while none: cross, the bits of denials (fig, their
-- rules' figures, by i) or, while allowed, up the bits of thresholds (ufig); marks, the
-- fields and values a first denial marks; kept[i + 1] true for a marked bucket an
-- admission leaves marked.
local cross, fig, up, ufig, marks, kept
-- lims: the "<rule>:limit" fields and values of the quotas whose thresholds an admission
-- reports, written with it.
local lims
for i = 1, n2, 2 do
  local j = o + n2 + i
  local cap, rate, period = argv[j] + 0, argv[j + 1] + 0 -- period: a quota's (its rate); nil for a bucket
  -- One test for the usual rule; the rest tells a shadow rule (negated capacity), a quota
  -- (a period below zero) and a bad rule apart.
  if cap < least or cap > 1e9 or cap % 1 ~= 0 or not (rate > 0 and rate <= 1e9) or cap / rate > 31622400.000001 then
    if cap <= -1 and cap >= -1e9 and cap % 1 == 0 then cap, shadow = -cap, i end
    if cap < 1 or cap > 1e9 or cap % 1 ~= 0 then
      return redis.error_reply('ERR bucketgate: rule ' .. string.match(argv[o + i], '^[^:]*') .. ': capacity or limit must be a whole number from 1 to 1e9 (negated for a shadow rule)')
    end
    if rate < 0 then
      if not (rate == -1 or rate == -7 or rate <= -101 and rate >= -128 and rate % 1 == 0) then
        return redis.error_reply('ERR bucketgate: rule ' .. string.match(argv[o + i], '^[^:]*') .. ': period must be -1 (a day), -7 (a week) or -100 less the anchor day, 1 to 28 (a month)')
      end
      period = rate
    else
      if not (rate > 0 and rate <= 1e9) then
        return redis.error_reply('ERR bucketgate: rule ' .. string.match(argv[o + i], '^[^:]*') .. ': refill per second must be above 0 and at most 1e9')
      end
      if cap / rate > 31622400.000001 then
        return redis.error_reply('ERR bucketgate: rule ' .. string.match(argv[o + i], '^[^:]*') .. ': fills in more than 366 days')
      end
    end
    if most > cap and not settle and shadow ~= i then
      return redis.error_reply('ERR bucketgate: rule ' .. string.match(argv[o + i], '^[^:]*') .. ': ' .. (give > 0 and 'refund ' or 'cost ') .. most .. ' exceeds ' .. (period and 'limit ' or 'capacity ') .. cap)
    end
  end
  if i > 1 then -- the first rule skips setting up an empty loop
    local name = argv[o + i]
    for k = o + 1, o + i - 2, 2 do
      if argv[k] == name then
        return redis.error_reply('ERR bucketgate: rule ' .. string.match(name, '^[^:]*') .. ' appears twice')
      end
    end
  end
  if period then
    -- A quota: its count in its window, while the window stored has not ended; else 0
    -- in the window that holds now, computed from the calendar. s[i + 1] becomes the
    -- window's end to write: the stored string, or the new end (a number).
    local used, ending = s[i], s[i + 1]
    local count, we = 0 -- we: the window's end, Unix seconds
    if used then
      -- Arithmetic reads both stored strings, as a bucket's: one that is not a number (or
      -- is missing, for a count without its window) stops the script with Lua's error.
      stored = true
      local c, e = used + 0, ending + 0
      if not (c >= 0 and c < huge and e > -huge and e < huge) then
        return redis.error_reply('ERR bucketgate-state: rule ' .. string.match(argv[o + i], '^[^:]*') .. ': stored count ' .. string.sub(used, 1, 32) .. ' of a window ending ' .. string.sub(ending, 1, 32) .. ' are not finite numbers, the count >= 0')
      end
      if e * 1000000 > now then
        count, we = c, e
        if c > 0 and (not lives or e > lives) then lives = e end -- a count there: its admission's expiry
        -- A day's window ends within a day of now, a week's on a Monday within a week
        -- (a minute more each, for a window stored under a clock ahead; not an hour, which
        -- kept a month's count a day past the day's end, called in its last hour): a later end is
        -- another period's, stored before the rule changed period (a plan changed under
        -- the same name). The count stands until this period's window ends, unmarked.
        if period > -8 and (e * 1000000 - now > (60 - 86400 * period) * 1000000 or period == -7 and (e / 86400 + 3) % 7 ~= 0) then
          if not day then
            day = now - now % 86400000000
            day = day / 86400000000
          end
          local ce = day + 1
          if period == -7 then ce = day - (day + 3) % 7 + 7 end
          ce = ce * 86400
          if ce < e then
            we, ending = ce, string.format('%d', ce)
            s[i + 1] = ending
          end
        end
      end
    elseif ending then
      return redis.error_reply('ERR bucketgate-state: rule ' .. string.match(argv[o + i], '^[^:]*') .. ': stored window without count')
    end
    if not we then
      -- The window that holds now, in days since 1970-01-01, ends on day we.
      if not day then
        day = now - now % 86400000000
        day = day / 86400000000
      end
      if period == -1 then
        we = day + 1
      elseif period == -7 then
        we = day - (day + 3) % 7 + 7 -- 1970-01-01 was a Thursday
      else
        -- The civil date of day: year yoe of a 400-year era from March, month mp from
        -- March (0 to 11), day d. The window ends on day a of the month after mp, or of
        -- mp itself when d is earlier than a: y years and m months from the era's March
        -- (m = 12 reaches into the next year), then days from the era's start, then from
        -- 1970-01-01.
        local a = -100 - period
        local z = day + 719468
        local era = (z - z % 146097) / 146097
        local doe = z - era * 146097
        local yoe = doe - (doe - doe % 1460) / 1460 + (doe - doe % 36524) / 36524 - (doe - doe % 146096) / 146096
        yoe = (yoe - yoe % 365) / 365
        local doy = doe - 365 * yoe - (yoe - yoe % 4) / 4 + (yoe - yoe % 100) / 100
        local m = 5 * doy + 2
        m = (m - m % 153) / 153
        local d = 153 * m + 2
        d = doy - (d - d % 5) / 5 + 1
        if d >= a then m = m + 1 end
        local y = yoe
        if m == 12 then y, m = y + 1, 0 end
        m = 153 * m + 2
        we = era * 146097 + 365 * y + (y - y % 4) / 4 - (y - y % 100) / 100 + (y - y % 400) / 400 + (m - m % 5) / 5 + a - 719469
      end
      we = we * 86400
      s[i + 1] = we
    end
    local qend = (we * 1000000 - now) / 1000 -- ms until the window ends
    qend = qend + (-qend) % 1
    quotas = (quotas or 0) + 2 ^ ((i - 1) / 2)
    if cost == 0 and not op then
      ends = ends or {}
      ends[i] = qend
    end
    if give > 0 and not (rwins and rwins[(i + 1) / 2] ~= we or gone and gone[i]) then
      count = count - give
      if count < 0 then count = 0 end
    end
    local level, full, r = cap - count, 0, (i + 1) / 2
    if level < 0 then level = 0 end
    if count > 0 then full = qend end
    if shadow == i then
      if level < need then
        denials = (denials or 0) + 2 ^ (r - 1)
      elseif cost > 0 and not (gone and gone[i]) then -- gone: a debit its reserve took nothing of
        count, full = count + cost, qend
        if debit and count > cap + cap then -- over its limit by its limit at most, never lowered
          count = count - cost
          if count < cap + cap then count = cap + cap end
        end
      end
      s[i] = count
      if count > 0 and (not qat or we > qat) then qat = we end
    else
      if level < dfewest then dfewest = level end
      if full > dreset then dreset = full end
      if level < need then
        allowed = 0
        if qend > dwait then dwait, dbinding = qend, r end
        -- A denial implies a count stored in the window (ending): the first, unless marked.
        if string.byte(ending) ~= 43 then
          cross, fig, marks = (cross or 0) + 2 ^ (r - 1), fig or {}, marks or {}
          fig[i], fig[i + 1], marks[#marks + 1], marks[#marks + 2] = count, we, argv[o + i + 1], '+' .. ending
        end
      elseif allowed == 1 then
        local was = count
        if not (gone and gone[i]) then -- gone: a debit its reserve took nothing of
          level, count = level - cost, count + cost
          if debit then
            if count > cap + cap then count = was > cap + cap and was or cap + cap end -- over its limit by its limit at most, never lowered (a limit cut since)
            level = cap - count
          end
        end
        s[i] = count
        if count * 5 >= cap * 4 and was * 5 < cap * 4 or count >= cap and was < cap then
          -- Across 80% or 100% of the limit: reported unless the window's end says it was
          -- (z: 1 for its suffix e0, 2 for E0); the end written says so from now on.
          local sign, digits, z = '', string.format('%d', we), 0
          local lf = string.match(argv[o + i], '^[^:]*') .. ':limit' -- the limit they were of
          if ending and s[i + 1] == ending then
            sign, digits, z = string.match(ending, '^(%+?)([^eE]*)(.?)')
            if z == 'e' then z = 1 elseif z == 'E' then z = 2 else z = 0 end
            if z > 0 then
              -- Reported of another limit (changed in the window): none of this one yet.
              -- No limit recorded (a previous release's marks): of this one.
              -- A limit that is not a number (by hand, another version): none written.
              local of = tonumber(call('HGET', key, lf))
              if of and of ~= cap then z = 0 end
            end
          end
          local reached = 1
          if count >= cap then reached = 2 end
          if reached > z then
            local bits = 0
            if z < 1 then bits = 2 ^ (15 + r) end
            if reached == 2 then bits = bits + 2 ^ (31 + r) end
            up, ufig = (up or 0) + bits, ufig or {}
            ufig[i], ufig[i + 1] = count, we
            s[i + 1] = sign .. digits .. (reached == 2 and 'E0' or 'e0')
            lims = lims or {}
            lims[#lims + 1], lims[#lims + 2] = lf, string.format('%d', cap)
          end
        end
        if level < fewest then fewest, binding = level, r end
        if count > 0 then
          full = qend
          if not qat or we > qat then qat = we end
        end
        if not qreset or full > qreset then qreset = full end
        if level < need and qend > wait then wait, waitrule = qend, r end
      end
    end
  else
    local level, ts = s[i], s[i + 1]
    if level then
      -- Arithmetic reads the stored strings: one that is not a number (or is missing, for
      -- a count without its stamp) stops the script with Lua's own error, before any
      -- write (the Go side reads it as bad state). A NaN or infinite count or stamp makes
      -- a level that is not a number from 0 to capacity (+inf is told apart where the
      -- level is capped), but for a stamp in the future, checked where elapsed time below
      -- zero counts as zero.
      stored, held = true, true
      local elapsed = now - ts
      if elapsed < 0 then
        if not (elapsed > -huge) then
          return redis.error_reply('ERR bucketgate-state: rule ' .. string.match(argv[o + i], '^[^:]*') .. ': stored time ' .. string.sub(ts, 1, 32) .. ' is not a finite number')
        end
        elapsed = 0
      end
      level = level + elapsed * rate / 1000000
      if give > 0 and not (gone and gone[i]) then level = level + give end
      if level > cap then
        if level == huge then level = -huge else level = cap end
      end
      if not (level > -huge) then -- below zero: a debt a settle took
        return redis.error_reply('ERR bucketgate-state: rule ' .. string.match(argv[o + i], '^[^:]*') .. ': stored tokens ' .. string.sub(s[i], 1, 32) .. ' at time ' .. string.sub(ts, 1, 32) .. ' are not a finite number')
      end
      -- A marked stamp, told by its length alone ('+' and 16 digits; the script writes
      -- no other stamp longer than 16 characters before the year 2286): denied before
      -- in this window, which an admission ends only when it finds the bucket full. ts
      -- becomes true for a mark; kept, for an enforced rule that admits now.
      if #ts > 16 then
        if level < cap and level >= need and shadow ~= i then kept = kept or {}; kept[i + 1] = true end -- need: a debit admits whatever it holds
        ts = true
      end
    elseif ts then
      return redis.error_reply('ERR bucketgate-state: rule ' .. string.match(argv[o + i], '^[^:]*') .. ': stored time without tokens')
    else
      level = cap
    end
    if shadow == i then
      -- A shadow rule, if the check is allowed: cost taken when it holds cost tokens,
      -- else a shadow denial that takes nothing.
      -- dsreset: its time until full as it stands, for a denial (which takes nothing).
      local r, full = (i + 1) / 2, (cap - level) * 1000 / rate
      full = full + (-full) % 1
      if not dsreset or full > dsreset then dsreset = full end
      if level < need then
        denials = (denials or 0) + 2 ^ (r - 1)
      elseif not (gone and gone[i]) then -- gone: a debit its reserve took nothing of
        if debit and level - cost < -cap then -- a debt of its capacity at most; one deeper already (a capacity cut since) stays
          if level > -cap then level = -cap end
        else
          level = level - cost
        end
        full = (cap - level) * 1000 / rate
        full = full + (-full) % 1
      end
      s[i] = level
      if not sreset or full > sreset then sreset = full end
    elseif n2 == 2 then
      -- The only rule: its outcome is the decision's.
      binding = 1
      if level < need then
        allowed, fewest, waitrule = 0, level, 1
        wait = (cost - level) * 1000 / rate
        wait = wait + (-wait) % 1
        if ts ~= true then -- its first denial in the window: marked
          local full = (cap - level) * 1000 / rate
          cross, fig, marks = 1, {level - level % 1, full + (-full) % 1}, {argv[o + 2], '+' .. ts} -- a debt shows below 0
        end
      else
        if gone then -- a debit its reserve took nothing of
        elseif debit and level - cost < -cap then
          if level > -cap then level = -cap end
        else
          level = level - cost
        end
        s[1], fewest = level, level
        if level < need then
          wait, waitrule = (cost - level) * 1000 / rate, 1
          wait = wait + (-wait) % 1
        end
      end
      resetafter = (cap - level) * 1000 / rate
      resetafter = resetafter + (-resetafter) % 1
    else
      -- If denied: this rule as it is.
      local r = (i + 1) / 2
      if level < dfewest then dfewest = level end
      local full = (cap - level) * 1000 / rate
      full = full + (-full) % 1
      if full > dreset then dreset = full end
      if level < need then
        allowed = 0
        local w = (cost - level) * 1000 / rate
        w = w + (-w) % 1
        if w > dwait then dwait, dbinding = w, r end
        if ts ~= true then -- its first denial in the window: marked
          cross, fig, marks = (cross or 0) + 2 ^ (r - 1), fig or {}, marks or {}
          fig[i], fig[i + 1], marks[#marks + 1], marks[#marks + 2] = level - level % 1, full, argv[o + i + 1], '+' .. ts
        end
      elseif allowed == 1 then
        -- If allowed: this rule with cost taken (but by a debit its reserve took
        -- nothing of: gone).
        if gone and gone[i] then
        elseif debit and level - cost < -cap then
          if level > -cap then level = -cap end
        else
          level = level - cost
        end
        s[i] = level
        if level < fewest then fewest, binding = level, r end
        full = (cap - level) * 1000 / rate
        full = full + (-full) % 1
        if full > resetafter then resetafter = full end
        if level < need then
          local w = (cost - level) * 1000 / rate
          w = w + (-w) % 1
          if w > wait then wait, waitrule = w, r end
        end
      end
    end
  end
end
-- blast: the buckets' part of an admission's reset after (shadow ones in sreset), which
-- its expiry rounds with now; its quotas' is their windows' ends (qat), exact.
local blast = resetafter
if qreset and qreset > resetafter then resetafter = qreset end
if dbinding then
  fewest, binding, wait, waitrule, resetafter, qat = dfewest, dbinding, dwait, dbinding, dreset, nil
end
-- needs: with a bucket stored, the ms until every rule is full under this call's rules,
-- which a call that admits nothing (a denial, a peek, a refund) lets the key live at
-- least, plus the margin: the key's expiry was set under the rules of the last
-- admission, and another plan's (a slower refill, a larger capacity) may need longer.
-- An admission's, shadow rules included; a denial's, its enforced rules' and its shadow
-- buckets' as they stand (nothing of it is written: a shadow rule's state under a slower
-- plan must outlive the denials, or its trial under-counts them). Taken before a lease's
-- denial, whose figures are its set's. Not a
-- settle's: its rules are its reserve's (signed in its id), whose admission set the
-- expiry, and giving back only brings the time they are full nearer.
local needs
if held then
  needs = resetafter
  if allowed == 1 then -- its quotas' windows' ends are qat's
    needs = blast
    if sreset and sreset > needs then needs = sreset end
  elseif dsreset and dsreset > needs then -- a shadow bucket as it stands (a quota's window keeps it)
    needs = dsreset
  end
end
if fewest < 0 then fewest = 0 end -- a bucket in debt has none left
-- Leases: a check every other rule allows takes a lease of every concurrency rule (rule
-- n2 / 2 + k), or of none when one holds its most in flight already: then it is denied,
-- its figures that rule's alone. Expired leases go first. lcounts: each set's size, its
-- mark (see the header) included. The lease is read here, before any write: one
-- pattern for one rule.
local lms, lcounts
if lease and allowed == 1 then
  local n1, ok
  lttl, n1, lnonce = string.match(lease, '^@(%d+)/(%d+) (%S+)$') -- one rule, the usual case
  if n1 then
    lttl, lmost = lttl + 0, {n1 + 0}
  else
    local spec
    spec, lnonce = string.match(lease, '^@([%d/]+) (%S+)$')
    lmost = {}
    if spec then
      for v in string.gmatch(spec, '%d+') do lmost[#lmost + 1] = v + 0 end
    end
    lttl = table.remove(lmost, 1)
  end
  lk = #KEYS - #lmost
  ok = lnonce and lnonce ~= '~' and #lmost >= 1 and lk == (rec and 3 or argv[2] ~= '0' and 2 or 1) -- the record, else the archive, else the state before the sets
  for k = 1, ok and #lmost or 0 do
    if lmost[k] < 1 or lmost[k] > 10000 then ok = false end
  end
  if not ok then
    return redis.error_reply('ERR bucketgate: a lease must be @, its ms to live, then / and the most in flight (1 to 10000) of each concurrency rule, a space and its nonce, with one sorted set per rule, the last KEYS (after the archive with usage, and the record with one)')
  end
  lms = (now - now % 1000) / 1000
  if op then
    -- A release: the lease's member out of every set (after the expired ones, 100 at
    -- most, the lowest ranks: a lease past its ttl was released by time, and counts
    -- only while in flight). Reply: how many sets held it, now.
    local ms, released = string.format('%d', lms), 0
    for k = lk + 1, #KEYS do
      local z = KEYS[k]
      local e = call('ZCOUNT', z, '-inf', ms)
      if e > 100 then -- more than a call sweeps: the lease may be one left
        call('ZREMRANGEBYRANK', z, 0, 99)
        local s = call('ZSCORE', z, lnonce)
        if s then
          call('ZREM', z, lnonce)
          if s + 0 > lms then released = released + 1 end
        end
      else
        if e > 0 then call('ZREMRANGEBYRANK', z, 0, e - 1) end
        released = released + call('ZREM', z, lnonce)
      end
    end
    return {released, now}
  end
  if not (lttl >= 1 and lttl <= 3600000 and lttl % 1 == 0) then
    return redis.error_reply('ERR bucketgate: a lease lives 1 to 3600000 ms')
  end
  lcounts = {}
  for k = 1, #lmost do
    local z = KEYS[lk + k]
    local c = call('ZCARD', z) -- its leases and its mark, or 0 when there is no set
    if c <= lmost[k] then
      lcounts[k] = c
    else -- full, counting the expired leases not swept yet: swept now (100 at most, the
      -- lowest ranks), lcounts[k] the set's members left, then c those in flight (the
      -- mark too, unless it expired with every lease)
      local e = call('ZCOUNT', z, '-inf', string.format('%d', lms))
      local gone = e > 100 and 100 or e
      if gone > 0 then call('ZREMRANGEBYRANK', z, 0, gone - 1) end
      lcounts[k], c = c - gone, c - e -- in this order: miniredis's Lua assigns in turn
      if c > lmost[k] then -- the latest lease is the one before the mark, which scores highest
        -- The wait is until enough leases expire for one to be free: the Nth latest (the
        -- earliest in flight, but for more than N in flight, N lowered by a plan since).
        local at = lcounts[k] - 1 - lmost[k]
        local first, last = call('ZRANGE', z, at, at, 'WITHSCORES'), call('ZRANGE', z, -2, -2, 'WITHSCORES')
        allowed, binding, waitrule, fewest, wait, resetafter = 0, n2 / 2 + k, n2 / 2 + k, 0, first[2] - lms, last[2] - lms
        break
      end
    end
    local left = lmost[k] - c -- binding when no more than every other rule's whole tokens left
    if c == 0 then left = left - 1 end
    local f = fewest - fewest % 1
    if not binding or left < f or left == f and binding <= n2 / 2 then fewest, binding = left, n2 / 2 + k end
  end
end
if up and allowed == 1 then cross, fig = up, ufig end -- thresholds count only when admitted

if settle then
  -- The settle's outcome, written unless the reservation was settled before: then its
  -- first outcome answers, and nothing else is written. The first write of a settle.
  local b, f = binding or 0, fewest
  if not binding then f = 0 end
  local o1 = string.format('%d %d %d %d %d %s', allowed + 2 * b + 32 * waitrule + 131072 * (f - f % 1), wait, resetafter, now, settle, b > 0 and argv[o + 2 * b - 1] or '-')
  local old = call('SET', rec, o1, 'NX', 'GET', 'PXAT', string.format('%d', exp + life)) -- kept life ms past the expiry
  if old then return again(old) end
end

-- at: when the key must expire (ms), nil to leave it; newday: the first write of the
-- day's usage, which prunes the days past keeping; longer: for a key known to have its
-- expiry (a call that admits nothing, a quota's window stored), GT and nothing more.
local at, newday, longer
if needs and not settle and (allowed == 0 or give > 0 or most == 0) then
  -- No call when the key lives that long already: a quota's window (below), or for a
  -- denial counted in usage the day's usage, which lives to the day's end at least.
  -- 999 ms: under the rules of the last admission, whose expiry rounds its time and
  -- the rules' up apart and so may be a millisecond earlier, the expiry stays.
  at, longer = (now + (-now) % 1000) / 1000 + needs + 999, true
  if qat and qat * 1000 + 999 > at then at = qat * 1000 + 999 end
end
if allowed == 1 and most > 0 then
  if give == 0 then
    -- TIME's microseconds have six digits nine times in ten: then the stamp is a join.
    local stamp = #t[2] == 6 and t[1] .. t[2] or string.format('%d', now)
    local last = blast
    if sreset and sreset > last then last = sreset end
    at = (now + (-now) % 1000) / 1000 + last + 1000
    if qat and qat * 1000 + 1000 > at then at = qat * 1000 + 1000 end
    if not (keep or quotas) then
      -- One HSET for one or two rules (no table to build), one per rule beyond.
      if n2 == 2 then
        call('HSET', key, argv[o + 1], s[1], argv[o + 2], kept and '+' .. stamp or stamp) -- kept: marked
      elseif n2 == 4 then
        call('HSET', key, argv[o + 1], s[1], argv[o + 2], kept and kept[2] and '+' .. stamp or stamp, argv[o + 3], s[3], argv[o + 4], kept and kept[4] and '+' .. stamp or stamp)
      else
        for i = 1, n2, 2 do
          call('HSET', key, argv[o + i], s[i], argv[o + i + 1], kept and kept[i + 1] and '+' .. stamp or stamp)
        end
      end
    else
      -- With usage, the day's first write makes the key live until the day's usage is
      -- no longer kept; a later one needs no PEXPIREAT unless a rule lives past the
      -- day's end (kept at least 1 day, the day's usage lives to the day's end at least),
      -- as a denial's: not past the days kept now, which may be more than the day's first
      -- write kept (a larger ARGV[2] since: its key expires sooner). The days kept are read
      -- and checked, before any write, on the day's first write.
      local a, x -- the day's allowed checks and their cost above one each, after this check
      if keep then
        newday = not s[n2 + 1]
        if newday then
          keep = tonumber(keep)
          if not (keep and keep >= 1 and keep <= 400 and keep % 1 == 0 and KEYS[2]) then
            return redis.error_reply('ERR bucketgate: usage needs the days it is kept, a whole number from 1 to 400, and its archive, KEYS[2]')
          end
        elseif at <= (day + 1) * 86400000 + 1000 then
          at = nil
        end
        if settle then -- the extra it took, counted in the cost: no check more
          a, x = s[n2 + 1] or '0', string.format('%d', (s[n2 + 2] or 0) + cost)
        else
          a = string.format('%d', (s[n2 + 1] or 0) + 1)
          if ux then x = string.format('%d', (s[n2 + 2] or 0) + cost - 1) end
        end
      end
      -- A quota's values are its count, a whole number, and its window's end (s[i + 1]:
      -- the stored string, or a new end).
      local v1, v2, v3, v4 = s[1], stamp, s[3], stamp
      if kept then
        if kept[2] then v2 = '+' .. stamp end
        if kept[4] then v4 = '+' .. stamp end
      end
      if quotas then
        if quotas % 2 == 1 then v1, v2 = string.format('%d', v1), s[2] end
        if quotas % 4 >= 2 then v3, v4 = string.format('%d', v3), s[4] end
      end
      if n2 == 2 then
        if not keep then
          call('HSET', key, argv[o + 1], v1, argv[o + 2], v2)
        elseif ux then
          call('HSET', key, argv[o + 1], v1, argv[o + 2], v2, ua, a, ux, x)
        else
          call('HSET', key, argv[o + 1], v1, argv[o + 2], v2, ua, a)
        end
      elseif n2 == 4 then
        if not keep then
          call('HSET', key, argv[o + 1], v1, argv[o + 2], v2, argv[o + 3], v3, argv[o + 4], v4)
        elseif ux then
          call('HSET', key, argv[o + 1], v1, argv[o + 2], v2, argv[o + 3], v3, argv[o + 4], v4, ua, a, ux, x)
        else
          call('HSET', key, argv[o + 1], v1, argv[o + 2], v2, argv[o + 3], v3, argv[o + 4], v4, ua, a)
        end
      else
        for i = 1, n2, 2 do
          if quotas and quotas % 2 ^ ((i + 1) / 2) >= 2 ^ ((i - 1) / 2) then
            call('HSET', key, argv[o + i], string.format('%d', s[i]), argv[o + i + 1], s[i + 1])
          else
            call('HSET', key, argv[o + i], s[i], argv[o + i + 1], kept and kept[i + 1] and '+' .. stamp or stamp)
          end
        end
        if ux then call('HSET', key, ua, a, ux, x) elseif keep then call('HSET', key, ua, a) end
      end
    end
    if lims then call('HSET', key, unpack(lims)) end
  else
    -- A refund: give tokens added to each stored bucket count, at its stamp, capped at
    -- the capacity unless the count holds more already; written only where that raised
    -- it. A quota's count of the current window, lowered (s[i]), written if it was. A
    -- settle with usage (keep) gives give back from the day's cost: its fields (w) go in
    -- one HSET with the counts it raises, the days kept read and checked first when it
    -- is the day's first usage.
    local w
    if keep then
      newday = not s[n2 + 1]
      if newday then
        keep = tonumber(keep)
        if not (keep and keep >= 1 and keep <= 400 and keep % 1 == 0 and KEYS[2]) then
          return redis.error_reply('ERR bucketgate: usage needs the days it is kept, a whole number from 1 to 400, and its archive, KEYS[2]')
        end
      end
      w = {ux, string.format('%d', (s[n2 + 2] or 0) - give)}
      if newday then w[3], w[4] = ua, '0' end
    end
    for i = 1, n2, 2 do
      if before[i] then
        local v -- the count to write, if any
        if quotas and quotas % 2 ^ ((i + 1) / 2) >= 2 ^ ((i - 1) / 2) then
          if s[i + 1] == before[i + 1] and s[i] < before[i] + 0 then v = string.format('%d', s[i]) end
        else
          local count, cap = before[i] + 0, argv[o + n2 + i] + 0
          if cap < 0 then cap = -cap end -- a shadow rule
          local raised = count + give
          if raised > cap then raised = cap end
          if raised > count and not (gone and gone[i]) then v = raised end
        end
        if v then
          if w then w[#w + 1], w[#w + 2] = argv[o + i], v else call('HSET', key, argv[o + i], v) end
        end
      end
    end
    if w then call('HSET', key, unpack(w)) end
  end
elseif op == 'reset' then -- a refund is always allowed (a settle at its estimate gives 0), a check never gets here with op
  local f, ms = {unpack(argv, o + 1, o + n2)}, string.format('%d', (now - now % 1000) / 1000)
  for i = 1, n2, 2 do -- and each quota's limit its thresholds were of
    if quotas and quotas % 2 ^ ((i + 1) / 2) >= 2 ^ ((i - 1) / 2) then f[#f + 1] = string.match(argv[o + i], '^[^:]*') .. ':limit' end
  end
  call('HDEL', key, unpack(f))
  f = {}
  for i = 1, n2, 2 do f[i], f[i + 1] = string.match(argv[o + i], '^[^:]*'), ms end
  call('HSET', KEYS[2], unpack(f))
  call('PEXPIRE', KEYS[2], '3600000')
elseif keep and allowed == 0 then
  -- A denial counted in usage: its one write. It may be the day's first when the day
  -- has no allowed check yet: then the days kept are read and checked first.
  if not s[n2 + 1] then
    keep = tonumber(keep)
    if not (keep and keep >= 1 and keep <= 400 and keep % 1 == 0 and KEYS[2]) then
      return redis.error_reply('ERR bucketgate: usage needs the days it is kept, a whole number from 1 to 400, and its archive, KEYS[2]')
    end
  end
  newday = call('HINCRBY', key, string.format('u:%d:l', day), '1') == 1 and not s[n2 + 1]
  -- Not the day's first usage: its first made the key live past the day's end.
  if at and not newday and at <= (day + 1) * 86400000 + 1000 then at = nil end
end
if newday then
  -- The day's first usage in the state hash: the usage of earlier days still in it (the
  -- last active day's, read from the small hash) moves to the archive (KEYS[2]), a field
  -- "a c l" per day, added to a day archived before (written under a clock ahead);
  -- the archive's days that fell past keeping since that day go; both keys live as long
  -- as the usage in them is kept.
  local h, olds, names, last = call('HGETALL', key), {}, {}
  for k = 1, #h, 2 do
    local d, w = string.match(h[k], '^u:(%d+):([axl])$')
    d = tonumber(d)
    if d and d ~= day then
      names[#names + 1] = h[k]
      local u = olds[d] or {a = 0, x = 0, l = 0}
      u[w], olds[d] = tonumber(h[k + 1]) or 0, u
      if not last or d > last then last = d end
    end
  end
  if last then
    local archive = KEYS[2]
    for d, u in pairs(olds) do
      if d > day - keep then
        local c = u.a + u.x
        if call('HSETNX', archive, d, string.format('%d %d %d', u.a, c, u.l)) == 0 then
          local a0, c0, l0 = string.match(call('HGET', archive, d) or '', '^(%d+) (%-?%d+) (%d+)$') -- a settle's cost may be negative
          call('HSET', archive, d, string.format('%d %d %d', (tonumber(a0) or 0) + u.a, (tonumber(c0) or 0) + c, (tonumber(l0) or 0) + u.l))
        end
      end
    end
    call('HDEL', key, unpack(names))
    if last <= day - keep then
      call('DEL', archive)
    else
      local gone = {}
      for d = last - keep + 1, day - keep do gone[#gone + 1] = d end
      if #gone > 0 then call('HDEL', archive, unpack(gone)) end
      if call('HLEN', archive) >= keep then
        -- More days than are kept (at most keep - 1 before today): kept under a larger
        -- ARGV[2] before it was lowered. Every day past keeping goes.
        gone = {}
        for _, d in ipairs(call('HKEYS', archive)) do
          local n = tonumber(d)
          if n and n <= day - keep then gone[#gone + 1] = d end
        end
        if #gone > 0 then call('HDEL', archive, unpack(gone)) end
      end
      local upto = string.format('%d', (last + keep) * 86400000 + 1000)
      if call('PEXPIREAT', archive, upto, 'GT') == 0 then call('PEXPIREAT', archive, upto, 'NX') end
    end
  end
  local kept = (day + keep) * 86400000 + 1000
  if not at or kept > at then at = kept end
end
if lcounts and allowed == 1 then
  -- The lease, in every set, and the set's mark '~' scored by when the set expires: the
  -- first whole minute (Unix time) at least the margin past its latest lease, both
  -- raised only (GT). The mark moves, and the set's expiry with it, only when this
  -- lease's minute is later: ZADD then changes two members (CH), else one or none (a
  -- lease whose member was there already, as late, came with a mark as late).
  local x = lms + lttl + 1000
  x = string.format('%d', x + (-x) % 60000)
  local e = string.format('%d', lms + lttl)
  for k = 1, #lmost do
    local z = KEYS[lk + k]
    if call('ZADD', z, 'GT', 'CH', e, lnonce, x, '~') == 2 then
      call('PEXPIREAT', z, x, lcounts[k] == 0 and 'NX' or 'GT') -- an empty set was removed: new
    end
  end
  if n2 == 0 and not keep then at = nil end -- a lease alone writes no state hash
end
if at and lives then
  -- A quota's count stored in its window: the admission that wrote it made the key live
  -- 1000 ms past the window's end, so no call for less, and GT alone for more (the key
  -- has its expiry). An admission of a quota's window otherwise made two calls, GT and
  -- NX, each finding the same expiry.
  if at <= lives * 1000 + 1000 then at = nil else longer = true end
end
if at then
  -- GT never shortens the key's life, but does nothing to a key with no expiry yet: NX
  -- sets that. A key with no stored rule yet is most likely new, so it tries NX first:
  -- one call usually does it either way.
  local first, second = 'GT', 'NX'
  if not stored then first, second = 'NX', 'GT' end
  at = string.format('%d', at)
  if call('PEXPIREAT', key, at, first) == 0 and not longer then call('PEXPIREAT', key, at, second) end
end

if shadow then
  if allowed == 0 then denials = 0 end
  if not binding then fewest, binding = 0, 0 end -- no enforced rule
end
if rec then
  -- A hold: an idempotent request's record, its decision (a replay crosses nothing);
  -- then the reply with its two more values, and any crossings after them, as below.
  local flags = allowed + 2 * binding + 32 * waitrule + 512 * (denials or 0) + 131072 * (fewest - fewest % 1)
  if not settle then
    call('SET', rec, string.format('%s %d %d %d %d', fp, flags, wait, resetafter, now), 'PX', life)
  end
  if cross then
    if marks then call('HSET', key, unpack(marks)) end
    local reply = {flags + 140737488355328, wait, resetafter, now, 0, settle or 0, cross}
    for i = 1, n2, 2 do
      reply[i + 7], reply[i + 8] = fig[i] or 0, fig[i + 1] or 0
    end
    return reply
  end
  return {flags, wait, resetafter, now, 0, settle or 0}
end
if cost == 0 and not op then
  -- A peek: the four, then every rule's tokens (a quota's room) and the ms until it is
  -- full (a quota's window ends).
  local reply = {allowed + 2 * binding + 32 * waitrule + 131072 * (fewest - fewest % 1), wait, resetafter, now}
  for i = 1, n2, 2 do
    local cap, left, full = argv[o + n2 + i] + 0
    if cap < 0 then cap = -cap end
    if ends and ends[i] then
      left, full = cap - s[i], ends[i]
      if left < 0 then left = 0 end
    else
      left = s[i] - s[i] % 1
      if left < 0 then left = 0 end
      full = (cap - s[i]) * 1000 / argv[o + n2 + i + 1]
      full = full + (-full) % 1
    end
    reply[i + 4], reply[i + 5] = left, full
  end
  return reply
end
if cross then
  -- Crossings: a first denial's one more write, its rules marked (here, where an
  -- admission pays no test for it); then flag bit 47, the bits, and two figures per
  -- rule (0 and 0: none).
  if marks then call('HSET', key, unpack(marks)) end
  local reply = {allowed + 2 * binding + 32 * waitrule + 512 * (denials or 0) + 131072 * (fewest - fewest % 1) + 140737488355328, wait, resetafter, now, cross}
  for i = 1, n2, 2 do
    reply[i + 5], reply[i + 6] = fig[i] or 0, fig[i + 1] or 0
  end
  return reply
end
if shadow then
  return {allowed + 2 * binding + 32 * waitrule + 512 * (denials or 0) + 131072 * (fewest - fewest % 1), wait, resetafter, now}
end
return {allowed + 2 * binding + 32 * waitrule + 131072 * (fewest - fewest % 1), wait, resetafter, now}
