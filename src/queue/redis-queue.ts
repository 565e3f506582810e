// The distributed backend: run records in Redis (atomic Lua scripts keep the same guarantees as
// the SQLite transactions), workers' liveness watched by BullMQ.
//
// BullMQ jobs are claim tickets, not runs: one is added whenever a run becomes claimable, a
// worker takes any ticket with a lock it renews while its run lives, and the CLAIM script then
// picks the run: the first claimable one in the fair order (round robin across groups, as the
// SQLite backend orders them, see queue.ts `enqueue`), which BullMQ's own first-in-first-out
// order could not give. The run records which ticket holds it. A worker that dies stops
// renewing; BullMQ's stalled-job check puts its ticket back in the wait list, and whoever takes
// that ticket next resumes the lost run (or fails it, once it has been claimed `maxAttempts`
// times); recoverInterrupted() also requeues or fails the runs of lost tickets and reports them,
// so their issues are told. A ticket left over (its run was cancelled) is completed unused.
//
// Keys, under `<prefix>:fn:`: seq, run:<id> (hash), job:<id> (the job JSON, never rewritten
// by Lua), runs / queued (zsets by seq: list order), fair (zset by turn, members
// `<seq, 16 digits>:<id>`: the order runs are taken in and their positions), gq:<group> (a
// group's queued runs by turn), round (the highest turn claimed), gclaimed (hash: each group's
// highest claimed turn), running (set), ticket:<ticket> (the run a ticket holds), active:<key>
// (the one active run of a key), bydelivery:<id>, dlv:<id> (a delivery: its raw trigger while
// pending, then only its id), pending (zset), note:<key>, art:<run>:<name> (gzip, with a TTL).
// BullMQ's own keys live under `<prefix>:runs:`.
import { randomUUID } from 'node:crypto';
import { gunzipSync, gzipSync } from 'node:zlib';
import { Queue as BullQueue, Worker as BullWorker, type Job as BullJob } from 'bullmq';
import { Redis } from 'ioredis';
import type {
  EnqueueInput,
  FinishState,
  PendingDelivery,
  Queue,
  RunRecord,
  RunState,
} from './types.js';
import { DEFAULT_REPLAY_WINDOW_MS, type AdmitResult, type EnqueueResult } from './queue.js';

export interface RedisQueueOptions {
  url: string;
  /** Namespace of every key (tests use one per test). */
  prefix?: string;
  /** Runs this process holds at once. */
  concurrency: number;
  /** A worker silent this long is lost: its run is requeued once, then failed (default 30 s). */
  lockMs?: number;
  /** Handled delivery ids are remembered this long for deduplication (default 14 days). */
  deliveryRetentionMs?: number;
  /** A delivery whose raw body was seen within this window is a replay (default 7 days). */
  replayWindowMs?: number;
  /** Open a BullMQ worker (claims, stalled checks); serve-only processes leave it off. */
  worker?: boolean;
  /** An `exclusive` section's lock lapses this long after its holder last renewed it (30 s). */
  exclusiveLockMs?: number;
}

const BULL_QUEUE = 'runs';
const DAY_MS = 24 * 3600 * 1000;
/**
 * BullMQ counts stalls per job, and a ticket serves many runs: it must never fail one on its
 * own count. Claims per run (`attempts`) decide instead.
 */
const TICKET_STALLS = 1_000_000;
/**
 * An exclusive section is a few status comment writes, paced by the shared GitHub throttle
 * (seconds each, minutes behind a burst of other runs' writes): one held this long is hung.
 */
const EXCLUSIVE_MAX_HOLD_MS = 10 * 60_000;

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
// (queued or claimed), whichever is later (queue.ts `enqueue` says why).
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
const ENQUEUE = `${ENQUEUE_FN}
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

const RECORD_DELIVERY = `${RECORD_FN}
return record(ARGV[1], ARGV[2], ARGV[3], ARGV[4], ARGV[5], ARGV[6], ARGV[7])
`;

// ARGV: p, delivery, event, payload, now, sha, window, key ('' = no run), id, held, job, group, cap
const ADMIT = `${ENQUEUE_FN}${RECORD_FN}
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

