// A data directory's stable identity: one random id, created on first use and kept in the
// directory, so everything this installation owns (sandbox containers, locks) can be labelled
// with it and told apart from another instance's on the same Docker engine. `frognano serve` and
// `frognano worker` sharing a data directory share the id: they are one instance.
import { randomUUID } from 'node:crypto';
import { linkSync, mkdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';

export const INSTANCE_ID_FILE = 'instance-id';

const ID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/;

/** The instance id of a data directory (created there on first call). */
export function instanceId(dataDir: string): string {
  const path = join(dataDir, INSTANCE_ID_FILE);
  const existing = readId(path);
  if (existing) return existing;
  mkdirSync(dataDir, { recursive: true });
  // Written aside, then linked into place: the file appears whole, and two processes starting
  // at once agree on whichever link came first.
  const id = randomUUID();
  const temp = `${path}.${id}.tmp`;
  writeFileSync(temp, `${id}\n`, { mode: 0o644 });
  try {
    linkSync(temp, path);
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code !== 'EEXIST') throw error;
  } finally {
    rmSync(temp, { force: true });
  }
  const stored = readId(path);
  if (!stored) {
    throw new Error(
      `${path} does not hold an instance id: delete the file and start again (a new id is made)`,
    );
  }
  return stored;
}

/** The instance id of `dataDir` if it has one (none: nothing can be labelled as its). */
export function existingInstanceId(dataDir: string): string | undefined {
  return readId(join(dataDir, INSTANCE_ID_FILE));
}

function readId(path: string): string | undefined {
  let raw: string;
  try {
    raw = readFileSync(path, 'utf8');
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code === 'ENOENT') return undefined;
    throw error;
  }
  const id = raw.trim();
  if (!ID.test(id)) {
    throw new Error(`${path} does not hold an instance id: delete the file and start again`);
  }
  return id;
}
