//! The Lua scripts that make each stream operation atomic on the Redis server (one round trip each).
//!
//! A stream's entries have the ids `<seq>-1` (the reference's shape) and the fields `data` (the event's
//! JSON) and, on the terminal event only, `end`. An opened stream with no event yet is an empty Redis stream:
//! a placeholder entry is added and deleted at once, which leaves the key in place.

/// `KEYS[1]` the stream, `ARGV[1]` its life in ms. Creates the stream if missing; extends its life, never
/// shortens it. Answers 1 when it created the stream.
pub(super) const OPEN: &str = r"
local ttl = tonumber(ARGV[1])
if redis.call('EXISTS', KEYS[1]) == 0 then
  redis.call('XADD', KEYS[1], '0-1', 'open', '1')
  redis.call('XDEL', KEYS[1], '0-1')
  redis.call('PEXPIRE', KEYS[1], ttl)
  return 1
end
local left = redis.call('PTTL', KEYS[1])
if left >= 0 and left < ttl then
  redis.call('PEXPIRE', KEYS[1], ttl)
end
return 0
";

/// `KEYS[1]` the stream, `ARGV[1]` the life after the end in ms, then per event its seq, its JSON and `1`
/// when terminal. Appends them in order, stopping at the first refused. Answers `{code, last, appended}`:
/// code 0 all appended, -1 no such stream, -2 the stream already ended, -3 an event not after the last one
/// (whose seq is `last`); `appended` counts the events appended before it.
pub(super) const PUBLISH: &str = r"
if redis.call('EXISTS', KEYS[1]) == 0 then
  return {-1, 0, 0}
end
local last = nil
local ended = false
local top = redis.call('XREVRANGE', KEYS[1], '+', '-', 'COUNT', 1)
if #top > 0 then
  local fields = top[1][2]
  for i = 1, #fields, 2 do
    if fields[i] == 'end' then
      ended = true
    end
  end
  last = tonumber(string.match(top[1][1], '^(%d+)-'))
end
local appended = 0
for i = 2, #ARGV, 3 do
  if ended then
    return {-2, 0, appended}
  end
  local seq = tonumber(ARGV[i])
  if last ~= nil and seq <= last then
    return {-3, last, appended}
  end
  if ARGV[i + 2] == '1' then
    redis.call('XADD', KEYS[1], ARGV[i] .. '-1', 'data', ARGV[i + 1], 'end', '1')
    redis.call('PEXPIRE', KEYS[1], tonumber(ARGV[1]))
    ended = true
  else
    redis.call('XADD', KEYS[1], ARGV[i] .. '-1', 'data', ARGV[i + 1])
  end
  last = seq
  appended = appended + 1
end
return {0, 0, appended}
";

/// `KEYS[1]` the stream. Answers -1 when it does not exist, 0 when it has no event, else the last seq.
pub(super) const LAST_SEQ: &str = r"
if redis.call('EXISTS', KEYS[1]) == 0 then
  return -1
end
local top = redis.call('XREVRANGE', KEYS[1], '+', '-', 'COUNT', 1)
if #top == 0 then
  return 0
end
return tonumber(string.match(top[1][1], '^(%d+)-'))
";
