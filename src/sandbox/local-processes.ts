// The local sandbox's processes: every command runs in its own process group, and what leaves
// the group (setsid, a daemon, a fork bomb) is found by parent pid and by the environment marker
// each command carries (/proc, Linux only), and killed.
import { readdirSync, readFileSync } from 'node:fs';

export function groupAlive(pgid: number): boolean {
  try {
    process.kill(-pgid, 0);
    return true;
  } catch {
    return false;
  }
}

/**
 * After a timeout or abort, what left the command's process group (setsid, a daemon, an
 * escaped fork bomb) is killed too: its descendants by parent pid and every process that still
 * carries its environment marker. Swept until none is left, as a fork bomb may still be
 * forking (bounded). Linux only (/proc); elsewhere the process group is all that is killed.
 */
export async function sweepUntilGone(root: number | undefined, needle: Buffer): Promise<void> {
  for (let round = 0; round < 100; round++) {
    if (killProcesses(strayProcesses(root, needle)) === 0) return;
    await new Promise((resolve) => setTimeout(resolve, 10));
  }
}

export function killProcesses(pids: number[]): number {
  for (const pid of pids) {
    try {
      process.kill(pid, 'SIGKILL');
    } catch {
      // Gone already, or not ours.
    }
  }
  return pids.length;
}

/** Descendants of `root` and processes whose environment holds `needle` (e.g. `\0NAME=value`). */
export function strayProcesses(root: number | undefined, needle: Buffer): number[] {
  let names: string[];
  try {
    names = readdirSync('/proc');
  } catch {
    return [];
  }
  const parents = new Map<number, number>();
  const victims = new Set<number>();
  for (const name of names) {
    if (!/^\d+$/.test(name)) continue;
    const pid = Number(name);
    if (pid === process.pid) continue;
    try {
      const stat = readFileSync(`/proc/${name}/stat`, 'latin1');
      const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
      if (fields[0] === 'Z' || fields[0] === 'X') continue;
      parents.set(pid, Number(fields[1]));
      // The marker sits between NULs; a leading NUL is added so the first entry matches too.
      const environ = Buffer.concat([
        Buffer.from([0]),
        readFileSync(`/proc/${name}/environ`),
        Buffer.from([0]),
      ]);
      if (environ.includes(needle)) victims.add(pid);
    } catch {
      // Gone, or another user's process (its environ is not readable): not ours.
    }
  }
  if (root === undefined) return [...victims];
  const children = new Map<number, number[]>();
  for (const [pid, parent] of parents) {
    const list = children.get(parent);
    if (list) list.push(pid);
    else children.set(parent, [pid]);
  }
  const seen = new Set([root]);
  const stack = [root];
  while (stack.length > 0) {
    for (const child of children.get(stack.pop() as number) ?? []) {
      if (seen.has(child)) continue;
      seen.add(child);
      victims.add(child);
      stack.push(child);
    }
  }
  victims.delete(process.pid);
  return [...victims];
}

export function killGroup(pgid: number): void {
  try {
    process.kill(-pgid, 'SIGKILL');
  } catch {
    // Already gone.
  }
}
