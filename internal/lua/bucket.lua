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
-- is an error reply starting with "ERR bucketgate:".

local key = KEYS[1]
local cost = tonumber(ARGV[1])
local margin = tonumber(ARGV[2])
local n = (#ARGV - 2) / 3

local function fail(msg)
  return redis.error_reply('ERR bucketgate: ' .. msg)
end

if not cost or cost < 0 or cost ~= math.floor(cost) then
  return fail('cost must be a whole number >= 0')
end
if not margin or margin < 0 or margin ~= math.floor(margin) then
  return fail('expiry margin must be a whole number >= 0')
end
if n < 1 or n ~= math.floor(n) then
  return fail('ARGV must be cost, margin, then name, capacity, rate per rule')
end

local caps, rates, fields, seen = {}, {}, {}, {}
for i = 1, n do
  local name, cap, rate = ARGV[3 * i], tonumber(ARGV[3 * i + 1]), tonumber(ARGV[3 * i + 2])
  if seen[name] then
    return fail('rule ' .. name .. ' appears twice')
  end
  seen[name] = true
  if not cap or cap < 1 or cap ~= math.floor(cap) then
    return fail('rule ' .. name .. ': capacity must be a whole number >= 1')
  end
  if not rate or not (rate > 0) or rate == math.huge then
    return fail('rule ' .. name .. ': refill per second must be a finite number > 0')
  end
  if cost > cap then
    return fail('rule ' .. name .. ': cost ' .. cost .. ' exceeds capacity ' .. cap)
  end
  caps[i], rates[i] = cap, rate
  fields[2 * i - 1], fields[2 * i] = name .. ':tokens', name .. ':ts'
end
fields[2 * n + 1] = 'expires'

local t = redis.call('TIME')
local now = t[1] * 1000000 + t[2]
local state = redis.call('HMGET', key, unpack(fields))

-- Refill every rule up to now; a timestamp in the future (a skewed failover) counts as now.
local tokens, allowed = {}, 1
for i = 1, n do
  local level, ts = tonumber(state[2 * i - 1]), tonumber(state[2 * i])
  if level and ts then
    local elapsed = now - ts
    if elapsed < 0 then elapsed = 0 end
    level = level + elapsed * rates[i] / 1000000
    if level > caps[i] then level = caps[i] end
  else
    level = caps[i]
  end
  tokens[i] = level
  if level < cost then allowed = 0 end
end

-- Binding rule: when denied, the denying rule with the longest wait; when allowed, the
-- rule with the fewest tokens left.
local binding, retry = 1, 0
if allowed == 1 then
  for i = 1, n do
    tokens[i] = tokens[i] - cost
    if tokens[i] < tokens[binding] then binding = i end
  end
else
  for i = 1, n do
    if tokens[i] < cost then
      local wait = math.ceil((cost - tokens[i]) * 1000 / rates[i])
      if wait > retry then retry, binding = wait, i end
    end
  end
end

local fewest, reset = tokens[1], 0
for i = 1, n do
  if tokens[i] < fewest then fewest = tokens[i] end
  local full = math.ceil((caps[i] - tokens[i]) * 1000 / rates[i])
  if full > reset then reset = full end
end

if allowed == 1 and cost > 0 then
  local expires = math.ceil(now / 1000) + reset
  local previous = tonumber(state[2 * n + 1])
  if previous and previous > expires then expires = previous end
  local args = {}
  for i = 1, n do
    args[4 * i - 3], args[4 * i - 2] = fields[2 * i - 1], tokens[i]
    args[4 * i - 1], args[4 * i] = fields[2 * i], now
  end
  args[4 * n + 1], args[4 * n + 2] = 'expires', expires
  redis.call('HSET', key, unpack(args))
  redis.call('PEXPIREAT', key, expires + margin)
end

return {allowed, binding, math.floor(fewest), retry, reset, now}
