// Which backend a process uses: BullMQ on Redis when FROGNANO_REDIS_URL is set (serve and
// workers on many hosts), else the embedded SQLite queue in the data directory.
import { z } from 'zod';
import { ConfigError, parseEnv } from '../parse-env.js';
import { RedisQueue } from './redis-queue.js';
import { SqliteQueue } from './sqlite-queue.js';
import type { Queue } from './types.js';

export const QueueConfig = z.object({
  FROGNANO_REDIS_URL: z
    .string()
    .trim()
    .refine((raw) => /^rediss?:\/\/[^\s]+$/.test(raw) && URL.canParse(raw), {
      message: 'must be a redis:// or rediss:// URL such as redis://127.0.0.1:6379',
    })
    .optional(),
  FROGNANO_REDIS_PREFIX: z
    .string()
    .trim()
    .regex(/^[\w.:-]+$/, {
      message: 'must be letters, digits, dots, colons, dashes or underscores',
    })
    .prefault('frognano'),
  FROGNANO_LOST_WORKER_SECONDS: z
    .string()
    .trim()
    .refine((raw) => Number.isFinite(Number(raw)) && Number(raw) >= 0.2, {
      message: 'must be a number of seconds, 0.2 or more',
    })
    .transform(Number)
    .prefault('30'),
});
export type QueueConfig = z.infer<typeof QueueConfig>;

export function loadQueueConfig(env: NodeJS.ProcessEnv): QueueConfig {
  const parsed = parseEnv(QueueConfig, env);
  if ('problems' in parsed) throw new ConfigError(parsed.problems);
  return parsed.data;
}

export interface OpenQueueOptions {
  env: NodeJS.ProcessEnv;
  dataDir: string;
  /** sqlite: runs at once in the data directory; bullmq: runs at once in this process. */
  concurrency: number;
  /** A delivery whose raw body was seen within this window is a replay. */
  replayWindowMs?: number;
  /** This process claims runs (bullmq opens a BullMQ worker and its stalled-run check). */
  worker: boolean;
  /** sqlite: a listing that leaves the file as it is (it must exist). */
  readOnly?: boolean;
}

export async function openQueue<J>(options: OpenQueueOptions): Promise<Queue<J>> {
  const config = loadQueueConfig(options.env);
  if (!config.FROGNANO_REDIS_URL) {
    return SqliteQueue.open<J>({
      dataDir: options.dataDir,
      concurrency: options.concurrency,
      replayWindowMs: options.replayWindowMs,
      readOnly: options.readOnly,
    });
  }
  return RedisQueue.open<J>({
    url: config.FROGNANO_REDIS_URL,
    prefix: config.FROGNANO_REDIS_PREFIX,
    concurrency: options.concurrency,
    worker: options.worker,
    replayWindowMs: options.replayWindowMs,
    lockMs: Math.round(config.FROGNANO_LOST_WORKER_SECONDS * 1000),
  });
}
