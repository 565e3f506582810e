// What an attempt's Docker sandbox starts again from when it is lost mid-loop (leaf-protocol.md
// §8, item 8): the attempt's starting image, brought back to where the attempt began, with no
// network (the Leaf loop then replays its own changes). Several attempts share the attempt base
// (committed after setup); one attempt uses the setup snapshot, or the base image when there is
// no setup. Without either, a loss stays final.
import type { DockerSandbox } from '../../sandbox/docker-sandbox.js';
import { hostTreeTurn } from '../host-tree-turn.js';
import type { RunContext } from '../run-context.js';
import type { Prepared } from './config.js';
import { excludeUntracked } from './exclude-untracked.js';
import { enterPrevious } from './previous-revisions.js';
import { setupRuns } from '../setup-plan/planned-setup.js';
import { emptyWorkdir, refreshTree } from './sandbox.js';

export type StartingImage =
  /** The attempt base: setup done and the tree in it, as every attempt began. */
  | { kind: 'attempt-base'; image: string }
  /** The setup snapshot: setup done, the tree of its own time (refreshed, then copied in). */
  | { kind: 'snapshot'; image: string }
  /** The base image of a repository without setup: the tree is copied in. */
  | { kind: 'base'; image: string };

/** One attempt's starting image: the snapshot, else the base image when setup has nothing to do. */
export function singleAttemptImage(
  prepared: Prepared,
  snapshotImage: string | undefined,
): StartingImage | undefined {
  if (snapshotImage !== undefined) return { kind: 'snapshot', image: snapshotImage };
  if (!setupRuns(prepared.setup)) return { kind: 'base', image: prepared.image };
  return undefined;
}

/** Tells `sandbox` how to start again from `from`, as its attempt started (never a network). */
export function rebuildFrom(
  run: RunContext,
  prepared: Prepared,
  sandbox: DockerSandbox,
  from: StartingImage,
): void {
  sandbox.rebuildFrom({
    image: from.image,
    prepare: async (rebuilt) => {
      if (from.kind === 'snapshot') await refreshTree(run, rebuilt);
      if (from.kind === 'base') await emptyWorkdir(run, rebuilt, prepared.image);
      if (from.kind !== 'attempt-base') {
        const { workspace } = prepared;
        await hostTreeTurn(workspace, () => rebuilt.copyIn(workspace.treeDir));
      }
      const entered = await enterPrevious(run, prepared.previous, rebuilt, 'all');
      if (entered) throw new Error(entered.error);
      await excludeUntracked(rebuilt, run.signal, run.log);
    },
  });
}
