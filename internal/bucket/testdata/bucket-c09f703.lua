-- bucketgate token bucket: one operation on an identity's buckets for one or more rules,
-- atomically: a check (take cost tokens from every rule, or nothing), a refund or a reset.
--
-- This header is where the layout of KEYS, ARGV and the reply is written; lua.go names
-- the same positions for the Go side.
--
-- KEYS[1]   the identity's state hash, "<prefix>{<identity>}". Each rule of the identity
--           keeps two fields in it: "<rule>:tokens" (a double) and "<rule>:ts" (the Redis
--           TIME of its last write, in microseconds). A rule with no fields is full.
-- ARGV[1]   the operation, left out for the usual check of cost 1 (ARGV then holds 4n
--           values for n rules, 4n + 1 with the operation):
--             n >= 0    a check of cost n: allowed when every enforced rule holds n
--                       tokens, and then n is taken from every rule; 0 is a peek.
--             -n        a refund of n >= 1: n tokens back to every rule that has state,
--                       never above its capacity.
--             "reset"   every rule's fields removed: every rule full again (the key goes
--                       with its last field).
-- ARGV[..]  then, for n rules: the 2n field names, "<rule>:tokens" then "<rule>:ts" for
--           each rule in turn; then 2n numbers, capacity (whole tokens; negated for a
--           shadow rule) then refill per second for each rule in the same order. The
--           caller spells the field names, so that HMGET reads them straight from ARGV
--           and no name is built here.
--
-- Bounds, the same as bucket.Rule.Validate: capacity 1 to 1e9, refill per second above 0
-- and at most 1e9, capacity / refill at most 31622400 s (366 days), cost and refund at
-- most every rule's capacity, no rule twice. A capacity or a refill that is not a number
-- at all stops the script with Lua's arithmetic error (they are read by arithmetic, not
-- tonumber, which would read each twice); the Go side never sends one.
--
-- A shadow rule is decided as if it were enforced, but never denies: a check is allowed
-- or denied by the enforced rules alone, and the reply's figures describe them alone. When
-- a check is allowed, a shadow rule holding cost tokens gives them, and one holding fewer
-- is a shadow denial: it gives nothing (its fields are brought up to now, which changes
-- no figure); when the enforced rules deny, nothing is written, shadow rules included.
--
-- Reply: four integers {flags, wait (ms until an identical check could be allowed,
-- rounded up: the retry-after when denied, 0 when it could be now), reset after (ms until
-- every rule is full, rounded up), now (Redis TIME, us)}, over the enforced rules, after
-- the operation. flags packs, from its lowest bit: allowed (1 bit: 0 or 1), the binding
-- rule (4 bits: the 1-based index of the rule; 0 when every rule is shadow), the wait
-- rule (4 bits: the index of the rule the wait is for, 0 when wait is 0), the shadow
-- denials of an allowed check (8 bits: bit r-1 for rule r), and from bit 17 on remaining
-- (the floor of the fewest tokens left): allowed + 2 binding + 32 wait rule + 512
-- denials + 131072 remaining, below 2^47, exact in a double. A refund and a reset are
-- allowed with no wait.
--
-- A check that takes tokens writes every rule and sets the key to expire 1000 ms (the
-- margin, bucket.ExpiryMargin) after every bucket written is full again, never shortening
-- its life (PEXPIREAT GT, or NX on a key that has no expiry yet). A denial or a peek
-- writes nothing. A refund writes the rules that have state and leaves the expiry, which
-- it can only have made later than needed. Arguments are checked before any write; a bad
-- one is an error reply starting with "ERR bucketgate:". Stored fields that are not the
-- script's stop a check or a refund before any write: that identity fails until its
-- fields expire or are reset. A field that is not a number, or a count without its
-- stamp, stops it with Lua's own arithmetic error (lua.ArithmeticErrors); a stamp without
-- its count, or a count or a stamp that is not finite (or a count below zero once
-- refilled), with an error reply starting with "ERR bucketgate-state:". A reset reads no
-- field.
--
-- The script runs once per decision, so it is written for few Lua instructions, few
-- calls out of the VM and few new tables and strings (make bench-instructions counts
-- them; each Lua instruction costs Redis about 50 machine instructions, each redis.call
-- several thousand): globals are read once into locals, one pass over the rules keeps
-- the figures of both outcomes (a single rule, the usual case, keeps only its own),
-- ceil(x) is x + (-x) % 1 and floor(x) is x - x % 1 (exact for doubles, no call), every
-- rule's fields go in one HSET for one or two rules, and integers go to Redis as strings
-- (7.0 formats a Lua number with the slower %.17g). Leaving the operation out keeps ARGV
-- within 4 values for one rule and 8 for two: Redis grows the table it builds for ARGV
-- by doubling, and each doubling costs as much as several values.

local argv, call, tonumber, huge = ARGV, redis.call, tonumber, 1 / 0 -- math.huge is not infinite on every Lua
local key, nargs = KEYS[1], #argv

