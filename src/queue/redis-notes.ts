// The Redis backend's notes (note:<key>, a hash by name) and run files (art:<run>:<name>,
// gzip, with a TTL).
import { gunzipSync, gzipSync } from 'node:zlib';
import type { RedisKeys } from './redis-keys.js';
import type { Notes, RunArtifacts } from './types.js';

export class RedisNotes implements Notes {
  constructor(readonly keys: RedisKeys) {}

  async getNote(key: string, name: string): Promise<string | undefined> {
    return (await this.keys.redis.hget(`${this.keys.p}note:${key}`, name)) ?? undefined;
  }

  async setNote(key: string, name: string, value: string | undefined): Promise<void> {
    if (value === undefined) await this.keys.redis.hdel(`${this.keys.p}note:${key}`, name);
    else await this.keys.redis.hset(`${this.keys.p}note:${key}`, name, value);
  }
}

export class RedisArtifacts implements RunArtifacts {
  readonly kind = 'bullmq' as const;

  constructor(readonly keys: RedisKeys) {}

  async putArtifact(runId: string, name: string, body: Buffer, ttlSeconds: number): Promise<void> {
    await this.keys.redis.set(
      `${this.keys.p}art:${runId}:${name}`,
      gzipSync(body),
      'EX',
      String(ttlSeconds),
    );
  }

  async getArtifact(runId: string, name: string): Promise<Buffer | undefined> {
    const gz = await this.keys.redis.getBuffer(`${this.keys.p}art:${runId}:${name}`);
    return gz ? gunzipSync(gz) : undefined;
  }
}
