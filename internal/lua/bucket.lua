-- bucketgate token bucket: decide one request against one or more rules, atomically.
--
-- KEYS[1]   the identity's state hash, "<prefix>{<identity>}". Each rule of the identity
--           keeps two fields in it: "<rule>:tokens" (a double) and "<rule>:ts" (the Redis
--           TIME of its last write, in microseconds). Field "expires" holds the Redis time
--           (milliseconds) at which every bucket ever written to the hash is full again.
-- ARGV[1]   cost: whole tokens taken from every rule when all have enough; 0 is a peek.
-- ARGV[2]   expiry margin in milliseconds, added to "expires" for the key's PEXPIREAT.
-- ARGV[3..] one triple per rule: name, capacity (whole tokens), refill per second.
--
-- Reply: six integers {allowed (0 or 1), binding rule (1-based index into the triples),
-- remaining (floor of the fewest tokens left), retry after (ms, rounded up, 0 when
-- allowed), reset after (ms until every rule is full, rounded up), now (Redis TIME, us)}.
--
-- A denial or a peek writes nothing. Arguments are checked before any write; a bad one
-- is an error reply starting with "ERR bucketgate:". The stored fields are read as
-- numbers: a field that is not one (never written by this script) is an error too.
--
-- The script runs once per decision, so it is written for few Lua instructions and few
-- calls out of the VM (see BENCHMARKS.md): globals are read once into locals, tables are
-- sized by their constructors, and integers are handed to Redis as strings.

local argv, call, tonumber, ceil = ARGV, redis.call, tonumber, math.ceil
local key, nargs = KEYS[1], #argv

-- The usual cost and margin (1 token, the Go side's 1 s) skip tonumber: comparing Lua
-- strings compares pointers.
local cost, margin = argv[1], argv[2]
if cost == '1' then cost = 1 else cost = tonumber(cost) end
if margin == '1000' then margin = 1000 else margin = tonumber(margin) end
if not cost or cost < 0 or cost % 1 ~= 0 then
  return redis.error_reply('ERR bucketgate: cost must be a whole number >= 0')
end
if not margin or margin < 0 or margin % 1 ~= 0 then
  return redis.error_reply('ERR bucketgate: expiry margin must be a whole number >= 0')
end
if nargs < 5 or nargs % 3 ~= 2 then
  return redis.error_reply('ERR bucketgate: ARGV must be cost, margin, then name, capacity, rate per rule')
end
local n = (nargs - 2) / 3

-- f[2i-1], f[2i]: rule i's fields; f[c+1]: "expires"; f[c+2i], f[c+2i+1]: rule i's
-- capacity and rate once checked. A write reuses f for HSET's arguments. The constructor
-- sizes f for two rules.
local f, c, p = {nil, nil, nil, nil, nil, nil, nil, nil, nil}, 2 * n, 0
for j = 3, nargs, 3 do
  local name = argv[j]
  f[p + 1], f[p + 2], p = name .. ':tokens', name .. ':ts', p + 2
end
f[c + 1] = 'expires'

local t = call('TIME')
local now = t[1] * 1000000 + t[2]
local s = call('HMGET', key, unpack(f, 1, c + 1))

-- Check each rule, then refill it: s[2i-1] becomes its tokens now. A timestamp in the
-- future (a failover to a skewed replica) counts as now.
local allowed = 1
p = 0
for j = 3, nargs, 3 do
  local name, cap, rate = argv[j], tonumber(argv[j + 1]), tonumber(argv[j + 2])
  for k = 3, j - 3, 3 do
    if argv[k] == name then
      return redis.error_reply('ERR bucketgate: rule ' .. name .. ' appears twice')
    end
  end
  if not cap or cap < 1 or cap % 1 ~= 0 then
    return redis.error_reply('ERR bucketgate: rule ' .. name .. ': capacity must be a whole number >= 1')
  end
  if not rate or not (rate > 0) or rate == math.huge then
    return redis.error_reply('ERR bucketgate: rule ' .. name .. ': refill per second must be a finite number > 0')
  end
  if cost > cap then
    return redis.error_reply('ERR bucketgate: rule ' .. name .. ': cost ' .. cost .. ' exceeds capacity ' .. cap)
  end
  p = p + 2
  local level, ts = s[p - 1], s[p]
  if level and ts then
    level, ts = level * 1, ts * 1
    if now > ts then level = level + (now - ts) * rate / 1000000 end
    if level > cap then level = cap end
  else
    level = cap
  end
  if level < cost then allowed = 0 end
  s[p - 1], f[c + p], f[c + p + 1] = level, cap, rate
end

-- Binding rule: when allowed, the first with the fewest tokens left; when denied, the
-- first denying rule with the longest wait. Reset: the longest time until a rule is full.
local binding, fewest, retry, reset = 1, s[1], 0, 0
if allowed == 1 then
  fewest = fewest - cost
  for i = 1, n do
    p = 2 * i
    local level = s[p - 1] - cost
    s[p - 1] = level
    if level < fewest then fewest, binding = level, i end
    local full = ceil((f[c + p] - level) * 1000 / f[c + p + 1])
    if full > reset then reset = full end
  end
else
  for i = 1, n do
    p = 2 * i
    local level, rate = s[p - 1], f[c + p + 1]
    if level < cost then
      local wait = ceil((cost - level) * 1000 / rate)
      if wait > retry then retry, binding = wait, i end
    end
    if level < fewest then fewest = level end
    local full = ceil((f[c + p] - level) * 1000 / rate)
    if full > reset then reset = full end
  end
end

if allowed == 1 and cost > 0 then
  local expires, previous = ceil(now / 1000) + reset, s[c + 1]
  if previous and previous * 1 > expires then expires = previous * 1 end
  -- Integers go to Redis as strings: a Lua number would be formatted with the slower
  -- %.17g. TIME's microseconds have six digits nine times in ten: then now is a join.
  local stamp = #t[2] == 6 and t[1] .. t[2] or string.format('%d', now)
  -- Lay f out as HSET's field/value pairs in place, from the last rule down, so that no
  -- field name is overwritten before it has moved.
  for i = n, 1, -1 do
    p = 4 * i
    f[p - 3], f[p - 2], f[p - 1], f[p] = f[2 * i - 1], s[2 * i - 1], f[2 * i], stamp
  end
  f[2 * c + 1], f[2 * c + 2] = 'expires', string.format('%d', expires)
  call('HSET', key, unpack(f, 1, 2 * c + 2))
  call('PEXPIREAT', key, string.format('%d', expires + margin))
end

-- fewest - fewest % 1 is math.floor(fewest), exactly, without a call out of the VM.
return {allowed, binding, fewest - fewest % 1, retry, reset, now}
