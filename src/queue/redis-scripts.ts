// The Redis queue's Lua scripts: each runs atomically, so a run's hash, its sets and its
// tickets change together (the SQLite backend's transactions, sqlite-runs.ts). Keys are described at
// the top of redis-queue.ts.
// KEYS: none (all keys derive from the prefix in ARGV[1]; one Redis, not a cluster).

// A run's place in the queued sets, from its hash (group, turn, fm = its member in `fair`). A
// run recorded before fair share existed is its own group, at turn 0 (ahead, in its order).
const QUEUED_FN = `
local function queue_run(p, id)
  local r = p..'run:'..id
  local h = redis.call('HMGET', r, 'seq', 'group', 'turn', 'fm', 'key')
  if not h[4] then
    h[2], h[3], h[4] = h[5], 0, string.format('%016d', tonumber(h[1]))..':'..id
    redis.call('HSET', r, 'group', h[2], 'turn', 0, 'fm', h[4])
  end
  redis.call('ZADD', p..'queued', h[1], id)
  redis.call('ZADD', p..'fair', h[3], h[4])
  redis.call('ZADD', p..'gq:'..h[2], h[3], id)
end
local function unqueue_run(p, id)
  local h = redis.call('HMGET', p..'run:'..id, 'group', 'fm')
  redis.call('ZREM', p..'queued', id)
  if h[2] then redis.call('ZREM', p..'fair', h[2]) end
  if h[1] then redis.call('ZREM', p..'gq:'..h[1], id) end
end
local function release_ticket(p, id)
  local t = redis.call('HGET', p..'run:'..id, 'ticket')
  if t and t ~= '' and redis.call('GET', p..'ticket:'..t) == id then redis.call('DEL', p..'ticket:'..t) end
  redis.call('HDEL', p..'run:'..id, 'ticket')
end
`;

// The turn of a new run of a group: the current round, or one past the group's last turn
// (queued or claimed), whichever is later (sqlite-runs.ts `enqueue` says why).
const ENQUEUE_FN = `${QUEUED_FN}
local function next_turn(p, group)
  local last = -1
  local top = redis.call('ZREVRANGE', p..'gq:'..group, 0, 0, 'WITHSCORES')
  if top[2] then last = tonumber(top[2]) end
  local claimed = redis.call('HGET', p..'gclaimed', group)
  if claimed and tonumber(claimed) > last then last = tonumber(claimed) end
  return math.max(tonumber(redis.call('GET', p..'round') or '0'), last + 1)
end
local function enqueue(p, key, d, id, now, held, job, group, cap)
  if d ~= '' and redis.call('EXISTS', p..'bydelivery:'..d) == 1 then return {'duplicate'} end
  local active = redis.call('GET', p..'active:'..key)
  if active then return {'active', active} end
  if group == '' then group = key end
  if cap ~= '' then
    local n = redis.call('ZCARD', p..'gq:'..group)
    if n >= tonumber(cap) then return {'full', tostring(n)} end
  end
  local seq = redis.call('INCR', p..'seq')
  local fm = string.format('%016d', seq)..':'..id
  redis.call('HSET', p..'run:'..id, 'key', key, 'deliveryId', d, 'state', 'queued', 'attempts', 0,
    'cancel', 0, 'rest', 0, 'createdAt', now, 'held', held, 'seq', seq, 'group', group,
    'turn', next_turn(p, group), 'fm', fm)
  redis.call('SET', p..'job:'..id, job)
  redis.call('ZADD', p..'runs', seq, id)
  queue_run(p, id)
  redis.call('SET', p..'active:'..key, id)
  if d ~= '' then redis.call('SET', p..'bydelivery:'..d, id) end
  return {'queued', id, tostring(redis.call('ZRANK', p..'fair', fm) + 1)}
end
`;

// ARGV: p, key, delivery, id, now, held, job, group, cap
export const ENQUEUE = `${ENQUEUE_FN}
return enqueue(ARGV[1], ARGV[2], ARGV[3], ARGV[4], ARGV[5], ARGV[6], ARGV[7], ARGV[8], ARGV[9])
`;

const RECORD_FN = `
local function record(p, d, event, payload, now, sha, window)
  if redis.call('EXISTS', p..'dlv:'..d) == 1 then return 0 end
  redis.call('HSET', p..'dlv:'..d, 'event', event, 'payload', payload, 'state', 'pending', 'receivedAt', now)
  redis.call('ZADD', p..'pending', now, d)
  if sha ~= '' then redis.call('SET', p..'body:'..sha, d, 'NX', 'PX', window) end
  return 1
end
`;

export const RECORD_DELIVERY = `${RECORD_FN}
return record(ARGV[1], ARGV[2], ARGV[3], ARGV[4], ARGV[5], ARGV[6], ARGV[7])
`;

