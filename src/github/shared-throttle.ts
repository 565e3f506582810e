// One write pace for the whole App: GitHub's secondary rate limits count an App's requests
// from every process together, so with Redis `serve` and every worker space their writes
// through one lock there. Probot's `redisConfig` would put all of @octokit/plugin-throttling's
// groups in Redis (Bottleneck); that is not enough for writes: the plugin reserves a write's
// turn before the auth hook (which may first mint a token) and sends a notifying write when
// its notification turn comes (which can be another write's turn), and a turn reserved ahead
// says nothing of a sender that stalls before it sends; each time two writes reach GitHub
// together. Here a write holds a lock in Redis from just before its request is sent until
// GitHub's answer is back, then leaves it for 1 s more (3 s more for one that notifies:
// comments, pull requests, review requests), so the next write of any process reaches GitHub
// at least that long after it. Reads keep the plugin's per-process limits.
import { throttling } from '@octokit/plugin-throttling';
import { randomUUID } from 'node:crypto';
import { setTimeout as sleep } from 'node:timers/promises';
import { Redis } from 'ioredis';
import type { Logger } from 'pino';
import type { ProbotOctokit } from 'probot';
import { redactUrl } from '../queue/redis-queue.js';

/** GitHub: wait at least one second between POST, PATCH, PUT or DELETE requests. */
export const WRITE_GAP_MS = 1_000;
/** The plugin's pace for requests that send notifications. */
export const NOTIFYING_WRITE_GAP_MS = 3_000;

/**
 * Waits for a write's turn (`notifies`: one that sends notifications); the function it gives
 * is called once GitHub has answered, and starts the gap to the next write.
 */
export type WriteTurn = (notifies: boolean) => Promise<() => Promise<void>>;

export interface SharedThrottle {
  /** `throttle` options for Probot's Octokit (`writeTurn` is read by paceWrites). */
  options: Record<string, unknown> & { writeTurn: WriteTurn };
  /** Closes the Redis connections (the App's stop). */
  close(): Promise<void>;
}

// What the plugin asks of its write groups, granted at once: writes wait in paceWrites.
const PASS_THROUGH = {
  key: () => ({
    schedule: <T>(_options: unknown, job: (...args: unknown[]) => Promise<T>, ...args: unknown[]) =>
      job(...args),
  }),
};

export function sharedThrottle(url: string, prefix: string, log: Logger): SharedThrottle {
  // Requests wait through a Redis restart, as the queue does, instead of failing.
  const client = new Redis(url, { maxRetriesPerRequest: null });
  // Once per outage, not once per reconnection attempt.
  let told = false;
  client.on('ready', () => (told = false));
  client.on('error', (error: unknown) => {
    if (told) return;
    told = true;
    log.warn(
      { redis: redactUrl(url), err: error instanceof Error ? error.message : String(error) },
      'GitHub write pace: Redis error',
    );
  });
  // One App in one Redis: FROGNANO_REDIS_PREFIX keeps installations apart.
  const id = `${prefix}:github`;
  const write = spacingLock(client, `${id}:write-lock`, WRITE_GAP_MS);
  const notifying = spacingLock(client, `${id}:notify-lock`, NOTIFYING_WRITE_GAP_MS);
  const writeTurn: WriteTurn = async (notifies) => {
    const released = notifies ? await notifying() : undefined;
    const done = await write().catch(async (error: unknown) => {
      await released?.();
      throw error;
    });
    return async () => {
      await Promise.all([done(), released?.()]);
    };
  };
  return {
    options: { write: PASS_THROUGH, notifications: PASS_THROUGH, writeTurn },
    close: async () => {
      await client.quit().catch(() => undefined);
    },
  };
}

interface HookedOctokit {
  hook: {
    wrap(
      name: 'request',
      hook: (
        request: (options: RequestOptions) => Promise<unknown>,
        options: RequestOptions,
      ) => Promise<unknown>,
    ): void;
  };
}
interface RequestOptions {
  method: string;
  url: string;
  request?: { fetch?: typeof fetch };
}