-- o is 1 when ARGV[1] is the operation, 0 when it is left out (a check of cost 1). The
-- usual cost, '1', skips tonumber: comparing Lua strings compares pointers.
local o = nargs % 4
if o > 1 or nargs < o + 4 then
  return redis.error_reply('ERR bucketgate: ARGV must be the operation (or nothing, for a check of cost 1), two field names per rule, then capacity and rate per rule')
end
local cost, give, reset = 1, 0
if o == 1 then
  cost = argv[1]
  if cost == '1' then
    cost = 1
  else
    local n = tonumber(cost)
    if n and n >= 0 and n % 1 == 0 then
      cost = n
    elseif n and n <= -1 and n % 1 == 0 then
      cost, give = 0, -n
    elseif cost == 'reset' then
      cost, reset = 0, true
    else
      return redis.error_reply('ERR bucketgate: operation must be a whole number (a cost >= 0, or -n to refund n) or reset')
    end
  end
end
-- Rule r's fields are ARGV[o+2r-1] and ARGV[o+2r], its capacity and rate ARGV[o+n2+2r-1]
-- and ARGV[o+n2+2r]: the loops below run i = 2r-1 over 1, 3, .., n2-1, and s[i], s[i+1]
-- are rule r's stored fields.
local n2 = (nargs - o) / 2
local most = cost + give -- one of them is 0: what every capacity must hold
local least = most -- the least capacity this operation allows
if least < 1 then least = 1 end

-- Bounds are written as numbers where they are used, so that no local costs a load per
-- call: capacity 1e9 (bucket.MaxCapacity), refill 1e9 per second
-- (bucket.MaxRefillPerSecond), fill time 31622400 s (bucket.MaxFillTime), expiry margin
-- 1000 ms (bucket.ExpiryMargin).

local t = call('TIME')
local now = t[1] * 1000000 + t[2]
local s
if reset then s = {} elseif n2 == 2 then s = call('HMGET', key, argv[o + 1], argv[o + 2]) else s = call('HMGET', key, unpack(argv, o + 1, o + n2)) end

-- One pass over the rules: check each, refill it (a timestamp in the future, after a
-- failover to a skewed replica, counts as now; a refund adds its tokens before the cap)
-- and, with more than one rule, keep the figures of both outcomes, since whether every
-- enforced rule has cost tokens is known only at the end: those of a denial (d...) for
-- every rule, those of an admission while no rule has denied. Binding rule: when allowed,
-- the first with the fewest tokens left; when denied, the first denying rule with the
-- longest wait. Reset: the longest time until a rule is full. Wait, when allowed: the
-- longest time until a rule has cost tokens again. s[i] becomes rule r's tokens after an
-- admission, for HSET. Shadow rules keep their own figures: the index i of the last one
-- met (shadow), their denials (denials) and the longest time until one is full (sreset),
-- for the expiry. Locals that start nil are set by one instruction: binding and dbinding
-- get their rule before they are read, the shadow figures are set by the first shadow
-- rule, stored once a rule has state. An error about a rule names it by its tokens field
-- less ":tokens" (string.sub(argv[o + i], 1, -8)), written out on each error path: a
-- helper function would be a new closure per call.
local allowed, fewest, wait, waitrule, resetafter, dfewest, dwait, dreset = 1, huge, 0, 0, 0, huge, 0, 0
local binding, dbinding, shadow, denials, sreset, stored
for i = 1, n2, 2 do
  local j = o + n2 + i
  local cap, rate = argv[j] + 0, argv[j + 1] + 0
  -- One test for the usual rule; the rest tells a shadow rule (negated capacity) from a
  -- bad one.
  if cap < least or cap > 1e9 or cap % 1 ~= 0 or not (rate > 0 and rate <= 1e9) or cap / rate > 31622400 then
    if cap <= -1 and cap >= -1e9 and cap % 1 == 0 then cap, shadow = -cap, i end
    if cap < 1 or cap > 1e9 or cap % 1 ~= 0 then
      return redis.error_reply('ERR bucketgate: rule ' .. string.sub(argv[o + i], 1, -8) .. ': capacity must be a whole number from 1 to 1e9 (negated for a shadow rule)')
    end
    if not (rate > 0 and rate <= 1e9) then
      return redis.error_reply('ERR bucketgate: rule ' .. string.sub(argv[o + i], 1, -8) .. ': refill per second must be above 0 and at most 1e9')
    end
    if cap / rate > 31622400 then
      return redis.error_reply('ERR bucketgate: rule ' .. string.sub(argv[o + i], 1, -8) .. ': fills in more than 366 days')
    end
    if most > cap then
      return redis.error_reply('ERR bucketgate: rule ' .. string.sub(argv[o + i], 1, -8) .. ': ' .. (give > 0 and 'refund ' or 'cost ') .. most .. ' exceeds capacity ' .. cap)
    end
  end
  if i > 1 then -- the first rule skips setting up an empty loop
    local name = argv[o + i]
    for k = o + 1, o + i - 2, 2 do
      if argv[k] == name then
        return redis.error_reply('ERR bucketgate: rule ' .. string.sub(name, 1, -8) .. ' appears twice')
      end
    end
  end
  local level, ts = s[i], s[i + 1]
  if level then
    -- Arithmetic reads the stored strings: one that is not a number (or is missing, for
    -- a count without its stamp) stops the script with Lua's own error, before any
    -- write (the Go side reads it as bad state). A NaN or infinite count or stamp makes
    -- a level that is not a number from 0 to capacity (+inf is told apart where the
    -- level is capped), but for a stamp in the future, checked where elapsed time below
    -- zero counts as zero.
    stored = true
    local elapsed = now - ts
    if elapsed < 0 then
      if not (elapsed > -huge) then
        return redis.error_reply('ERR bucketgate-state: rule ' .. string.sub(argv[o + i], 1, -8) .. ': stored time ' .. string.sub(ts, 1, 32) .. ' is not a finite number')
      end
      elapsed = 0
    end
    level = level + elapsed * rate / 1000000 + give
    if level > cap then
      if level == huge then level = -1 else level = cap end
    end
    if not (level >= 0) then
      return redis.error_reply('ERR bucketgate-state: rule ' .. string.sub(argv[o + i], 1, -8) .. ': stored tokens ' .. string.sub(s[i], 1, 32) .. ' at time ' .. string.sub(ts, 1, 32) .. ' are not a finite number >= 0')
    end
  elseif ts then
    return redis.error_reply('ERR bucketgate-state: rule ' .. string.sub(argv[o + i], 1, -8) .. ': stored time without tokens')
  else
    level = cap
  end
  if shadow == i then
    -- A shadow rule, if the check is allowed: cost taken when it holds cost tokens,
    -- else a shadow denial that takes nothing.
    local r = (i + 1) / 2
    if level < cost then
      denials = (denials or 0) + 2 ^ (r - 1)
    else
      level = level - cost
    end
    s[i] = level
    local full = (cap - level) * 1000 / rate
    full = full + (-full) % 1
    if not sreset or full > sreset then sreset = full end
  elseif n2 == 2 then
    -- The only rule: its outcome is the decision's.
    binding = 1
    if level < cost then
      allowed, fewest, waitrule = 0, level, 1
      wait = (cost - level) * 1000 / rate
      wait = wait + (-wait) % 1
    else
      level = level - cost
      s[1], fewest = level, level
      if level < cost then
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
    if level < cost then
      allowed = 0
      local w = (cost - level) * 1000 / rate
      w = w + (-w) % 1
      if w > dwait then dwait, dbinding = w, r end
    elseif allowed == 1 then
      -- If allowed: this rule with cost taken.
      level = level - cost
      s[i] = level
      if level < fewest then fewest, binding = level, r end
      full = (cap - level) * 1000 / rate
      full = full + (-full) % 1
      if full > resetafter then resetafter = full end
      if level < cost then
        local w = (cost - level) * 1000 / rate
        w = w + (-w) % 1
        if w > wait then wait, waitrule = w, r end
      end
    end
  end
