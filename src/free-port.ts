import { createServer } from 'node:net';

/** A free TCP port (Probot's Server treats port 0 as "use 3000", so we pick one ourselves). */
export function freePort(host?: string): Promise<number> {
  return new Promise((resolvePort, reject) => {
    const probe = createServer();
    probe.once('error', reject);
    probe.listen(0, host ?? '127.0.0.1', () => {
      const address = probe.address();
      probe.close(() => resolvePort(typeof address === 'object' && address ? address.port : 0));
    });
  });
}