const RELEASE = `
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
const DELETE_RUN = `${QUEUED_FN}
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
const CLAIM = `${QUEUED_FN}${FINISH_FN}
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
const FINISH = `${QUEUED_FN}${FINISH_FN}
local p, id, state, now, outcome, summary, owner = ARGV[1], ARGV[2], ARGV[3], ARGV[4], ARGV[5], ARGV[6], ARGV[7]
local r = p..'run:'..id
local st = redis.call('HGET', r, 'state')
if st ~= 'queued' and st ~= 'running' then return 0 end
if owner ~= '' and redis.call('HGET', r, 'owner') ~= owner then return 0 end
finish_run(p, id, state, now, outcome, summary)
return 1
`;

const REQUEST_CANCEL = `${QUEUED_FN}
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
const REQUEUE_LOST = `${QUEUED_FN}
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
const CLAIMABLE = `
local n = 0
for _, id in ipairs(redis.call('ZRANGE', ARGV[1]..'queued', 0, -1)) do
  if redis.call('HGET', ARGV[1]..'run:'..id, 'held') ~= '1' then n = n + 1 end
end
return n
`;

// 1-based place in the fair order, or nothing when not queued.
const POSITION = `
local fm = redis.call('HGET', ARGV[1]..'run:'..ARGV[2], 'fm')
if not fm then return false end
local rank = redis.call('ZRANK', ARGV[1]..'fair', fm)
if not rank then return false end
return rank + 1
`;

// Runs queued before fair share existed get their place in the fair order.
const MIGRATE_FAIR = `${QUEUED_FN}
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
const UNLOCK = `
if redis.call('GET', ARGV[2]) == ARGV[3] then return redis.call('DEL', ARGV[2]) end
return 0
`;

// Extends the lock only while it is still ours (ARGV[2]: the key, ARGV[3]: our token, ARGV[4]:
// its TTL in ms); a lock another holder took is left as it is.
const RENEW = `
if redis.call('GET', ARGV[2]) == ARGV[3] then return redis.call('PEXPIRE', ARGV[2], ARGV[4]) end
return 0
`;

const COMPLETE_DELIVERY = `
local p, d, ttl = ARGV[1], ARGV[2], ARGV[3]
local k = p..'dlv:'..d
if redis.call('EXISTS', k) == 0 then return 0 end
redis.call('HSET', k, 'state', 'done')
redis.call('HDEL', k, 'payload')
redis.call('PEXPIRE', k, ttl)
redis.call('ZREM', p..'pending', d)
return 1
`;

export class RedisQueue<J = unknown> implements Queue<J> {
  readonly kind = 'bullmq' as const;
  readonly concurrency: number;
  readonly maxAttempts = 2;
  readonly prefix: string;
  readonly lockMs: number;
  readonly exclusiveLockMs: number;
  readonly #p: string;
  readonly #redis: Redis;
  readonly #bull: BullQueue;
  readonly #worker: BullWorker | undefined;
  readonly #deliveryRetentionMs: number;
  readonly #replayWindowMs: number;
  /** Runs this process holds: BullMQ job, lock token, lock renewal timer. */
  readonly #held = new Map<string, { job: BullJob; token: string; timer: NodeJS.Timeout }>();
  #claiming = 0;
  /** Runs failed here for being lost too often, not yet returned by recoverInterrupted. */
  #lostFailed: RunRecord<J>[] = [];