end
if dbinding then
  fewest, binding, wait, waitrule, resetafter = dfewest, dbinding, dwait, dbinding, dreset
end

if allowed == 1 and most > 0 then
  -- TIME's microseconds have six digits nine times in ten: then the stamp is a join.
  local stamp = #t[2] == 6 and t[1] .. t[2] or string.format('%d', now)
  if give == 0 then
    -- One HSET for one or two rules (no table to build), one per rule beyond.
    if n2 == 2 then
      call('HSET', key, argv[o + 1], s[1], argv[o + 2], stamp)
    elseif n2 == 4 then
      call('HSET', key, argv[o + 1], s[1], argv[o + 2], stamp, argv[o + 3], s[3], argv[o + 4], stamp)
    else
      for i = 1, n2, 2 do
        call('HSET', key, argv[o + i], s[i], argv[o + i + 1], stamp)
      end
    end
    -- GT never shortens the key's life, but does nothing to a key with no expiry yet: NX
    -- sets that. A key with no stored rule yet is most likely new, so it tries NX first:
    -- one call usually does it either way.
    local last = resetafter
    if sreset and sreset > last then last = sreset end
    local at, first, second = string.format('%d', (now + (-now) % 1000) / 1000 + last + 1000), 'GT', 'NX'
    if not stored then first, second = 'NX', 'GT' end
    if call('PEXPIREAT', key, at, first) == 0 then call('PEXPIREAT', key, at, second) end
  else
    -- A refund: the rules with state (a stamp), whose expiry stands.
    for i = 1, n2, 2 do
      if s[i + 1] then call('HSET', key, argv[o + i], s[i], argv[o + i + 1], stamp) end
    end
  end
elseif reset then
  call('HDEL', key, unpack(argv, o + 1, o + n2))
end

if shadow then
  if allowed == 0 then denials = 0 end
  if not binding then fewest, binding = 0, 0 end -- no enforced rule
  return {allowed + 2 * binding + 32 * waitrule + 512 * (denials or 0) + 131072 * (fewest - fewest % 1), wait, resetafter, now}
end
return {allowed + 2 * binding + 32 * waitrule + 131072 * (fewest - fewest % 1), wait, resetafter, now}
