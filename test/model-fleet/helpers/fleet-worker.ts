// A worker process for the Redis lease tests: runs `loops` agent loops of `steps` requests each
// against the endpoint, through a fleet whose leases live in Redis, and says on stdout when each
// loop waits, holds a slot (after its first answer) and ends. `steps` 0: hold for ever.
import { parseEndpoints } from '../../../src/model-fleet/endpoint-url.js';
import { ModelFleet } from '../../../src/model-fleet/fleet.js';
import { RedisFleetStore } from '../../../src/model-fleet/redis-store.js';
import { SYSTEM_PROMPT, TOOL_SCHEMAS } from '../../../src/leaf/protocol.js';

const [url, redisUrl, prefix, cap, loops, steps, leaseMs, name] = process.argv.slice(2) as [
  string,
  string,
  string,
  string,
  string,
  string,
  string,
  string,
];
const say = (line: string) => process.stdout.write(`${line}\n`);
const fleet = new ModelFleet({
  endpoints: parseEndpoints([url]),
  model: { maxRetries: 0 },
  maxLoops: Number(cap),
  store: new RedisFleetStore({ url: redisUrl, prefix, leaseMs: Number(leaseMs) }),
  waitPollMs: 200,
});
await Promise.all(
  Array.from({ length: Number(loops) }, async (_, i) => {
    const id = `${name}-${i}`;
    const loop = fleet.loop({ onWait: (waiting) => waiting && say(`waiting ${id}`) });
    const messages = [
      { role: 'system' as const, content: SYSTEM_PROMPT },
      { role: 'user' as const, content: id },
    ];
    await loop.complete(messages, TOOL_SCHEMAS);
    say(`held ${id}`);
    if (Number(steps) === 0) return new Promise(() => undefined);
    for (let step = 1; step < Number(steps); step++) await loop.complete(messages, TOOL_SCHEMAS);
    await loop.release();
    say(`ended ${id}`);
  }),
);
await fleet.close();
say('done');