/**
 * Octokit plugin: with `throttle.writeTurn` set, each write (retries included) waits for its
 * turn right before its request is sent, under the auth hook and the retry and throttling
 * plugins; without it, nothing changes.
 */
export function paceWrites(octokit: HookedOctokit, options: { throttle?: unknown }): object {
  const turn = (options.throttle as { writeTurn?: WriteTurn } | undefined)?.writeTurn;
  if (typeof turn !== 'function') return {};
  octokit.hook.wrap('request', (request, requestOptions) => {
    const { method, url } = requestOptions;
    const { pathname } = new URL(url, 'http://github.test');
    if (method === 'GET' || method === 'HEAD' || isAuthRequest(method, pathname))
      return request(requestOptions);
    const notifies = throttling.triggersNotification(pathname);
    const inner = requestOptions.request?.fetch;
    const paced: typeof fetch = async (input, init) => {
      const answered = await turn(notifies);
      try {
        // Looked up per call: test doubles (nock) replace the global fetch after start-up.
        return await (inner ?? globalThis.fetch)(input, init);
      } finally {
        await answered();
      }
    };
    // In place, as RestBudget does: every inner hook gets this options object.
    requestOptions.request = { ...requestOptions.request, fetch: paced };
    return request(requestOptions);
  });
  return {};
}

// A lock held while a write is sent (a sender that died lets go after this long), then left
// for the gap. Polled this often while held; waited out exactly once only the gap is left.
const HOLD_MS = 60_000;
const POLL_MS = 50;
// Shortens the lock to the gap from now, if it is still ours.
const LEAVE = `if redis.call('GET', KEYS[1]) == ARGV[1] then return redis.call('PEXPIRE', KEYS[1], ARGV[2]) end return 0`;

/**
 * A lock in Redis that spaces its holders `gapMs` apart, from the end of one hold to the
 * start of the next, across processes. Within a process, one claim at a time, in order.
 */
function spacingLock(redis: Redis, key: string, gapMs: number): () => Promise<() => Promise<void>> {
  let last: Promise<void> = Promise.resolve();
  return async () => {
    const previous = last;
    let left!: () => void;
    last = new Promise<void>((resolve) => (left = resolve));
    await previous;
    try {
      const token = randomUUID();
      while ((await redis.set(key, token, 'PX', HOLD_MS, 'NX')) !== 'OK') {
        const ttl = await redis.pttl(key);
        await sleep(ttl > gapMs || ttl < 0 ? POLL_MS : ttl);
      }
      let leaving: Promise<void> | undefined;
      return () =>
        (leaving ??= redis
          .eval(LEAVE, 1, key, token, String(gapMs))
          .then(
            () => undefined,
            () => undefined,
          )
          .finally(left));
    } catch (error) {
      left();
      throw error;
    }
  };
}

/** The plugin's own test: token mints and OAuth exchanges are not writes. */
function isAuthRequest(method: string, pathname: string): boolean {
  return (
    (method === 'PATCH' && /^\/applications\/[^/]+\/token\/scoped$/.test(pathname)) ||
    (method === 'POST' &&
      (/^\/applications\/[^/]+\/token$/.test(pathname) ||
        /^\/app\/installations\/[^/]+\/access_tokens$/.test(pathname) ||
        pathname === '/login/oauth/access_token'))
  );
}

/**
 * The App's Octokit with the shared throttle under the options it is given (a class's own
 * defaults still win: the tests' unspaced writes) and writes paced as they leave.
 */
export function withSharedThrottle(
  Octokit: typeof ProbotOctokit,
  throttle: SharedThrottle | undefined,
): typeof ProbotOctokit {
  if (!throttle) return Octokit;
  return (Octokit.plugin(paceWrites as never) as typeof ProbotOctokit).defaults(
    (options: Record<string, unknown>) => ({
      ...options,
      throttle: { ...throttle.options, ...(options.throttle as object) },
    }),
  );
}