// ARGV: p, delivery, event, payload, now, sha, window, key ('' = no run), id, held, job, group, cap
export const ADMIT = `${ENQUEUE_FN}${RECORD_FN}
local p, d, now, sha = ARGV[1], ARGV[2], ARGV[5], ARGV[6]
if redis.call('EXISTS', p..'dlv:'..d) == 1 then return {'duplicate'} end
if sha ~= '' then
  local first = redis.call('GET', p..'body:'..sha)
  if first then return {'replay', first} end
end
record(p, d, ARGV[3], ARGV[4], now, sha, ARGV[7])
if ARGV[8] == '' then return {'recorded'} end
local r = enqueue(p, ARGV[8], d, ARGV[9], now, ARGV[10], ARGV[11], ARGV[12], ARGV[13])
return {'recorded', r[1], r[2], r[3]}
`;

export const RELEASE = `
local p, id = ARGV[1], ARGV[2]
local r = p..'run:'..id
if redis.call('HGET', r, 'state') ~= 'queued' or redis.call('HGET', r, 'held') ~= '1' then return 0 end
redis.call('HSET', r, 'held', 0)
-- The job as it may be claimed (the sanitized one), in the same step that makes it claimable.
if ARGV[3] and ARGV[3] ~= '' then redis.call('SET', p..'job:'..id, ARGV[3]) end
return 1
`;

// Also used by retention: ARGV[3] '1' = only a held queued run, else only a finished one
// finished before ARGV[4].
export const DELETE_RUN = `${QUEUED_FN}
local p, id, heldOnly, before = ARGV[1], ARGV[2], ARGV[3], tonumber(ARGV[4])
local r = p..'run:'..id
local st = redis.call('HGET', r, 'state')
if heldOnly == '1' then
  if st ~= 'queued' or redis.call('HGET', r, 'held') ~= '1' then return 0 end
else
  if st ~= 'done' and st ~= 'failed' and st ~= 'cancelled' then return 0 end
  if tonumber(redis.call('HGET', r, 'finishedAt') or '0') >= before then return 0 end
end
local key, d = redis.call('HGET', r, 'key'), redis.call('HGET', r, 'deliveryId')
if redis.call('GET', p..'active:'..key) == id then redis.call('DEL', p..'active:'..key) end
if d and d ~= '' and redis.call('GET', p..'bydelivery:'..d) == id then redis.call('DEL', p..'bydelivery:'..d) end
unqueue_run(p, id)
release_ticket(p, id)
redis.call('DEL', r, p..'job:'..id)
redis.call('ZREM', p..'runs', id)
return 1
`;

const FINISH_FN = `
local function finish_run(p, id, state, now, outcome, summary)
  local r = p..'run:'..id
  redis.call('HSET', r, 'state', state, 'finishedAt', now, 'outcome', outcome, 'summary', summary)
  unqueue_run(p, id)
  release_ticket(p, id)
  redis.call('SREM', p..'running', id)
  local key = redis.call('HGET', r, 'key')
  if redis.call('GET', p..'active:'..key) == id then redis.call('DEL', p..'active:'..key) end
end
`;

// A worker took ticket ARGV[2]. The run that ticket held when its worker was lost is resumed
// (or failed, claimed maxAttempts times already); else the first claimable run in the fair
// order is claimed. Returns {'running' | 'queued' | 'none', run id, failed run id}.
export const CLAIM = `${QUEUED_FN}${FINISH_FN}
local p, t, owner, now, maxAttempts = ARGV[1], ARGV[2], ARGV[3], ARGV[4], tonumber(ARGV[5])
local failed = ''
local lost = redis.call('GET', p..'ticket:'..t)
if lost then
  local r = p..'run:'..lost
  if redis.call('HGET', r, 'state') == 'running' and redis.call('HGET', r, 'ticket') == t then
    local attempts = tonumber(redis.call('HGET', r, 'attempts') or '0')
    if attempts < maxAttempts then
      redis.call('HINCRBY', r, 'attempts', 1)
      redis.call('HSET', r, 'owner', owner, 'startedAt', now)
      return {'running', lost, ''}
    end
    finish_run(p, lost, 'failed', now, 'interrupted',
      'interrupted '..attempts..' times: the worker running it was lost')
    failed = lost
  end
  redis.call('DEL', p..'ticket:'..t)
end
local id
local from = 0
while not id do
  local batch = redis.call('ZRANGE', p..'fair', from, from + 99)
  if #batch == 0 then return {'none', '', failed} end
  for _, m in ipairs(batch) do
    local candidate = string.sub(m, 18)
    if redis.call('HGET', p..'run:'..candidate, 'held') ~= '1' then id = candidate break end
  end
  from = from + 100
end
local r = p..'run:'..id
redis.call('HINCRBY', r, 'attempts', 1)
redis.call('HSET', r, 'state', 'running', 'owner', owner, 'startedAt', now, 'ticket', t)
unqueue_run(p, id)
redis.call('SADD', p..'running', id)
redis.call('SET', p..'ticket:'..t, id)
local turn, group = tonumber(redis.call('HGET', r, 'turn')), redis.call('HGET', r, 'group')
if turn > tonumber(redis.call('GET', p..'round') or '0') then redis.call('SET', p..'round', turn) end
local claimed = redis.call('HGET', p..'gclaimed', group)
if not claimed or turn > tonumber(claimed) then redis.call('HSET', p..'gclaimed', group, turn) end
return {'queued', id, failed}
`;

