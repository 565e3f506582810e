// What a process killed mid-publish left: its clone, and records nobody will retry. Removed
// when workers start, before they take runs.
import type { Logger } from 'pino';
import { dataPaths } from '../../data-dir.js';
import { prunePendingPublishes } from './pending-publish.js';
import { removeStalePublishDirs } from './publish.js';

export async function removePublishLeftovers(dataDir: string, log: Logger): Promise<void> {
  const leftovers = await removeStalePublishDirs(dataPaths.publishDir(dataDir));
  const pruned = await prunePendingPublishes(dataDir);
  if (leftovers.length + pruned.length > 0) {
    log.info({ leftovers, pruned }, 'removed publish leftovers');
  }
}
