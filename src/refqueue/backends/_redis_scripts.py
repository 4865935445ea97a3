"""The Lua scripts of ``RedisSampleRefQueue``: every state change of the
queue is one script, run by ``EVALSHA``, so it is atomic across all the
clients of a server.

Keys (``P`` is the queue's key prefix, ``KEYS[1]``; all keys of one queue
share it, so one server holds many queues):

``P meta``       hash: ``epoch``, ``config`` (JSON), ``closed`` ("1"),
                 ``paused`` ("1"), ``room`` (the room generation), ``seq``
                 (the last lease id minted: the fencing token), ``dropped``
                 (dead letters dropped), ``version`` and ``tip`` (see
                 "State loss" below), ``lost`` (why the state was found lost)
``P tips``       hash: ``version % 1024`` -> the tip at that version
``P pending``    list of sample ids, the FIFO (RPUSH at the tail, LPOP the head)
``P refs``       hash sample id -> ``SampleRef.to_json()``: every live sample
``P lease``      hash sample id -> its live lease id (leased samples only)
``P deliv``      hash sample id -> deliveries of this incarnation
``P redeliv``    hash sample id -> fails + reclaims of this incarnation
``P deadlines``  sorted set: leased sample id, score its deadline; equal
                 scores sort by id (bytes), the model's tie order
``P leasedat``   sorted set: leased sample id, score the time (the queue's
                 clock) of its live lease's acquire; read only by the
                 ``gauges`` observer (the oldest open lease, leases older
                 than the timeout).  A lease acquired by a client that did
                 not write it (an older refqueue) has no entry
``P dead``       list of dead letters, JSON ``[ref_json, reason, deliveries]``
``P done``/``P doneset``  the last ``dedup_window`` completed ids (D5)
``P acked``      list: the newest 10,000 lease ids whose ack committed, newest
                 first (``lease_state`` after a reply lost mid-ack)
``P intents``    hash sample id -> the ref JSON of a completion whose data is
                 not known to be scrubbed yet (the *scrub intent*, D9); a put
                 of an id with an open intent is refused ('scrubbing')
``P intentdue``  sorted set: sample id of each intent, score the time (the
                 queue's clock) after which anyone may collect it
``P donerefs``/``P doneorder``  hash id -> the ref JSON of its latest
                 completion, and a sorted set ordering them (the newest
                 10,000 kept): a put retried after a lost reply finds there
                 that its first attempt committed and completed
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

Arguments: ``ARGV[1..3]`` the config the scripts read (max_deliveries, ""
for none; dedup_window; dead letter limit), ``ARGV[4]`` the client's epoch,
``ARGV[5]``/``ARGV[6]`` the newest version and tip the client has seen;
the script's own arguments follow, read as ``A[1]``, ``A[2]``, ...

Scrub intents (D9).  A completion (ack, dead letter) records the sample's
ref in ``intents`` in the same script that commits it, due one visibility
timeout later.  The committing client scrubs the data and then clears the
intent (``clear_intent``, only if it still names that ref).  A client killed
between the two, a reply lost, a server killed: the intent stays, and once
due any client collects it (``collect``: claims it for another timeout,
then scrubs and clears).  A scrub is a compare-and-delete of the exact ref,
so doing it twice, or late, is harmless; a collector that dies after its
claim leaves the intent due again one timeout later.  While an intent is
open its id cannot be put again (``put_rejection`` answers 'scrubbing'): the
data is still resident (the spec's StorePut refuses it then), and a re-put
of the same ref would have its data removed by the pending scrub.

State loss.  Every script but ``create`` starts with ``guard()``: the
queue's ``meta`` must exist with the client's epoch and no ``lost`` mark,
and must not be older than what the client has seen.  Each script that
changes the queue moves ``version`` on by one and ``tip`` to a hash of the
previous tip, the server's time and the version, remembered in ``tips`` for
the last 1,024 versions; every answer carries (version, tip).  A server that
restarted empty (no persistence), was flushed, or came back without its
last writes (``appendfsync everysec`` and a crash, a failover that lost
writes) is found out at the first call of a client that saw more than it
holds: a version ahead of the server's, or a tip the server's history does
not have.  The guard then marks the queue ``lost`` (kept until an operator
deletes the queue) and every call of every client answers the error
``REFQUEUE_LOST <why>``, which the client raises as ``QueueStateLost``.  A
client more than 1,024 versions behind is not compared by tip (only by
version): a loss it alone could reveal goes unnoticed.

Every script checks before it writes, so a script that answers an error
has changed nothing (but the ``lost`` mark).  ``guard()`` checks ``meta``'s
counters (``version``, ``seq``, ``room``, ``dropped``: decimal counts of at
most 18 digits, so no increment overflows) and flags (``closed``,
``paused``: "0" or "1"); then each script reads what decides, and checks
what it will write, before its first write: every key it writes holds its
kind of value (``expect``, or a typed read of that key), every count it
increments is a count (``count``), every sample it moves has its records
(a pending id its ref, a leased one its deadline).  ``bump()``, the first
write of a changing script, writes ``tips`` first (the one key it does not
read).  A value refqueue never writes (planted by another program, or a
bug) therefore stops the script before its first write with the error
``REFQUEUE_CORRUPT <which key holds what>``, which the client raises as
``QueueStateCorrupt``.  Values that only the client can judge (a ref's
JSON, a dead letter) are checked there, and a change whose answer the
client cannot use is put back (``unacquire``, ``undo``).

Time: ``now`` and the new deadline arrive as decimal strings (the client's
injected clock, computed in Python so the lease's deadline is exactly
``clock.now() + seconds``), or as "" for the server's ``TIME``.  Scores go
to Redis as strings, so no lease deadline passes through Lua arithmetic
when a clock is injected.
"""

