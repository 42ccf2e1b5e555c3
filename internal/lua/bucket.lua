-- bucketgate token bucket: decide one request against one or more rules, atomically.
--
-- KEYS[1]   the identity's state hash, "<prefix>{<identity>}". Each rule of the identity
--           keeps two fields in it: "<rule>:tokens" (a double) and "<rule>:ts" (the Redis
--           TIME of its last write, in microseconds).
-- ARGV[1]   cost: whole tokens taken from every rule when all have enough; 0 is a peek.
-- ARGV[2..] one triple per rule: name, capacity (whole tokens), refill per second.
--
-- Reply: seven integers {allowed (0 or 1), binding rule (1-based index into the triples),
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
-- calls out of the VM and few new tables (see BENCHMARKS.md): globals are read once into
-- locals, tables are sized by their constructors, ceil(x) is x + (-x) % 1 and floor(x)
-- is x - x % 1 (exact for doubles, no call), and integers go to Redis as strings (7.0
-- formats a Lua number with the slower %.17g).

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
if nargs < 4 or nargs % 3 ~= 1 then
  return redis.error_reply('ERR bucketgate: ARGV must be cost, then name, capacity, rate per rule')
end
local n2 = (nargs - 1) / 3 * 2 -- two fields per rule

-- f[2i-1], f[2i]: rule i's field names; f[n2+2i-1], f[n2+2i]: its capacity and rate once
-- checked. A write reuses f for HSET's arguments. The constructor sizes f for two rules.
local f, p = {nil, nil, nil, nil, nil, nil, nil, nil}, 0
for j = 2, nargs, 3 do
  local name = argv[j]
  f[p + 1], f[p + 2], p = name .. ':tokens', name .. ':ts', p + 2
end

local t = call('TIME')
local now = t[1] * 1000000 + t[2]
local s = call('HMGET', key, unpack(f, 1, n2))

-- Check each rule, then refill it: s[2i-1] becomes its tokens now. A timestamp in the
-- future (a failover to a skewed replica) counts as now.
local allowed = 1
p = 0
for j = 2, nargs, 3 do
  local name, cap, rate = argv[j], tonumber(argv[j + 1]), tonumber(argv[j + 2])
  if not cap or cap < 1 or cap % 1 ~= 0 then
    return redis.error_reply('ERR bucketgate: rule ' .. name .. ': capacity must be a whole number >= 1')
  end
  if not rate or not (rate > 0) or rate == math.huge then
    return redis.error_reply('ERR bucketgate: rule ' .. name .. ': refill per second must be a finite number > 0')
  end
  if cost > cap then
    return redis.error_reply('ERR bucketgate: rule ' .. name .. ': cost ' .. cost .. ' exceeds capacity ' .. cap)
  end
  if j > 2 then
    for k = 2, j - 3, 3 do
      if argv[k] == name then
        return redis.error_reply('ERR bucketgate: rule ' .. name .. ' appears twice')
      end
    end
  end
  p = p + 2
  local level, ts = s[p - 1], s[p]
  if level and ts then
    local elapsed = now - ts
    if elapsed < 0 then elapsed = 0 end
    level = level + elapsed * rate / 1000000
    if level > cap then level = cap end
  else
    level = cap
  end
  if level < cost then allowed = 0 end
  s[p - 1], f[n2 + p - 1], f[n2 + p] = level, cap, rate
end

-- Binding rule: when allowed, the first with the fewest tokens left; when denied, the
-- first denying rule with the longest wait. Reset: the longest time until a rule is full.
-- Wait: when allowed, the longest time until a rule has cost tokens again.
local binding, fewest, wait, waitrule, reset = 1, s[1], 0, 0, 0
if allowed == 1 then
  fewest = fewest - cost
  for i = 1, n2, 2 do
    local level, rate = s[i] - cost, f[n2 + i + 1]
    s[i] = level
    if level < fewest then fewest, binding = level, (i + 1) / 2 end
    local full = (f[n2 + i] - level) * 1000 / rate
    full = full + (-full) % 1
    if full > reset then reset = full end
    if level < cost then
      local w = (cost - level) * 1000 / rate
      w = w + (-w) % 1
      if w > wait then wait, waitrule = w, (i + 1) / 2 end
    end
  end
else
  for i = 1, n2, 2 do
    local level, rate = s[i], f[n2 + i + 1]
    if level < cost then
      local w = (cost - level) * 1000 / rate
      w = w + (-w) % 1
      if w > wait then wait, binding = w, (i + 1) / 2 end
    end
    if level < fewest then fewest = level end
    local full = (f[n2 + i] - level) * 1000 / rate
    full = full + (-full) % 1
    if full > reset then reset = full end
  end
  waitrule = binding
end

if allowed == 1 and cost > 0 then
  -- TIME's microseconds have six digits nine times in ten: then the stamp is a join.
  local stamp = #t[2] == 6 and t[1] .. t[2] or string.format('%d', now)
  -- Lay f out as HSET's field/value pairs in place, from the last rule down, so that no
  -- field name is overwritten before it has moved.
  for i = n2, 2, -2 do
    p = 2 * i
    f[p - 3], f[p - 2], f[p - 1], f[p] = f[i - 1], s[i - 1], f[i], stamp
  end
  call('HSET', key, unpack(f, 1, 2 * n2))
  local at = string.format('%d', (now + (-now) % 1000) / 1000 + reset + MARGIN)
  if call('PEXPIREAT', key, at, 'GT') == 0 then call('PEXPIREAT', key, at, 'NX') end
end

return {allowed, binding, fewest - fewest % 1, wait, reset, now, waitrule}