  private constructor(options: RedisQueueOptions, redis: Redis) {
    this.concurrency = options.concurrency;
    this.prefix = options.prefix ?? 'frognano';
    this.lockMs = options.lockMs ?? 30_000;
    this.exclusiveLockMs = options.exclusiveLockMs ?? 30_000;
    this.#replayWindowMs = options.replayWindowMs ?? DEFAULT_REPLAY_WINDOW_MS;
    this.#deliveryRetentionMs = Math.max(
      options.deliveryRetentionMs ?? 14 * DAY_MS,
      this.#replayWindowMs,
    );
    this.#p = `${this.prefix}:fn:`;
    this.#redis = redis;
    const connection = { url: options.url, maxRetriesPerRequest: null };
    this.#bull = new BullQueue(BULL_QUEUE, { connection, prefix: this.prefix });
    this.#worker = options.worker
      ? new BullWorker(BULL_QUEUE, null, {
          connection,
          prefix: this.prefix,
          autorun: false,
          lockDuration: this.lockMs,
          stalledInterval: this.lockMs,
          maxStalledCount: TICKET_STALLS,
        })
      : undefined;
    // BullMQ reports connection trouble as events; without a listener Node would crash on them.
    this.#bull.on('error', () => undefined);
    this.#worker?.on('error', () => undefined);
  }

  /** Connects (fails fast when Redis does not answer) and starts BullMQ's stalled-run check. */
  static async open<J = unknown>(options: RedisQueueOptions): Promise<RedisQueue<J>> {
    if (!Number.isInteger(options.concurrency) || options.concurrency < 1) {
      throw new Error(`queue concurrency must be a positive integer (got ${options.concurrency})`);
    }
    const redis = new Redis(options.url, { maxRetriesPerRequest: null, lazyConnect: true });
    redis.on('error', () => undefined);
    try {
      await withTimeout(redis.connect(), 5000);
      await redis.ping();
    } catch (error) {
      redis.disconnect();
      throw new Error(
        `cannot reach Redis at ${redactUrl(options.url)} (${error instanceof Error ? error.message : String(error)}): start it or fix FROGNANO_REDIS_URL`,
        { cause: error },
      );
    }
    const queue = new RedisQueue<J>(options, redis);
    await queue.#eval(MIGRATE_FAIR, []);
    await queue.#bull.waitUntilReady();
    if (queue.#worker) {
      await queue.#worker.waitUntilReady();
      void queue.#worker.startStalledCheckTimer();
    }
    return queue;
  }

  async close(): Promise<void> {
    for (const { timer } of this.#held.values()) clearInterval(timer);
    this.#held.clear();
    // force: the runs this process holds are left to BullMQ's stalled check (requeued once).
    await this.#worker?.close(true);
    await this.#bull.close();
    this.#redis.disconnect();
  }

  async recordDelivery(
    deliveryId: string,
    event: string,
    payload: unknown,
    bodySha256?: string,
  ): Promise<boolean> {
    const fresh = await this.#eval(RECORD_DELIVERY, [
      deliveryId,
      event,
      JSON.stringify(payload),
      String(Date.now()),
      bodySha256 ?? '',
      String(this.#replayWindowMs),
    ]);
    return fresh === 1;
  }

  async admit(input: {
    deliveryId: string;
    event: string;
    payload: unknown;
    bodySha256?: string;
    run?: Omit<EnqueueInput<J>, 'deliveryId' | 'id'>;
  }): Promise<AdmitResult<J>> {
    const reply = (await this.#eval(ADMIT, [
      input.deliveryId,
      input.event,
      JSON.stringify(input.payload),
      String(Date.now()),
      input.bodySha256 ?? '',
      String(this.#replayWindowMs),
      input.run?.key ?? '',
      randomUUID(),
      input.run?.held ? '1' : '0',
      JSON.stringify(input.run?.job ?? null),
      input.run?.group ?? '',
      capArg(input.run?.maxQueuedInGroup),
    ])) as string[];
    if (reply[0] === 'duplicate') return { status: 'duplicate' };
    if (reply[0] === 'replay') return { status: 'replay', firstDeliveryId: reply[1] as string };
    if (!input.run || reply.length < 2) return { status: 'recorded' };
    return {
      status: 'recorded',
      enqueued: await this.#enqueued(reply.slice(1), !!input.run.held),
    };
  }

  async release(id: string, job?: J): Promise<boolean> {
    const replacement = job === undefined ? '' : JSON.stringify(job);
    if ((await this.#eval(RELEASE, [id, replacement])) !== 1) return false;
    await this.#addTicket(id);
    return true;
  }

  async discard(id: string): Promise<boolean> {
    return (await this.#eval(DELETE_RUN, [id, '1', '0'])) === 1;
  }

  async runForDelivery(deliveryId: string): Promise<RunRecord<J> | undefined> {
    const id = await this.#redis.get(`${this.#p}bydelivery:${deliveryId}`);
    return id ? this.get(id) : undefined;
  }

  async pruneFinished(before: number): Promise<string[]> {
    const pruned: string[] = [];
    for (const id of await this.#redis.zrange(`${this.#p}runs`, '0', '-1')) {
      if ((await this.#eval(DELETE_RUN, [id, '0', String(before)])) === 1) pruned.push(id);
    }
    return pruned;
  }

  async pruneDeliveries(): Promise<number> {
    // Handled deliveries carry their own expiry in Redis (retention or replay window).
    return 0;
  }

  async pendingDeliveries(): Promise<PendingDelivery[]> {
    const ids = await this.#redis.zrange(`${this.#p}pending`, '0', '-1');
    const out: PendingDelivery[] = [];
    for (const id of ids) {
      const h = await this.#redis.hgetall(`${this.#p}dlv:${id}`);
      if (h.state !== 'pending' || h.payload === undefined) continue;
      out.push({
        deliveryId: id,
        event: h.event ?? '',
        payload: JSON.parse(h.payload) as unknown,
        receivedAt: Number(h.receivedAt),
      });
    }
    return out;
  }

  async completeDelivery(deliveryId: string): Promise<void> {
    await this.#eval(COMPLETE_DELIVERY, [deliveryId, String(this.#deliveryRetentionMs)]);
  }

  async enqueue(input: EnqueueInput<J>): Promise<EnqueueResult<J>> {
    const reply = (await this.#eval(ENQUEUE, [
      input.key,
      input.deliveryId ?? '',
      input.id ?? randomUUID(),
      String(Date.now()),
      input.held ? '1' : '0',
      JSON.stringify(input.job),
      input.group ?? '',
      capArg(input.maxQueuedInGroup),
    ])) as string[];
    return this.#enqueued(reply, !!input.held);
  }

  async #enqueued(reply: string[], held: boolean): Promise<EnqueueResult<J>> {
    if (reply[0] === 'duplicate') return { status: 'duplicate' };
    if (reply[0] === 'full') return { status: 'full', queued: Number(reply[1]) };
    const run = await this.get(reply[1] as string);
    if (!run) throw new Error(`run ${reply[1]} vanished from Redis while being enqueued`);
    if (reply[0] === 'active') return { status: 'active', run };
    if (!held) await this.#addTicket(run.id);
    return { status: 'queued', run, position: Number(reply[2]) };
  }

  async claim(): Promise<RunRecord<J> | undefined> {
    const worker = this.#worker;
    if (!worker)
      throw new Error('this process opened the queue without a worker: it cannot claim runs');
    // Counted before the await, so concurrent claims in this process never exceed the limit.
    while (this.#held.size + this.#claiming < this.concurrency) {
      this.#claiming++;
      try {
        const token = randomUUID();
        const job = (await worker.getNextJob(token, { block: false })) as BullJob | undefined;
        if (!job?.id) return undefined;
        if (job.deferredFailure) {
          // A job stalled past BullMQ's own count (from before tickets): a ticket all the same.
          await job
            .moveToFailed(new Error(job.deferredFailure), token, false)
            .catch(() => undefined);
          await this.#addTicket(randomUUID());
          continue;
        }
        const [was, id, failed] = (await this.#eval(CLAIM, [
          job.id,
          token,
          String(Date.now()),
          String(this.maxAttempts),
        ])) as [string, string, string];
        if (failed) {
          const run = await this.get(failed);
          if (run) this.#lostFailed.push(run);
        }
        if (was === 'none') {
          // A ticket left over (its run was cancelled or taken through another ticket).
          await job.moveToCompleted('nothing to run', token, false).catch(() => undefined);
          continue;
        }
        const timer = setInterval(() => {
          job.extendLock(token, this.lockMs).catch(() => undefined);
        }, this.lockMs / 3);
        timer.unref?.();
        this.#held.set(id, { job, token, timer });
        return await this.get(id);
      } finally {
        this.#claiming--;
      }
    }
    return undefined;
  }

  async finish(
    id: string,
    state: FinishState,
    details: { outcome?: string; summary?: string } = {},
  ): Promise<boolean> {
    const held = this.#held.get(id);
    const ended =
      (await this.#eval(FINISH, [
        id,
        state,
        String(Date.now()),
        details.outcome ?? '',
        details.summary ?? '',
        held?.token ?? '',
      ])) === 1;
    if (held) {
      clearInterval(held.timer);
      this.#held.delete(id);
      // Fails when BullMQ took the lock away (this worker was thought lost): nothing to undo.
      await held.job.moveToCompleted(state, held.token, false).catch(() => undefined);
    } else if (ended) {
      await this.#bull.remove(id).catch(() => undefined);
    }
    return ended;
  }

  async requestCancel(
    key: string,
  ): Promise<{ run: RunRecord<J>; wasRunning: boolean } | undefined> {
    const reply = (await this.#eval(REQUEST_CANCEL, [key, String(Date.now())])) as
      [string, string] | null;
    if (!reply) return undefined;
    const [id, running] = reply;
    if (running === '0') await this.#bull.remove(id).catch(() => undefined);
    const run = await this.get(id);
    if (!run) return undefined;
    return { run, wasRunning: running === '1' };
  }

  async stillHeld(id: string): Promise<boolean> {
    const held = this.#held.get(id);
    if (!held) return false;
    const [state, owner] = await this.#redis.hmget(`${this.#p}run:${id}`, 'state', 'owner');
    return state === 'running' && owner === held.token;
  }

  async isCancelRequested(id: string): Promise<boolean> {
    return (await this.#redis.hget(`${this.#p}run:${id}`, 'cancel')) === '1';
  }

  async position(id: string): Promise<number | undefined> {
    const position = (await this.#eval(POSITION, [id])) as number | null;
    return position ?? undefined;
  }

  async get(id: string): Promise<RunRecord<J> | undefined> {
    const [h, job] = await Promise.all([
      this.#redis.hgetall(`${this.#p}run:${id}`),
      this.#redis.get(`${this.#p}job:${id}`),
    ]);
    if (!h.state || job === null) return undefined;
    return toRecord<J>(id, h, job);
  }

  async activeFor(key: string): Promise<RunRecord<J> | undefined> {
    const id = await this.#redis.get(`${this.#p}active:${key}`);
    return id ? this.get(id) : undefined;
  }

  async list(state?: RunState): Promise<RunRecord<J>[]> {
    const ids =
      state === 'queued'
        ? await this.#redis.zrange(`${this.#p}queued`, '0', '-1')
        : await this.#redis.zrange(`${this.#p}runs`, '0', '-1');
    const runs = await Promise.all(ids.map((id) => this.get(id)));
    return runs.filter((r): r is RunRecord<J> => !!r && (!state || r.state === state));
  }

  async addRestCalls(id: string, calls: number): Promise<void> {
    if (calls === 0) return;
    const key = `${this.#p}run:${id}`;
    // Only for an existing run: HINCRBY on a missing hash would create a half record.
    if (await this.#redis.exists(key)) await this.#redis.hincrby(key, 'rest', calls);
  }

  async recoverInterrupted(): Promise<{ requeued: RunRecord<J>[]; failed: RunRecord<J>[] }> {
    const requeued: RunRecord<J>[] = [];
    const failed: RunRecord<J>[] = this.#lostFailed.splice(0);
    for (const id of await this.#redis.smembers(`${this.#p}running`)) {
      if (this.#held.has(id)) continue;
      const [owner, held] = await this.#redis.hmget(`${this.#p}run:${id}`, 'owner', 'ticket');
      // Runs claimed before tickets were held by their own job.
      const ticket = held || id;
      const ticketState = await this.#bull.getJobState(ticket);
      if (ticketState === 'active') continue;
      const run = await this.get(id);
      if (!run || run.state !== 'running') continue;
      // BullMQ put the ticket back in the wait list: it stays there for whoever claims next.
      const waiting =
        (ticketState === 'waiting' || ticketState === 'prioritized' || ticketState === 'delayed') &&
        !(await this.#bull.getJob(ticket))?.deferredFailure;
      if (run.cancelRequested) {
        if (await this.#finishLost(id, owner ?? null, 'cancelled', 'cancelled', 'interrupted')) {
          failed.push((await this.get(id)) as RunRecord<J>);
        }
      } else if (run.attempts < this.maxAttempts) {
        if ((await this.#eval(REQUEUE_LOST, [id, owner ?? ''])) === 1) {
          if (!waiting) await this.#addTicket(randomUUID());
          requeued.push((await this.get(id)) as RunRecord<J>);
        }
      } else {
        const gone = await this.#failLost(id, owner ?? null);
        if (gone) failed.push(gone);
      }
    }
    // A process that died between making a run claimable and adding its ticket: one ticket per
    // claimable run at least (a spare one is completed unused).
    const claimable = (await this.#eval(CLAIMABLE, [])) as number;
    for (let tickets = await this.#bull.getWaitingCount(); tickets < claimable; tickets++) {
      await this.#addTicket(randomUUID());
    }
    return { requeued, failed };
  }

  async getNote(key: string, name: string): Promise<string | undefined> {
    return (await this.#redis.hget(`${this.#p}note:${key}`, name)) ?? undefined;
  }

  async setNote(key: string, name: string, value: string | undefined): Promise<void> {
    if (value === undefined) await this.#redis.hdel(`${this.#p}note:${key}`, name);
    else await this.#redis.hset(`${this.#p}note:${key}`, name, value);
  }

  async putArtifact(runId: string, name: string, body: Buffer, ttlSeconds: number): Promise<void> {
    await this.#redis.set(
      `${this.#p}art:${runId}:${name}`,
      gzipSync(body),
      'EX',
      String(ttlSeconds),
    );
  }

  async getArtifact(runId: string, name: string): Promise<Buffer | undefined> {
    const gz = await this.#redis.getBuffer(`${this.#p}art:${runId}:${name}`);
    return gz ? gunzipSync(gz) : undefined;
  }

  /**
   * The lock lives `exclusiveLockMs` and is renewed while `fn` runs, so a long burst of paced
   * GitHub writes keeps it (a lapsed lock let a second status comment be created, issue 16).
   * The renewal timer dies with its process: a crashed holder's lock lapses within one TTL.
   * A waiter waits as long as the lock lives: going ahead without it is the duplicate it exists
   * to prevent. A holder stuck past EXCLUSIVE_MAX_HOLD_MS stops renewing, so no hang blocks an
   * issue's status writes for good.
   */
  async exclusive<T>(key: string, fn: () => Promise<T>): Promise<T> {
    const lockKey = `${this.#p}lock:${key}`;
    const token = randomUUID();
    const ttlMs = this.exclusiveLockMs;
    while ((await this.#redis.set(lockKey, token, 'PX', String(ttlMs), 'NX')) !== 'OK') {
      await new Promise((r) => setTimeout(r, 20));
    }
    const stopRenewing = this.#renewLock(lockKey, token, ttlMs);
    try {
      return await fn();
    } finally {
      stopRenewing();
      await this.#eval(UNLOCK, [lockKey, token]).catch(() => undefined);
    }
  }

  /** Extends a held lock every third of its TTL until stopped, lost, or held too long. */
  #renewLock(lockKey: string, token: string, ttlMs: number): () => void {
    const until = Date.now() + EXCLUSIVE_MAX_HOLD_MS;
    const timer = setInterval(() => {
      if (Date.now() > until) return clearInterval(timer);
      this.#eval(RENEW, [lockKey, token, String(ttlMs)]).then(
        // 0: another holder has it (ours lapsed while this process stalled): leave it be.
        (renewed) => renewed === 0 && clearInterval(timer),
        // Redis unreachable for now: the next tick tries again, within the TTL.
        () => undefined,
      );
    }, ttlMs / 3);
    timer.unref?.();
    return () => clearInterval(timer);
  }

  /** Runs this process holds (their BullMQ locks renewed). */
  get heldIds(): string[] {
    return [...this.#held.keys()];
  }

  async #failLost(id: string, owner?: string | null): Promise<RunRecord<J> | undefined> {
    const key = `${this.#p}run:${id}`;
    const by = owner === undefined ? await this.#redis.hget(key, 'owner') : owner;
    const attempts = Number((await this.#redis.hget(key, 'attempts')) ?? 0);
    const summary = `interrupted ${attempts} times: the worker running it was lost`;
    if (!(await this.#finishLost(id, by, 'failed', 'interrupted', summary))) return undefined;
    return this.get(id);
  }

  async #finishLost(
    id: string,
    owner: string | null,
    state: FinishState,
    outcome: string,
    summary: string,
  ): Promise<boolean> {
    const reply = await this.#eval(FINISH, [
      id,
      state,
      String(Date.now()),
      outcome,
      summary,
      owner ?? '',
    ]);
    return reply === 1;
  }

  /** A claim ticket (its id: the run that made it claimable, or a fresh one). */
  async #addTicket(id: string): Promise<void> {
    await this.#bull.add(
      'claim',
      { madeFor: id },
      {
        jobId: id,
        // The run record is the history; BullMQ's copy can go soon after.
        removeOnComplete: { age: 3600 },
        removeOnFail: { age: 7 * 24 * 3600 },
      },
    );
  }

  #eval(script: string, args: string[]): Promise<unknown> {
    return this.#redis.eval(script, 0, this.#p, ...args);
  }
}

function toRecord<J>(id: string, h: Record<string, string>, job: string): RunRecord<J> {
  const num = (v: string | undefined) => (v === undefined || v === '' ? undefined : Number(v));
  const str = (v: string | undefined) => (v === undefined || v === '' ? undefined : v);
  return {
    id,
    key: h.key ?? '',
    group: h.group ?? h.key ?? '',
    deliveryId: str(h.deliveryId),
    state: h.state as RunState,
    attempts: Number(h.attempts ?? 0),
    job: JSON.parse(job) as J,
    cancelRequested: h.cancel === '1',
    restCalls: Number(h.rest ?? 0),
    createdAt: Number(h.createdAt),
    startedAt: num(h.startedAt),
    finishedAt: num(h.finishedAt),
    outcome: str(h.outcome),
    summary: str(h.summary),
    held: h.held === '1',
  };
}

function capArg(max: number | undefined): string {
  return max === undefined ? '' : String(max);
}

function withTimeout<T>(promise: Promise<T>, ms: number): Promise<T> {
  return new Promise((resolve, reject) => {
    const timer = setTimeout(() => reject(new Error(`no answer within ${ms} ms`)), ms);
    promise.then(
      (v) => {
        clearTimeout(timer);
        resolve(v);
      },
      (e: unknown) => {
        clearTimeout(timer);
        reject(e instanceof Error ? e : new Error(String(e)));
      },
    );
  });
}

/** The URL without its password, for messages. */
export function redactUrl(url: string): string {
  try {
    const u = new URL(url);
    if (u.password) u.password = '***';
    return u.toString();
  } catch {
    return '(unparsable URL)';
  }
}
