"""The Lua scripts of ``RedisSampleRefQueue``: every state change of the
queue is one script, run by ``EVALSHA``, so it is atomic across all the
clients of a server.

Keys (``P`` is the queue's key prefix, ``KEYS[1]``; all keys of one queue
share it, so one server holds many queues):

``P meta``       hash: ``epoch``, ``config`` (JSON), ``closed`` ("1"),
                 ``paused`` ("1"), ``room`` (the room
                 generation), ``seq`` (the last lease id minted: the fencing
                 token), ``dropped`` (dead letters dropped)
``P pending``    list of sample ids, the FIFO (RPUSH at the tail, LPOP the head)
``P refs``       hash sample id -> ``SampleRef.to_json()``: every live sample
``P lease``      hash sample id -> its live lease id (leased samples only)
``P deliv``      hash sample id -> deliveries of this incarnation
``P redeliv``    hash sample id -> fails + reclaims of this incarnation
``P deadlines``  sorted set: leased sample id, score its deadline; equal
                 scores sort by id (bytes), the model's tie order
``P dead``       list of dead letters, JSON ``[ref_json, reason, deliveries]``
``P done``/``P doneset``  the last ``dedup_window`` completed ids (D5)
``P acked``      list: the newest 10,000 lease ids whose ack committed, newest
                 first (``lease_state`` after a reply lost mid-ack)
``P wake``       list of tokens consumers block on (BLPOP): a put or requeue
                 pushes one while there are fewer tokens than pending refs;
                 an acquire that empties pending deletes them; a drained
                 queue keeps one forever (each woken consumer passes it on)
``P parked``     hash: token -> bytes of the ref its producer parked (D8)
``P producers``  sorted set: tokens of producers waiting in
                 ``put_blocks_until_below``, score the server time (ms)
                 after which the entry is stale (its producer crashed: its
                 parked bytes stop counting); each has a list
                 ``P room:<token>`` it blocks on, pushed by ``notify_room``

Time: ``now`` and the new deadline arrive as decimal strings (the client's
injected clock, computed in Python so the lease's deadline is exactly
``clock.now() + seconds``), or as "" for the server's ``TIME``.  Scores go
to Redis as strings, so no deadline passes through Lua arithmetic when a
clock is injected.
"""

from __future__ import annotations

__all__ = ["KEYS", "PRELUDE", "SCRIPTS"]

# Every key of a queue but the producers' ``room:<token>`` lists (which expire
# by themselves within a minute), after the prefix.
KEYS = ("meta", "pending", "refs", "lease", "deliv", "redeliv", "deadlines", "dead", "done", "doneset",
        "wake", "producers", "acked", "parked")