// ARGV[7]: the owner that must hold the run ('' = whoever).
export const FINISH = `${QUEUED_FN}${FINISH_FN}
local p, id, state, now, outcome, summary, owner = ARGV[1], ARGV[2], ARGV[3], ARGV[4], ARGV[5], ARGV[6], ARGV[7]
local r = p..'run:'..id
local st = redis.call('HGET', r, 'state')
if st ~= 'queued' and st ~= 'running' then return 0 end
if owner ~= '' and redis.call('HGET', r, 'owner') ~= owner then return 0 end
finish_run(p, id, state, now, outcome, summary)
return 1
`;

export const REQUEST_CANCEL = `${QUEUED_FN}
local p, key, now = ARGV[1], ARGV[2], ARGV[3]
local id = redis.call('GET', p..'active:'..key)
if not id then return false end
local r = p..'run:'..id
if redis.call('HGET', r, 'state') == 'queued' then
  redis.call('HSET', r, 'state', 'cancelled', 'finishedAt', now, 'outcome', 'cancelled', 'summary', '')
  unqueue_run(p, id)
  redis.call('DEL', p..'active:'..key)
  return {id, '0'}
end
redis.call('HSET', r, 'cancel', 1)
return {id, '1'}
`;

// A lost run back in the queue at its place (turn and arrival kept), unless someone claimed it
// since (its owner changed). Its ticket, if BullMQ put it back in the wait list, is free again.
export const REQUEUE_LOST = `${QUEUED_FN}
local p, id, owner = ARGV[1], ARGV[2], ARGV[3]
local r = p..'run:'..id
if redis.call('HGET', r, 'state') ~= 'running' or redis.call('HGET', r, 'owner') ~= owner then return 0 end
redis.call('HSET', r, 'state', 'queued', 'owner', '')
redis.call('HDEL', r, 'startedAt')
release_ticket(p, id)
redis.call('SREM', p..'running', id)
queue_run(p, id)
return 1
`;

// How many queued runs a worker may claim now (not held).
export const CLAIMABLE = `
local n = 0
for _, id in ipairs(redis.call('ZRANGE', ARGV[1]..'queued', 0, -1)) do
  if redis.call('HGET', ARGV[1]..'run:'..id, 'held') ~= '1' then n = n + 1 end
end
return n
`;

// 1-based place in the fair order, or nothing when not queued.
export const POSITION = `
local fm = redis.call('HGET', ARGV[1]..'run:'..ARGV[2], 'fm')
if not fm then return false end
local rank = redis.call('ZRANK', ARGV[1]..'fair', fm)
if not rank then return false end
return rank + 1
`;

// Runs queued before fair share existed get their place in the fair order.
export const MIGRATE_FAIR = `${QUEUED_FN}
local p = ARGV[1]
local n = 0
for _, id in ipairs(redis.call('ZRANGE', p..'queued', 0, -1)) do
  if not redis.call('HGET', p..'run:'..id, 'fm') then
    queue_run(p, id)
    n = n + 1
  end
end
return n
`;

// Deletes the lock only while it is still ours (ARGV[2]: the key, ARGV[3]: our token).
export const UNLOCK = `
if redis.call('GET', ARGV[2]) == ARGV[3] then return redis.call('DEL', ARGV[2]) end
return 0
`;

// Extends the lock only while it is still ours (ARGV[2]: the key, ARGV[3]: our token, ARGV[4]:
// its TTL in ms); a lock another holder took is left as it is.
export const RENEW = `
if redis.call('GET', ARGV[2]) == ARGV[3] then return redis.call('PEXPIRE', ARGV[2], ARGV[4]) end
return 0
`;

export const COMPLETE_DELIVERY = `
local p, d, ttl = ARGV[1], ARGV[2], ARGV[3]
local k = p..'dlv:'..d
if redis.call('EXISTS', k) == 0 then return 0 end
redis.call('HSET', k, 'state', 'done')
redis.call('HDEL', k, 'payload')
redis.call('PEXPIRE', k, ttl)
redis.call('ZREM', p..'pending', d)
return 1
`;
