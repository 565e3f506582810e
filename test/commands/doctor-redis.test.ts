// The doctor's queue check when FROGNANO_REDIS_URL selects BullMQ on Redis: real redis-server
// processes of the test's own (one with AOF, one without), and a port nothing listens on.
import { afterAll, beforeAll, expect, it } from 'vitest';
import { CHECKS } from '../../src/commands/doctor.js';
import { startOwnRedis, type OwnRedis } from '../support/redis-server.js';

let withAof: OwnRedis;
let withoutAof: OwnRedis;
beforeAll(async () => {
  [withAof, withoutAof] = await Promise.all([
    startOwnRedis(),
    startOwnRedis({ appendonly: false }),
  ]);
});
afterAll(async () => {
  await withAof?.stop();
  await withoutAof?.stop();
});

const queueCheck = CHECKS.find((c) => c.name === 'queue')!;
const check = (env: NodeJS.ProcessEnv) => queueCheck.run({ env, cwd: process.cwd() });

it('passes on a Redis with append-only persistence', async () => {
  expect(await check({ FROGNANO_REDIS_URL: withAof.url })).toEqual({
    ok: true,
    detail: expect.stringMatching(
      /^Redis \d+\.\d+\.\d+ at redis:\/\/127\.0\.0\.1:\d+\/? answers, AOF on$/,
    ),
  });
});

it('warns when Redis would lose accepted runs on a restart (AOF off)', async () => {
  expect(await check({ FROGNANO_REDIS_URL: withoutAof.url })).toMatchObject({
    ok: false,
    severity: 'warn',
    problem: expect.stringContaining('append-only persistence is off'),
    fix: expect.stringContaining('--appendonly yes'),
  });
});

it('blocks when Redis does not answer, hiding the password', async () => {
  await withoutAof.stop();
  const result = await check({
    FROGNANO_REDIS_URL: `redis://:s3cret@127.0.0.1:${withoutAof.port}`,
  });
  expect(result).toMatchObject({
    ok: false,
    severity: 'block',
    problem: expect.stringMatching(
      /^Redis at redis:\/\/:\*\*\*@127\.0\.0\.1:\d+\/? does not answer/,
    ),
    fix: 'start Redis, or fix FROGNANO_REDIS_URL',
  });
  expect(JSON.stringify(result)).not.toContain('s3cret');
});

it('names a FROGNANO_REDIS_URL that is not a Redis URL', async () => {
  expect(await check({ FROGNANO_REDIS_URL: 'http://example.com' })).toMatchObject({
    ok: false,
    severity: 'block',
    problem: expect.stringContaining('FROGNANO_REDIS_URL must be a redis:// or rediss:// URL'),
  });
});