# Helpers every script starts with.  ARGV[1] of every script is the config
# the scripts read: max_deliveries ("" for none), dedup_window, dead letter limit.
PRELUDE = r"""
local P = KEYS[1]
local META, PENDING, REFS, LEASE = P .. 'meta', P .. 'pending', P .. 'refs', P .. 'lease'
local DELIV, REDELIV, DEADLINES = P .. 'deliv', P .. 'redeliv', P .. 'deadlines'
local DEAD, DONE, DONESET, WAKE, PRODUCERS = P .. 'dead', P .. 'done', P .. 'doneset', P .. 'wake', P .. 'producers'
local ACKED, PARKED = P .. 'acked', P .. 'parked'
local MAXD = tonumber(ARGV[1])
local DEDUP = tonumber(ARGV[2])
local DEADLIMIT = tonumber(ARGV[3])

local function server_ms()
  local t = redis.call('TIME')
  return tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
end

local function server_now()
  local t = redis.call('TIME')
  return tonumber(t[1]) + tonumber(t[2]) / 1000000
end

local function fmt(x)
  return string.format('%.17g', x)
end

-- (now, deadline) as strings: the client's, or the server's TIME + seconds
local function times(now, deadline, seconds)
  if now ~= '' then return now, deadline end
  local t = server_now()
  return fmt(t), fmt(t + tonumber(seconds))
end

local function wake_one()
  if redis.call('LLEN', WAKE) < redis.call('LLEN', PENDING) then
    redis.call('RPUSH', WAKE, '1')
  end
end

local function has_work()
  return redis.call('LLEN', PENDING) > 0 or redis.call('ZCARD', DEADLINES) > 0
end

local function drained()
  return redis.call('HGET', META, 'closed') == '1' and not has_work()
end

local function wake_if_drained()
  if drained() and redis.call('LLEN', WAKE) == 0 then
    redis.call('RPUSH', WAKE, 'drained')
  end
end

-- forget the producers whose registration ran out (crashed while waiting):
-- their parked bytes no longer count, nobody notifies them
local function expire_producers()
  local now = server_ms()
  for _, token in ipairs(redis.call('ZRANGEBYSCORE', PRODUCERS, '-inf', now)) do
    redis.call('HDEL', PARKED, token)
    redis.call('DEL', P .. 'room:' .. token)
  end
  redis.call('ZREMRANGEBYSCORE', PRODUCERS, '-inf', now)
end

-- the bytes parked by the registered producers other than `except` (D8)
local function parked_total(except)
  expire_producers()
  local total = 0
  local entries = redis.call('HGETALL', PARKED)
  for i = 1, #entries, 2 do
    if entries[i] ~= except then total = total + tonumber(entries[i + 1]) end
  end
  return total
end

-- wake every producer waiting in put_blocks_until_below except `except`
local function notify_room(except)
  redis.call('HINCRBY', META, 'room', 1)
  expire_producers()
  for _, token in ipairs(redis.call('ZRANGE', PRODUCERS, 0, -1)) do
    if token ~= except then
      local key = P .. 'room:' .. token
      redis.call('LPUSH', key, '1')
      redis.call('LTRIM', key, 0, 0)
      redis.call('PEXPIRE', key, 60000)
    end
  end
end

-- the put rejections, in the model's order
local function put_rejection(id)
  if redis.call('HGET', META, 'closed') == '1' then return 'closed' end
  local ref = redis.call('HGET', REFS, id)
  if ref then
    if redis.call('HEXISTS', LEASE, id) == 1 then return 'leased' end
    return 'pending'
  end
  if DEDUP > 0 and redis.call('SISMEMBER', DONESET, id) == 1 then return 'replay' end
  return nil
end

local function enqueue(id, ref)
  redis.call('HSET', REFS, id, ref)
  redis.call('HSET', DELIV, id, 0)
  redis.call('HSET', REDELIV, id, 0)
  redis.call('RPUSH', PENDING, id)
  wake_one()
end

-- An ack (reason false) or a dead letter of the leased sample id, committed.
-- Returns {its ref, the undo record (JSON)}: the record holds everything
-- needed to put the queue back as it was if the store's scrub, which runs
-- after this script, raises.
local function finish(id, reason)
  local ref = redis.call('HGET', REFS, id)
  local undo = {id = id, lease = redis.call('HGET', LEASE, id),
                deadline = redis.call('ZSCORE', DEADLINES, id), deliv = redis.call('HGET', DELIV, id),
                redeliv = redis.call('HGET', REDELIV, id), reason = reason or '', dropped = {},
                evicted = '', acked_trimmed = ''}
  redis.call('HDEL', REFS, id)
  redis.call('HDEL', LEASE, id)
  redis.call('HDEL', DELIV, id)
  redis.call('HDEL', REDELIV, id)
  redis.call('ZREM', DEADLINES, id)
  if reason then
    redis.call('RPUSH', DEAD, cjson.encode({ref, reason, tonumber(undo.deliv)}))
    local over = redis.call('LLEN', DEAD) - DEADLIMIT
    if over > 0 then
      undo.dropped = redis.call('LRANGE', DEAD, 0, over - 1)
      redis.call('LTRIM', DEAD, over, -1)
      redis.call('HINCRBY', META, 'dropped', over)
    end
  else
    -- the newest 10,000 lease ids acked, for lease_state after a lost reply
    redis.call('LPUSH', ACKED, undo.lease)
    undo.acked_trimmed = redis.call('LINDEX', ACKED, 10000) or ''
    redis.call('LTRIM', ACKED, 0, 9999)
  end
  if DEDUP > 0 then
    redis.call('RPUSH', DONE, id)
    redis.call('SADD', DONESET, id)
    if redis.call('LLEN', DONE) > DEDUP then
      undo.evicted = redis.call('LPOP', DONE)
      redis.call('SREM', DONESET, undo.evicted)
    end
  end
  redis.call('HINCRBY', META, 'room', 1)
  wake_if_drained()
  return {ref, cjson.encode(undo)}
end

-- a fail or a reclaim of the leased sample id below max_deliveries: to the tail
local function requeue(id)
  redis.call('HDEL', LEASE, id)
  redis.call('ZREM', DEADLINES, id)
  redis.call('HINCRBY', REDELIV, id, 1)
  redis.call('RPUSH', PENDING, id)
  wake_one()
end

local function at_max_deliveries(id)
  return MAXD and tonumber(redis.call('HGET', DELIV, id)) >= MAXD
end

local function producers_waiting()
  return redis.call('ZCARD', PRODUCERS)
end
"""

