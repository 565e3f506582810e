// A process that opens a setup network (its Docker network, proxy and host firewall rules) for
// a run of a data directory, prints what it made, and lives until it is killed: what a worker
// killed in the middle of a setup leaves behind.
import pino from 'pino';
import { connectDocker } from '../../../src/sandbox/docker-engine.js';
import { AllowList } from '../../../src/sandbox/egress-allow.js';
import { sandboxOwner } from '../../../src/sandbox/owner.js';
import { openSetupNetwork } from '../../../src/sandbox/setup-network.js';

const [dataDir, runId] = process.argv.slice(2) as [string, string];
const network = await openSetupNetwork({
  docker: connectDocker(),
  runId,
  owner: sandboxOwner(dataDir),
  allow: new AllowList([]),
  log: pino({ level: 'silent' }),
  selfContainer: null,
});
process.stdout.write(`${JSON.stringify({ name: network.name, firewalled: network.firewalled })}\n`);
setInterval(() => undefined, 1 << 30);