from __future__ import annotations

__all__ = ["CORRUPT", "KEYS", "LOST", "PRELUDE", "READS", "SCRIPTS", "source"]

# Every key of a queue but the producers' ``room:<token>`` lists (which expire
# by themselves within a minute), after the prefix.
KEYS = ("meta", "tips", "pending", "refs", "lease", "deliv", "redeliv", "deadlines", "dead", "done", "doneset",
        "wake", "producers", "acked", "parked", "intents", "intentdue", "donerefs", "doneorder", "leasedat")

# Helpers every script starts with.
PRELUDE = r"""
local P = KEYS[1]
local META, PENDING, REFS, LEASE = P .. 'meta', P .. 'pending', P .. 'refs', P .. 'lease'
local DELIV, REDELIV, DEADLINES = P .. 'deliv', P .. 'redeliv', P .. 'deadlines'
local DEAD, DONE, DONESET, WAKE, PRODUCERS = P .. 'dead', P .. 'done', P .. 'doneset', P .. 'wake', P .. 'producers'
local ACKED, PARKED, TIPS = P .. 'acked', P .. 'parked', P .. 'tips'
local INTENTS, INTENTDUE, DONEREFS, DONEORDER = P .. 'intents', P .. 'intentdue', P .. 'donerefs', P .. 'doneorder'
local LEASEDAT = P .. 'leasedat'
local MAXD = tonumber(ARGV[1])
local DEDUP = tonumber(ARGV[2])
local DEADLIMIT = tonumber(ARGV[3])
local A = {unpack(ARGV, 7)}

-- The kind of value each key of the queue holds (the producers' room:<token>
-- lists aside, which notify_room pushes to only where they are lists).
local KIND = {[META] = 'hash', [TIPS] = 'hash', [PENDING] = 'list', [REFS] = 'hash', [LEASE] = 'hash',
  [DELIV] = 'hash', [REDELIV] = 'hash', [DEADLINES] = 'zset', [DEAD] = 'list', [DONE] = 'list',
  [DONESET] = 'set', [WAKE] = 'list', [PRODUCERS] = 'zset', [ACKED] = 'list', [PARKED] = 'hash',
  [INTENTS] = 'hash', [INTENTDUE] = 'zset', [DONEREFS] = 'hash', [DONEORDER] = 'zset', [LEASEDAT] = 'zset'}

local function shown(value)
  local text = tostring(value)
  if #text > 80 then text = string.sub(text, 1, 80) .. '...' end
  return string.format('%q', text)
end

-- The queue's state holds a value refqueue never writes: stop (before any write).
local function corrupt(why)
  error({err = 'REFQUEUE_CORRUPT ' .. why})
end

-- Each key holds its kind of value, or nothing.
local function expect(...)
  for _, key in ipairs({...}) do
    local kind = redis.call('TYPE', key)['ok']
    if kind ~= 'none' and kind ~= KIND[key] then
      corrupt('key ' .. key .. ' is a ' .. kind .. ', not a ' .. KIND[key])
    end
  end
end

-- A count: a decimal of at most 18 digits (no increment overflows); nothing is 0.
local function count(value, where)
  if not value then return 0 end
  if not string.match(value, '^%d+$') or #value > 18 then
    corrupt(where .. ' holds ' .. shown(value) .. ', not a count')
  end
  return tonumber(value)
end

local function flag(value, where)
  if value and value ~= '0' and value ~= '1' then
    corrupt(where .. ' holds ' .. shown(value) .. ', not "0" or "1"')
  end
  return value == '1'
end

-- meta's fields as guard() read and checked them
local M = {}

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

-- The queue's state is what the client saw, or newer (see "State loss"):
-- nil, or why not.  Marks the queue lost when a client saw more than it holds.
local function guard()
  local m = redis.pcall('HMGET', META, 'epoch', 'lost', 'version', 'tip', 'seq', 'room', 'dropped', 'closed', 'paused')
  if m['err'] then corrupt('key ' .. META .. ' is a ' .. redis.call('TYPE', META)['ok'] .. ', not a hash') end
  if not m[1] then
    return 'the queue has no state on the server (it restarted without persistence, was flushed, or its keys were deleted)'
  end
  if m[1] ~= ARGV[4] then
    return 'the queue on the server has epoch ' .. m[1] .. ', not ' .. ARGV[4] .. ' (its state was lost and it was created again)'
  end
  if m[2] then return m[2] end
  M.version = count(m[3], 'key ' .. META .. ' field version')
  M.tip = m[4] or ''
  count(m[5], 'key ' .. META .. ' field seq')
  count(m[6], 'key ' .. META .. ' field room')
  count(m[7], 'key ' .. META .. ' field dropped')
  M.closed = flag(m[8], 'key ' .. META .. ' field closed')
  M.paused = flag(m[9], 'key ' .. META .. ' field paused')
  local seen = tonumber(ARGV[5])
  if seen > 0 then
    local version = M.version
    local why = nil
    if version < seen then
      why = 'the server holds version ' .. version .. ' of the queue, but a client saw version ' .. seen .. ' (writes were lost)'
    elseif version - seen < 1024 and redis.call('HGET', TIPS, tostring(seen % 1024)) ~= ARGV[6] then
      why = 'version ' .. seen .. ' of the queue on the server is not the one a client saw (writes were lost and others made since)'
    end
    if why then
      redis.call('HSET', META, 'lost', why)
      return why
    end
  end
  return nil
end

-- This script changes the queue: move the version and tip on (once per script,
-- before its first other write).  The tip goes to TIPS first: the one key bump
-- writes without reading it, so a TIPS of the wrong kind fails before any write.
local BUMPED = false
local function bump()
  if BUMPED then return end
  BUMPED = true
  local t = redis.call('TIME')
  local version = (M.version or count(redis.call('HGET', META, 'version'), 'key ' .. META .. ' field version')) + 1
  local text = string.format('%d', version)
  local tip = redis.sha1hex((M.tip or redis.call('HGET', META, 'tip') or '') .. ':' .. t[1] .. '.' .. t[2] .. ':' .. text)
  redis.call('HSET', TIPS, tostring(version % 1024), tip)
  redis.call('HSET', META, 'version', text, 'tip', tip)
  M.version, M.tip = version, tip
end

-- meta's closed flag: as guard() read it (close() keeps it current), else read now
local function is_closed()
  if M.closed == nil then return redis.call('HGET', META, 'closed') == '1' end
  return M.closed
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
  return is_closed() and not has_work()
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

-- the bytes parked by the registered producers other than `except` (D8); every
-- entry is checked before the expired ones are forgotten
local function parked_total(except)
  local gone = {}
  for _, token in ipairs(redis.call('ZRANGEBYSCORE', PRODUCERS, '-inf', server_ms())) do gone[token] = true end
  local total = 0
  local entries = redis.call('HGETALL', PARKED)
  for i = 1, #entries, 2 do
    local nbytes = count(entries[i + 1], 'key ' .. PARKED .. ' field ' .. shown(entries[i]))
    if entries[i] ~= except and not gone[entries[i]] then total = total + nbytes end
  end
  expire_producers()
  return total
end

-- wake every producer waiting in put_blocks_until_below except `except` (its
-- room:<token> list; one that is not a list is left alone: its producer's own
-- wait on it fails and says so)
local function notify_room(except)
  redis.call('HINCRBY', META, 'room', 1)
  expire_producers()
  for _, token in ipairs(redis.call('ZRANGE', PRODUCERS, 0, -1)) do
    if token ~= except then
      local key = P .. 'room:' .. token
      local pushed = redis.pcall('LPUSH', key, '1')
      if type(pushed) == 'number' then
        redis.call('LTRIM', key, 0, 0)
        redis.call('PEXPIRE', key, 60000)
      end
    end
  end
end

-- A put retried after its reply was lost (`retry`), of the very ref `ref`:
-- true when its first attempt committed (the ref is live, or was the id's
-- latest completion), so that the retry must change nothing.
local function committed_before(retry, id, ref)
  if retry ~= '1' then return false end
  return redis.call('HGET', REFS, id) == ref or redis.call('HGET', DONEREFS, id) == ref
end

-- the put rejections, in the model's order; then 'scrubbing' (see below), which
-- the model's one-step queue never meets: a put concurrent with the completion
-- that the commit-to-scrub window belongs to, as the 'duplicate' before it
local function put_rejection(id)
  if is_closed() then return 'closed' end
  local ref = redis.call('HGET', REFS, id)
  if ref then
    if redis.call('HEXISTS', LEASE, id) == 1 then return 'leased' end
    return 'pending'
  end
  if DEDUP > 0 and redis.call('SISMEMBER', DONESET, id) == 1 then return 'replay' end
  -- the previous incarnation completed but its data is not scrubbed yet (its
  -- scrub intent is open): the spec's StorePut is refused while the data is
  -- resident, and the pending scrub would remove the data a re-put needs
  expect(INTENTS)
  if redis.call('HEXISTS', INTENTS, id) == 1 then return 'scrubbing' end
  return nil
end

-- (put_rejection has read REFS, LEASE and DONESET; the lengths read here check
-- PENDING and WAKE before the first write)
local function enqueue(id, ref)
  local waking = redis.call('LLEN', WAKE) < redis.call('LLEN', PENDING) + 1
  expect(DELIV, REDELIV)
  bump()
  redis.call('HSET', REFS, id, ref)
  redis.call('HSET', DELIV, id, 0)
  redis.call('HSET', REDELIV, id, 0)
  redis.call('RPUSH', PENDING, id)
  if waking then redis.call('RPUSH', WAKE, '1') end
end

-- What a completion of the leased sample id reads, and the checks of what it
-- will write, before any write (see finish).
local function finish_check(id, reason)
  local r = {ref = redis.call('HGET', REFS, id), lease = redis.call('HGET', LEASE, id),
             deadline = redis.call('ZSCORE', DEADLINES, id), deliv = redis.call('HGET', DELIV, id),
             redeliv = redis.call('HGET', REDELIV, id), prevdone = redis.call('HGET', DONEREFS, id) or ''}
  if not r.ref then corrupt('sample ' .. shown(id) .. ' is leased but key ' .. REFS .. ' holds no ref for it') end
  if not r.deadline then corrupt('sample ' .. shown(id) .. ' is leased but key ' .. DEADLINES .. ' holds no deadline for it') end
  count(r.deliv, 'key ' .. DELIV .. ' field ' .. shown(id))
  count(r.redeliv, 'key ' .. REDELIV .. ' field ' .. shown(id))
  expect(reason and DEAD or ACKED, INTENTS, INTENTDUE, DONEORDER, LEASEDAT)
  r.leased_at = redis.call('ZSCORE', LEASEDAT, id) or ''
  if DEDUP > 0 then expect(DONE, DONESET) end
  if M.closed then expect(PENDING, WAKE) end
  return r
end

-- An ack (reason false) or a dead letter of the leased sample id, committed,
-- with its scrub intent, due at `due` (a decimal string of the queue's clock);
-- `r` is what finish_check read.  Returns {its ref, the undo record (JSON)}:
-- the record holds everything needed to put the queue back as it was if the
-- store's scrub, which runs after this script, raises.
local function finish_commit(id, reason, due, r)
  bump()
  local ref = r.ref
  local undo = {id = id, lease = r.lease, deadline = r.deadline, deliv = r.deliv, redeliv = r.redeliv,
                reason = reason or '', dropped = {}, evicted = '', acked_trimmed = '', due = due,
                prevdone = r.prevdone, leased_at = r.leased_at}
  redis.call('HDEL', REFS, id)
  redis.call('HDEL', LEASE, id)
  redis.call('HDEL', DELIV, id)
  redis.call('HDEL', REDELIV, id)
  redis.call('ZREM', DEADLINES, id)
  redis.call('ZREM', LEASEDAT, id)
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
  -- the scrub intent (D9), and the latest completion's ref (put retries)
  redis.call('HSET', INTENTS, id, ref)
  redis.call('ZADD', INTENTDUE, due, id)
  redis.call('HSET', DONEREFS, id, ref)
  redis.call('ZADD', DONEORDER, string.format('%d', M.version), id)
  if redis.call('ZCARD', DONEORDER) > 10000 then
    for _, old in ipairs(redis.call('ZRANGE', DONEORDER, 0, 0)) do
      redis.call('HDEL', DONEREFS, old)
    end
    redis.call('ZREMRANGEBYRANK', DONEORDER, 0, 0)
  end
  redis.call('HINCRBY', META, 'room', 1)
  wake_if_drained()
  return {ref, cjson.encode(undo)}
end

-- finish_check, then finish_commit: a completion that changes nothing if it fails
local function finish(id, reason, due)
  return finish_commit(id, reason, due, finish_check(id, reason))
end

-- The checks of a requeue of the leased sample id, before any write (the caller
-- checks PENDING and WAKE once: requeue_lists).
local function requeue_check(id)
  count(redis.call('HGET', REDELIV, id), 'key ' .. REDELIV .. ' field ' .. shown(id))
  if not redis.call('ZSCORE', DEADLINES, id) then
    corrupt('sample ' .. shown(id) .. ' is leased but key ' .. DEADLINES .. ' holds no deadline for it')
  end
end

local function requeue_lists()
  expect(LEASEDAT)
  redis.call('LLEN', PENDING)
  redis.call('LLEN', WAKE)
end

-- a fail or a reclaim of the leased sample id below max_deliveries: to the tail
local function requeue(id)
  bump()
  redis.call('HDEL', LEASE, id)
  redis.call('ZREM', DEADLINES, id)
  redis.call('ZREM', LEASEDAT, id)
  redis.call('HINCRBY', REDELIV, id, 1)
  redis.call('RPUSH', PENDING, id)
  wake_one()
end

local function at_max_deliveries(id)
  return MAXD and count(redis.call('HGET', DELIV, id), 'key ' .. DELIV .. ' field ' .. shown(id)) >= MAXD
end

local function producers_waiting()
  return redis.call('ZCARD', PRODUCERS)
end
"""

