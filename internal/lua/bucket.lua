-- bucketgate token bucket: decide one request against one or more rules, atomically.
--
-- This header is where the layout of KEYS, ARGV and the reply is written; lua.go names
-- the same positions for the Go side.
--
-- KEYS[1]   the identity's state hash, "<prefix>{<identity>}". Each rule of the identity
--           keeps two fields in it: "<rule>:tokens" (a double) and "<rule>:ts" (the Redis
--           TIME of its last write, in microseconds).
-- ARGV[1]   cost: whole tokens taken from every rule when all have enough; 0 is a peek.
-- ARGV[2..] for n rules: the 2n field names, "<rule>:tokens" then "<rule>:ts" for each
--           rule in turn; then 2n numbers, capacity (whole tokens) then refill per second
--           for each rule in the same order. The caller spells the field names, so that
--           HMGET reads them straight from ARGV and no name is built here.
--
-- Reply: seven integers {allowed (0 or 1), binding rule (1-based index of the rule),
-- remaining (floor of the fewest tokens left), wait (ms until an identical request could
-- be allowed, rounded up: the retry-after when denied, 0 when it could be now), reset
-- after (ms until every rule is full, rounded up), now (Redis TIME, us), wait rule
-- (index of the rule the wait is for, 0 when wait is 0)}.
--
-- A write sets the key to expire MARGIN ms after every bucket written is full again, and
-- never shortens its life (PEXPIREAT GT, or NX on a key that has no expiry yet). A denial
-- or a peek writes nothing. Arguments are checked before any write; a bad one is an
-- error reply starting with "ERR bucketgate:". A stored field that is not a number
-- (never written by this script) stops the script with an error before any write.
--
-- The script runs once per decision, so it is written for few Lua instructions, few
-- calls out of the VM and few new tables and strings (make bench-instructions counts
-- them): globals are read once into locals, one pass over the rules keeps the figures of
-- both outcomes, ceil(x) is x + (-x) % 1 and floor(x) is x - x % 1 (exact for doubles,
-- no call), and integers go to Redis as strings (7.0 formats a Lua number with the
-- slower %.17g).

local MARGIN = 1000 -- ms; bucket.ExpiryMargin on the Go side

local argv, call, tonumber = ARGV, redis.call, tonumber
local key, nargs = KEYS[1], #argv

-- The usual cost, 1 token, skips tonumber: comparing Lua strings compares pointers.
local cost = argv[1]
if cost == '1' then
  cost = 1
else
  cost = tonumber(cost)
  if not cost or cost < 0 or cost % 1 ~= 0 then
    return redis.error_reply('ERR bucketgate: cost must be a whole number >= 0')
  end
end
if nargs < 5 or nargs % 4 ~= 1 then
  return redis.error_reply('ERR bucketgate: ARGV must be cost, two field names per rule, then capacity and rate per rule')
end
-- Rule r's fields are ARGV[2r] and ARGV[2r+1], its capacity and rate ARGV[n2+2r] and
-- ARGV[n2+2r+1]: the loops below run i = 2r-1 over 1, 3, .., n2-1.
local n2 = (nargs - 1) / 2

local t = call('TIME')
local now = t[1] * 1000000 + t[2]
local s = call('HMGET', key, unpack(argv, 2, n2 + 1))

-- One pass over the rules: check each, refill it (a timestamp in the future, after a
-- failover to a skewed replica, counts as now) and keep the figures of both outcomes,
-- since whether every rule has cost tokens is known only at the end: those of a denial
-- (d...) for every rule, those of an admission while no rule has denied. Binding rule:
-- when allowed, the first with the fewest tokens left; when denied, the first denying
-- rule with the longest wait. Reset: the longest time until a rule is full. Wait, when
-- allowed: the longest time until a rule has cost tokens again. s[i] becomes rule r's
-- tokens after an admission, for HSET.
local allowed, fewest, binding, wait, waitrule, reset = 1, math.huge, 1, 0, 0, 0
local dfewest, dbinding, dwait, dreset = math.huge, 1, 0, 0
local fresh = true -- no rule has state yet: the key is most likely new
-- An error about a rule names it by its tokens field less ":tokens" (string.sub(name, 1,
-- -8)), written out on each error path: a helper function would be a new closure per call.
for i = 1, n2, 2 do
  local name, cap, rate = argv[i + 1], tonumber(argv[n2 + i + 1]), tonumber(argv[n2 + i + 2])
  if not cap or cap < 1 or cap % 1 ~= 0 then
    return redis.error_reply('ERR bucketgate: rule ' .. string.sub(name, 1, -8) .. ': capacity must be a whole number >= 1')
  end
  if not rate or not (rate > 0) or rate == math.huge then
    return redis.error_reply('ERR bucketgate: rule ' .. string.sub(name, 1, -8) .. ': refill per second must be a finite number > 0')
  end
  if cost > cap then
    return redis.error_reply('ERR bucketgate: rule ' .. string.sub(name, 1, -8) .. ': cost ' .. cost .. ' exceeds capacity ' .. cap)
  end
  if i > 1 then -- the first rule skips setting up an empty loop
    for k = 2, i - 1, 2 do
      if argv[k] == name then
        return redis.error_reply('ERR bucketgate: rule ' .. string.sub(name, 1, -8) .. ' appears twice')
      end
    end
  end
  local level, ts = s[i], s[i + 1]
  if level and ts then
    fresh = false
    local elapsed = now - ts
    if elapsed < 0 then elapsed = 0 end
    level = level + elapsed * rate / 1000000
    if level > cap then level = cap end
  else
    level = cap
  end
  local r = (i + 1) / 2
  -- If denied: this rule as it is.
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
    if full > reset then reset = full end
    if level < cost then
      local w = (cost - level) * 1000 / rate
      w = w + (-w) % 1
      if w > wait then wait, waitrule = w, r end
    end
  end
end
if allowed == 0 then
  fewest, binding, wait, waitrule, reset = dfewest, dbinding, dwait, dbinding, dreset
end

if allowed == 1 and cost > 0 then
  -- TIME's microseconds have six digits nine times in ten: then the stamp is a join.
  local stamp = #t[2] == 6 and t[1] .. t[2] or string.format('%d', now)
  -- One HSET per rule: no table to build, and one call for the usual single rule.
  for i = 1, n2, 2 do
    call('HSET', key, argv[i + 1], s[i], argv[i + 2], stamp)
  end
  -- GT never shortens the key's life, but does nothing to a key with no expiry yet: NX
  -- sets that. A fresh key tries NX first, so that one call usually does it either way.
  local at, first, second = string.format('%d', (now + (-now) % 1000) / 1000 + reset + MARGIN), 'GT', 'NX'
  if fresh then first, second = 'NX', 'GT' end
  if call('PEXPIREAT', key, at, first) == 0 then call('PEXPIREAT', key, at, second) end
end

return {allowed, binding, fewest - fewest % 1, wait, reset, now, waitrule}
