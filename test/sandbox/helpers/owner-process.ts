// A process that owns sandboxes of a data directory and does nothing else: it takes its
// owner lock, prints its owner labels, and lives until it is killed.
import { sandboxOwner } from '../../../src/sandbox/owner.js';

const owner = sandboxOwner(process.argv[2]!);
process.stdout.write(`${JSON.stringify(owner)}\n`);
setInterval(() => undefined, 1 << 30);