# The scripts' bodies.  ``source(op)`` wraps each (but ``create``) in the
# guard, and answers ``{version, tip, what the body returned}``.
SCRIPTS: dict[str, str] = {
    # A[1] epoch (new), A[2] config JSON -> {epoch, config, version, tip, lost} of the queue at P
    "create": r"""
expect(TIPS)
if redis.call('HSETNX', META, 'epoch', A[1]) == 1 then
  redis.call('HSET', META, 'config', A[2], 'closed', '0', 'paused', '0', 'room', 0, 'seq', 0, 'dropped', 0,
             'version', 0, 'tip', '')
  bump()
end
local m = redis.call('HMGET', META, 'epoch', 'config', 'version', 'tip', 'lost')
if not m[5] then
  count(m[3], 'key ' .. META .. ' field version')
  if not m[2] then corrupt('key ' .. META .. ' holds no field config') end
end
return {m[1], m[2] or '', m[3] or '0', m[4] or '', m[5] or ''}
""",
    # A[1] id, A[2] ref, A[3] "1" for a retry after a lost reply -> rejection or 'ok'
    "put": r"""
local id = A[1]
if committed_before(A[3], id, A[2]) then return 'ok' end
local rejected = put_rejection(id)
if rejected then return rejected end
enqueue(id, A[2])
return 'ok'
""",
    # One hysteresis step of put_blocks_until_below (D4, D8).  A[1] id, A[2]
    # ref, A[3] resident bytes, A[4] the ref's bytes, A[5] "1" when this
    # producer's ref is parked, A[6] high ("" for none), A[7] low, A[8] this
    # producer's token, A[9] "1" for a retry after a lost reply
    # -> {outcome, event, effective, room}: outcome 'ok' (enqueued, unparked),
    # 'wait', or a rejection (unparked); event 'pause', 'resume' or ''.  A step
    # counts its own ref as parked, parked yet or not.
    "try_put": r"""
local id, nbytes, token = A[1], tonumber(A[4]), A[8]
local function unpark()
  if A[5] == '1' then redis.call('HDEL', PARKED, token) end
end
if committed_before(A[9], id, A[2]) then
  unpark()
  return {'ok', '', 0, redis.call('HGET', META, 'room')}
end
local rejected = put_rejection(id)
if rejected then
  unpark()
  return {rejected, '', 0, redis.call('HGET', META, 'room')}
end
expect(PENDING, WAKE, DELIV, REDELIV, PARKED, PRODUCERS, DEADLINES)
local event, effective = '', 0
if A[6] ~= '' then
  local high, low = tonumber(A[6]), tonumber(A[7])
  effective = math.max(0, tonumber(A[3]) - parked_total(token) - nbytes)
  local paused = redis.call('HGET', META, 'paused') == '1'
  if paused then
    if effective <= low then
      paused = false
      bump()
      redis.call('HSET', META, 'paused', '0')
      event = 'resume'
      notify_room(token)  -- this producer steps on by itself
    end
  elseif effective >= high then
    paused = true
    bump()
    redis.call('HSET', META, 'paused', '1')
    event = 'pause'
  end
  if paused and has_work() then
    return {'wait', event, effective, redis.call('HGET', META, 'room')}
  end
end
unpark()
enqueue(id, A[2])
return {'ok', event, effective, redis.call('HGET', META, 'room')}
""",
    # A producer waits (its ref parked).  A[1] token, A[2] bytes, A[3] "1" on
    # its first wait, A[4] the room generation its step saw, A[5] the
    # registration's lifetime (ms; renewed by each wait)
    # -> 1 when it must step again at once (the room changed, or closed), else 0
    "park": r"""
local token = A[1]
expect(PARKED)
redis.call('ZADD', PRODUCERS, server_ms() + tonumber(A[5]), token)
redis.call('HSET', PARKED, token, A[2])
local changed = redis.call('HGET', META, 'room') ~= A[4]
if A[3] == '1' then
  notify_room(token)  -- the others' effective residency just dropped
end
if changed or redis.call('HGET', META, 'closed') == '1' then return 1 end
return 0
""",
    # A producer leaves.  A[1] token
    "unpark": r"""
expect(PRODUCERS)
redis.call('HDEL', PARKED, A[1])
redis.call('ZREM', PRODUCERS, A[1])
redis.call('DEL', P .. 'room:' .. A[1])
return 0
""",
    # -> the bytes parked by the producers waiting now
    "parked": r"""
return parked_total('')
""",
    "notify_room": r"""
expect(PRODUCERS, PARKED)
notify_room('')
return 0
""",
    # A[1] now, A[2] deadline, A[3] visibility seconds
    # -> {lease_id, id, ref, redeliveries, deadline} | 'drained' | 'empty'
    "acquire": r"""
if redis.call('LLEN', PENDING) == 0 then
  if drained() then
    if redis.call('LLEN', WAKE) == 0 then redis.call('RPUSH', WAKE, 'drained') end
    return 'drained'
  end
  return 'empty'
end
local id = redis.call('LINDEX', PENDING, 0)
local ref = redis.call('HGET', REFS, id)
if not ref then corrupt('sample ' .. shown(id) .. ' is pending but key ' .. REFS .. ' holds no ref for it') end
if redis.call('HEXISTS', LEASE, id) == 1 or redis.call('ZSCORE', DEADLINES, id) then
  corrupt('sample ' .. shown(id) .. ' is pending and leased at once')
end
count(redis.call('HGET', DELIV, id), 'key ' .. DELIV .. ' field ' .. shown(id))
local redeliv = count(redis.call('HGET', REDELIV, id), 'key ' .. REDELIV .. ' field ' .. shown(id))
local wakes = redis.call('LLEN', WAKE)
expect(LEASEDAT)
local now, deadline = times(A[1], A[2], A[3])
bump()
redis.call('LPOP', PENDING)
local lease_id = redis.call('HINCRBY', META, 'seq', 1)
redis.call('HSET', LEASE, id, lease_id)
redis.call('ZADD', DEADLINES, deadline, id)
redis.call('ZADD', LEASEDAT, now, id)
redis.call('HINCRBY', DELIV, id, 1)
if redis.call('LLEN', PENDING) == 0 then
  redis.call('DEL', WAKE)
elseif wakes == 0 then
  redis.call('RPUSH', WAKE, '1')
end
return {lease_id, id, ref, tostring(redeliv), deadline}
""",
    # Put back an acquire whose answer the client cannot use (its ref is not a
    # ref): the sample is pending again, at the head, as if never delivered.
    # A[1] id, A[2] lease id -> 1 | 0 (the lease is not live any more)
    "unacquire": r"""
local id = A[1]
if redis.call('HGET', LEASE, id) ~= A[2] then return 0 end
local deliv = count(redis.call('HGET', DELIV, id), 'key ' .. DELIV .. ' field ' .. shown(id))
local wakes = redis.call('LLEN', WAKE)
redis.call('LLEN', PENDING)
expect(LEASEDAT)
bump()
redis.call('HDEL', LEASE, id)
redis.call('ZREM', DEADLINES, id)
redis.call('ZREM', LEASEDAT, id)
redis.call('HSET', DELIV, id, math.max(0, deliv - 1))
redis.call('LPUSH', PENDING, id)
if wakes < redis.call('LLEN', PENDING) then redis.call('RPUSH', WAKE, '1') end
return 1
""",
    # A live ack (A[3] "") or dead-letter (A[3] the reason), fenced: commits
    # with its scrub intent (due at A[4]/A[5]/A[6]: now, due, seconds), and the
    # client then scrubs (running "undo" if the scrub raises).  A[1] id, A[2]
    # lease id -> 0 (stale) | {ref, undo record, producers waiting}
    "finish": r"""
local id = A[1]
if redis.call('HGET', LEASE, id) ~= A[2] then return 0 end
local reason = A[3]
if reason == '' then reason = false end
local _, due = times(A[4], A[5], A[6])
local waiting = producers_waiting()
local done = finish(id, reason, due)
return {done[1], done[2], waiting}
""",
    # Put back what "finish" did (the store's scrub raised).  A[1] the undo
    # record, A[2] the ref -> 1 | 0 (cannot: the id was put again meanwhile,
    # or a collector has claimed the intent)
    "undo": r"""
local undo, ref = cjson.decode(A[1]), A[2]
local id = undo.id
if redis.call('HEXISTS', REFS, id) == 1 then return 0 end
if redis.call('HGET', INTENTS, id) ~= ref then return 0 end
local due = redis.call('ZSCORE', INTENTDUE, id)
if not due or tonumber(due) ~= tonumber(undo.due) then return 0 end
expect(DONEREFS, DONEORDER, LEASE, DELIV, REDELIV, DEADLINES, DEAD, ACKED, DONE, DONESET, PENDING, WAKE, LEASEDAT)
bump()
redis.call('HDEL', INTENTS, id)
redis.call('ZREM', INTENTDUE, id)
if undo.prevdone ~= '' then
  redis.call('HSET', DONEREFS, id, undo.prevdone)
else
  redis.call('HDEL', DONEREFS, id)
  redis.call('ZREM', DONEORDER, id)
end
redis.call('HSET', REFS, id, ref)
redis.call('HSET', LEASE, id, undo.lease)
redis.call('HSET', DELIV, id, undo.deliv)
redis.call('HSET', REDELIV, id, undo.redeliv)
redis.call('ZADD', DEADLINES, undo.deadline, id)
if undo.leased_at and undo.leased_at ~= '' then redis.call('ZADD', LEASEDAT, undo.leased_at, id) end
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
    # A[1] id, A[2] lease id, A[3..5] now, due, seconds (the intent of a dead
    # letter) -> 0 (stale) | {'', '', producers waiting} (requeued)
    # | {ref, undo record, producers waiting} (at max_deliveries: dead-lettered; scrub next)
    "fail": r"""
local id = A[1]
if redis.call('HGET', LEASE, id) ~= A[2] then return 0 end
local waiting = producers_waiting()
if at_max_deliveries(id) then
  local _, due = times(A[3], A[4], A[5])
  local done = finish(id, 'max_deliveries', due)
  return {done[1], done[2], waiting}
end
requeue_check(id)
requeue_lists()
requeue(id)
return {'', '', waiting}
""",
    # A[1] id, A[2] lease id, A[3] now, A[4] deadline, A[5] seconds -> 0 | 1
    "extend": r"""
local id = A[1]
if redis.call('HGET', LEASE, id) ~= A[2] then return 0 end
if not redis.call('ZSCORE', DEADLINES, id) then
  corrupt('sample ' .. shown(id) .. ' is leased but key ' .. DEADLINES .. ' holds no deadline for it')
end
local _, deadline = times(A[3], A[4], A[5])
bump()
redis.call('ZADD', DEADLINES, deadline, id)
return 1
""",
    # Take back the due leases in order until one is at max_deliveries: that
    # one is dead-lettered and the script stops (the client scrubs it, then calls
    # again with the same now).  A[1] now ("": the server's), A[2] the
    # visibility timeout (an intent's delay) ->
    # {now, count requeued, producers waiting[, ref and undo record of the dead letter]}
    "reclaim": r"""
local now = A[1]
if now == '' then now = fmt(server_now()) end
local due = redis.call('ZRANGEBYSCORE', DEADLINES, '-inf', now)
-- every check of every lease this call takes back, before the first write
local dead_at, checked = nil, nil
for i, id in ipairs(due) do
  if at_max_deliveries(id) then
    dead_at, checked = i, finish_check(id, 'max_deliveries')
    break
  end
  requeue_check(id)
end
if #due > 0 then requeue_lists() end
local waiting = producers_waiting()
local taken = 0
for i, id in ipairs(due) do
  if i == dead_at then
    local done = finish_commit(id, 'max_deliveries', fmt(tonumber(now) + tonumber(A[2])), checked)
    return {now, taken, waiting, done[1], done[2]}
  end
  requeue(id)
  taken = taken + 1
end
return {now, taken, waiting}
""",
    # Claim the scrub intents due by now (A[4] "1": every intent), at most A[5]
    # of them, for another A[3] seconds (A[1] now, A[2] the claim's end)
    # -> {id, ref, id, ref, ...}: the caller scrubs each, then clears it
    "collect": r"""
local now, due = times(A[1], A[2], A[3])
local ids
if A[4] == '1' then
  ids = redis.call('ZRANGE', INTENTDUE, 0, tonumber(A[5]) - 1)
else
  ids = redis.call('ZRANGEBYSCORE', INTENTDUE, '-inf', now, 'LIMIT', 0, tonumber(A[5]))
end
local out = {}
for _, id in ipairs(ids) do
  local ref = redis.call('HGET', INTENTS, id)
  if ref then
    redis.call('ZADD', INTENTDUE, due, id)
    table.insert(out, id)
    table.insert(out, ref)
  else
    redis.call('ZREM', INTENTDUE, id)
  end
end
return out
""",
    # The data of the intent of A[1] is scrubbed: forget the intent if it
    # still names ref A[2] -> 1 | 0
    "clear_intent": r"""
if redis.call('HGET', INTENTS, A[1]) ~= A[2] then return 0 end
redis.call('ZREM', INTENTDUE, A[1])
redis.call('HDEL', INTENTS, A[1])
return 1
""",
    "close": r"""
if not is_closed() then
  expect(PRODUCERS, PARKED, PENDING, DEADLINES, WAKE)
  bump()
  redis.call('HSET', META, 'closed', '1')
  M.closed = true
  notify_room('')
  wake_if_drained()
end
if drained() then return 1 end
return 0
""",
    # A[1] what -> the observer's value
    "observe": r"""
local what = A[1]
if what == 'state' then
  return {redis.call('HGET', META, 'closed'), redis.call('LLEN', PENDING), redis.call('ZCARD', DEADLINES)}
elseif what == 'closed' or what == 'paused' or what == 'dropped' then
  return redis.call('HGET', META, what) or '0'
elseif what == 'pending' then
  return redis.call('LLEN', PENDING)
elseif what == 'outstanding' then
  return redis.call('ZCARD', DEADLINES)
elseif what == 'dead' then
  return redis.call('LRANGE', DEAD, 0, -1)
elseif what == 'intents' then
  return redis.call('HLEN', INTENTS)
elseif what == 'gauges' then
  -- the bytes of the open intents (refs whose estimated_bytes does not read as a
  -- count are left out: collect_intents reports those)
  local intent_bytes = 0
  for _, ref in ipairs(redis.call('HVALS', INTENTS)) do
    local ok, decoded = pcall(cjson.decode, ref)
    if ok and type(decoded) == 'table' and type(decoded.estimated_bytes) == 'number'
        and decoded.estimated_bytes >= 0 then
      intent_bytes = intent_bytes + decoded.estimated_bytes
    end
  end
  -- the leases now (A[2]: the client's clock, "" for the server's TIME; A[3]
  -- the visibility timeout): O(log n) reads of the two sorted sets
  local now = A[2]
  if now == '' then now = fmt(server_now()) end
  local past = redis.call('ZCOUNT', DEADLINES, '-inf', now)
  local first = redis.call('ZRANGE', DEADLINES, 0, 0, 'WITHSCORES')
  local oldest = redis.call('ZRANGE', LEASEDAT, 0, 0, 'WITHSCORES')
  local older = redis.call('ZCOUNT', LEASEDAT, '-inf', '(' .. fmt(tonumber(now) - tonumber(A[3])))
  -- the producers waiting now, in every client, and the bytes they park (a
  -- registration that ran out counts no more; nothing is written here)
  local ms = server_ms()
  local blocked, parked = 0, 0
  local entries = redis.call('HGETALL', PARKED)
  for i = 1, #entries, 2 do
    local until_ms = redis.call('ZSCORE', PRODUCERS, entries[i])
    if until_ms and tonumber(until_ms) > ms then
      blocked = blocked + 1
      parked = parked + (tonumber(entries[i + 1]) or 0)
    end
  end
  return {redis.call('LLEN', PENDING), redis.call('ZCARD', DEADLINES), redis.call('HLEN', INTENTS),
          redis.call('LLEN', DEAD), redis.call('HGET', META, 'dropped') or '0', redis.call('HGET', META, 'paused'),
          redis.call('HGET', META, 'closed'), redis.call('HGET', META, 'seq'), redis.call('HGET', META, 'version'),
          string.format('%d', intent_bytes), now, past, first[2] or '', oldest[2] or '', older,
          redis.call('ZCARD', LEASEDAT), blocked, string.format('%d', parked)}
end
return redis.error_reply('ERR refqueue observe: unknown ' .. tostring(what))
""",
    # Drop the first A[1] dead letters if they are still the ones the client read
    # and parsed (A[2]: the SHA1 of each one's byte length, ":" and bytes, in
    # order) -> 1 | 0 (they changed meanwhile: read again)
    "drain_dead": r"""
local n = tonumber(A[1])
local letters = redis.call('LRANGE', DEAD, 0, n - 1)
if #letters ~= n then return 0 end
local parts = {}
for i, letter in ipairs(letters) do parts[i] = #letter .. ':' .. letter end
if redis.sha1hex(table.concat(parts)) ~= A[2] then return 0 end
if n > 0 then
  bump()
  redis.call('LTRIM', DEAD, n, -1)
end
return 1
""",
    # A[1] id, A[2] lease id -> 'live' | 'acked' (among the last 10,000 acks) |
    # 'other' (another lease is live) | 'pending' | 'gone' (completed otherwise)
    "lease_state": r"""
local id = A[1]
local current = redis.call('HGET', LEASE, id)
if current == A[2] then return 'live' end
if redis.call('LPOS', ACKED, A[2]) then return 'acked' end
if current then return 'other' end
if redis.call('HEXISTS', REFS, id) == 1 then return 'pending' end
return 'gone'
""",
}

# The scripts that only read the queue (every other script may change it).
READS = frozenset({"observe", "lease_state", "parked"})

# The error every guarded script answers when the queue's state was lost.
LOST = "REFQUEUE_LOST"
# The error a script raises, before any write, on a value refqueue never writes.
CORRUPT = "REFQUEUE_CORRUPT"


def source(op: str, body: str | None = None, prelude: str = PRELUDE) -> str:
    """The full Lua source of script ``op`` (``body``, ``prelude``: replacements,
    for the mutants): the prelude, then for every script but ``create`` the
    guard, the body as a function, and the answer ``{version, tip, result}``."""
    text = SCRIPTS[op] if body is None else body
    if op == "create":
        return prelude + text
    return (
        prelude
        + "local function body()\n" + text + "\nend\n"
        + "local lost = guard()\n"
        + f"if lost then return redis.error_reply('{LOST} ' .. lost) end\n"
        + "local result = body()\n"
        + "if M.version == nil then\n"
        + "  local m = redis.call('HMGET', META, 'version', 'tip')\n"
        + "  return {m[1], m[2], result}\n"
        + "end\n"
        + "return {string.format('%d', M.version), M.tip, result}\n"
    )