SCRIPTS: dict[str, str] = {
    # ARGV[4] epoch (new), ARGV[5] config JSON -> {epoch, config} of the queue at P
    "create": r"""
if redis.call('HSETNX', META, 'epoch', ARGV[4]) == 1 then
  redis.call('HSET', META, 'config', ARGV[5], 'closed', '0', 'paused', '0', 'room', 0, 'seq', 0, 'dropped', 0)
end
return {redis.call('HGET', META, 'epoch'), redis.call('HGET', META, 'config')}
""",
    # ARGV[4] id, ARGV[5] ref -> rejection or 'ok'
    "put": r"""
local id = ARGV[4]
local rejected = put_rejection(id)
if rejected then return rejected end
enqueue(id, ARGV[5])
return 'ok'
""",
    # One hysteresis step of put_blocks_until_below (D4, D8).  ARGV[4] id,
    # ARGV[5] ref, ARGV[6] resident bytes, ARGV[7] the ref's bytes, ARGV[8] "1"
    # when this producer's ref is parked, ARGV[9] high ("" for none), ARGV[10] low,
    # ARGV[11] this producer's token -> {outcome, event, effective, room}: outcome
    # 'ok' (enqueued, unparked), 'wait', or a rejection (unparked); event 'pause',
    # 'resume' or ''.  A step counts its own ref as parked, parked yet or not.
    "try_put": r"""
local id, nbytes, token = ARGV[4], tonumber(ARGV[7]), ARGV[11]
local function unpark()
  if ARGV[8] == '1' then redis.call('HDEL', PARKED, token) end
end
local rejected = put_rejection(id)
if rejected then
  unpark()
  return {rejected, '', 0, redis.call('HGET', META, 'room')}
end
local event, effective = '', 0
if ARGV[9] ~= '' then
  local high, low = tonumber(ARGV[9]), tonumber(ARGV[10])
  effective = math.max(0, tonumber(ARGV[6]) - parked_total(token) - nbytes)
  local paused = redis.call('HGET', META, 'paused') == '1'
  if paused then
    if effective <= low then
      paused = false
      redis.call('HSET', META, 'paused', '0')
      event = 'resume'
      notify_room(token)  -- this producer steps on by itself
    end
  elseif effective >= high then
    paused = true
    redis.call('HSET', META, 'paused', '1')
    event = 'pause'
  end
  if paused and has_work() then
    return {'wait', event, effective, redis.call('HGET', META, 'room')}
  end
end
unpark()
enqueue(id, ARGV[5])
return {'ok', event, effective, redis.call('HGET', META, 'room')}
""",
    # A producer waits (its ref parked).  ARGV[4] token, ARGV[5] bytes, ARGV[6]
    # "1" on its first wait, ARGV[7] the room generation its step saw, ARGV[8]
    # the registration's lifetime (ms; renewed by each wait)
    # -> 1 when it must step again at once (the room changed, or closed), else 0
    "park": r"""
local token = ARGV[4]
redis.call('ZADD', PRODUCERS, server_ms() + tonumber(ARGV[8]), token)
redis.call('HSET', PARKED, token, ARGV[5])
local changed = redis.call('HGET', META, 'room') ~= ARGV[7]
if ARGV[6] == '1' then
  notify_room(token)  -- the others' effective residency just dropped
end
if changed or redis.call('HGET', META, 'closed') == '1' then return 1 end
return 0
""",
    # A producer leaves.  ARGV[4] token
    "unpark": r"""
redis.call('ZREM', PRODUCERS, ARGV[4])
redis.call('DEL', P .. 'room:' .. ARGV[4])
redis.call('HDEL', PARKED, ARGV[4])
return 0
""",
    # -> the bytes parked by the producers waiting now
    "parked": r"""
return parked_total('')
""",
    # ARGV[4] "" or "1" to re-wake the others when drained
    "notify_room": r"""
notify_room('')
return 0
""",
    # ARGV[4] now, ARGV[5] deadline, ARGV[6] visibility seconds
    # -> {lease_id, id, ref, redeliveries, deadline} | 'drained' | 'empty'
    "acquire": r"""
local id = redis.call('LPOP', PENDING)
if not id then
  if drained() then
    if redis.call('LLEN', WAKE) == 0 then redis.call('RPUSH', WAKE, 'drained') end
    return 'drained'
  end
  return 'empty'
end
local now, deadline = times(ARGV[4], ARGV[5], ARGV[6])
local lease_id = redis.call('HINCRBY', META, 'seq', 1)
redis.call('HSET', LEASE, id, lease_id)
redis.call('ZADD', DEADLINES, deadline, id)
redis.call('HINCRBY', DELIV, id, 1)
if redis.call('LLEN', PENDING) == 0 then
  redis.call('DEL', WAKE)
elseif redis.call('LLEN', WAKE) == 0 then
  redis.call('RPUSH', WAKE, '1')
end
return {lease_id, id, redis.call('HGET', REFS, id), redis.call('HGET', REDELIV, id), deadline}
""",
    # A live ack (ARGV[6] "") or dead-letter (ARGV[6] the reason), fenced: commits,
    # and the client then scrubs (running "undo" if the scrub raises).  ARGV[4] id,
    # ARGV[5] lease id -> 0 (stale) | {ref, undo record, producers waiting}
    "finish": r"""
local id = ARGV[4]
if redis.call('HGET', LEASE, id) ~= ARGV[5] then return 0 end
local reason = ARGV[6]
if reason == '' then reason = false end
local done = finish(id, reason)
return {done[1], done[2], producers_waiting()}
""",
    # Put back what "finish" did (the store's scrub raised).  ARGV[4] the undo
    # record, ARGV[5] the ref -> 1 | 0 (the id was put again meanwhile: cannot)
    "undo": r"""
local undo, ref = cjson.decode(ARGV[4]), ARGV[5]
local id = undo.id
if redis.call('HEXISTS', REFS, id) == 1 then return 0 end
redis.call('HSET', REFS, id, ref)
redis.call('HSET', LEASE, id, undo.lease)
redis.call('HSET', DELIV, id, undo.deliv)
redis.call('HSET', REDELIV, id, undo.redeliv)
redis.call('ZADD', DEADLINES, undo.deadline, id)
if undo.reason ~= '' then
  redis.call('LREM', DEAD, -1, cjson.encode({ref, undo.reason, tonumber(undo.deliv)}))
  if #undo.dropped > 0 then
    for i = #undo.dropped, 1, -1 do redis.call('LPUSH', DEAD, undo.dropped[i]) end
    redis.call('HINCRBY', META, 'dropped', -#undo.dropped)
  end
else
  redis.call('LREM', ACKED, 1, undo.lease)
  if undo.acked_trimmed ~= '' then redis.call('RPUSH', ACKED, undo.acked_trimmed) end
end
if DEDUP > 0 then
  redis.call('LREM', DONE, -1, id)
  redis.call('SREM', DONESET, id)
  if undo.evicted ~= '' then
    redis.call('LPUSH', DONE, undo.evicted)
    redis.call('SADD', DONESET, undo.evicted)
  end
end
if redis.call('LLEN', PENDING) == 0 then redis.call('DEL', WAKE) end
return 1
""",
    # ARGV[4] id, ARGV[5] lease id -> 0 (stale) | {'', '', producers waiting} (requeued)
    # | {ref, undo record, producers waiting} (at max_deliveries: dead-lettered; scrub next)
    "fail": r"""
local id = ARGV[4]
if redis.call('HGET', LEASE, id) ~= ARGV[5] then return 0 end
if at_max_deliveries(id) then
  local done = finish(id, 'max_deliveries')
  return {done[1], done[2], producers_waiting()}
end
requeue(id)
return {'', '', producers_waiting()}
""",
    # ARGV[4] id, ARGV[5] lease id, ARGV[6] now, ARGV[7] deadline, ARGV[8] seconds -> 0 | 1
    "extend": r"""
local id = ARGV[4]
if redis.call('HGET', LEASE, id) ~= ARGV[5] then return 0 end
local _, deadline = times(ARGV[6], ARGV[7], ARGV[8])
redis.call('ZADD', DEADLINES, deadline, id)
return 1
""",
    # Take back the due leases in order until one is at max_deliveries: that
    # one is dead-lettered and the script stops (the client scrubs it, then calls
    # again with the same now).  ARGV[4] now ("": the server's) ->
    # {now, count requeued, producers waiting[, ref and undo record of the dead letter]}
    "reclaim": r"""
local now = ARGV[4]
if now == '' then now = fmt(server_now()) end
local count = 0
for _, id in ipairs(redis.call('ZRANGEBYSCORE', DEADLINES, '-inf', now)) do
  if at_max_deliveries(id) then
    local done = finish(id, 'max_deliveries')
    return {now, count, producers_waiting(), done[1], done[2]}
  end
  requeue(id)
  count = count + 1
end
return {now, count, producers_waiting()}
""",
    "close": r"""
if redis.call('HGET', META, 'closed') ~= '1' then
  redis.call('HSET', META, 'closed', '1')
  notify_room('')
  wake_if_drained()
end
if drained() then return 1 end
return 0
""",
    # -> {closed, pending, outstanding}
    "state": r"""
return {redis.call('HGET', META, 'closed'), redis.call('LLEN', PENDING), redis.call('ZCARD', DEADLINES)}
""",
    "drain_dead": r"""
local letters = redis.call('LRANGE', DEAD, 0, -1)
redis.call('DEL', DEAD)
return letters
""",
    # ARGV[4] id, ARGV[5] lease id -> 'live' | 'acked' (among the last 10,000 acks) |
    # 'other' (another lease is live) | 'pending' | 'gone' (completed otherwise)
    "lease_state": r"""
local id = ARGV[4]
local current = redis.call('HGET', LEASE, id)
if current == ARGV[5] then return 'live' end
if redis.call('LPOS', ACKED, ARGV[5]) then return 'acked' end
if current then return 'other' end
if redis.call('HEXISTS', REFS, id) == 1 then return 'pending' end
return 'gone'
""",
}
