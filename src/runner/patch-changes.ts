// git's reading of a patch on the run's clean clone: what `git apply --index` changes, file by
// file (plumbing, no textconv, no renames), and the change split into what the verdict keeps
// and what it sets aside, as diffs host git writes.
import { mkdir, rm, writeFile } from 'node:fs/promises';
import path from 'node:path';
import type { SimpleGit } from 'simple-git';
import { CloneError } from './clone-error.js';
import { gitWithInput } from './host-git.js';

/** One entry of `git diff-tree --raw --no-renames`, with its `--numstat` and new blob. */
export interface AppliedChange {
  path: string;
  /** Modes as octal text; `000000` for the side where the file does not exist. */
  oldMode: string;
  newMode: string;
  /** A (added), M, D or T (type change). */
  status: string;
  /** Lines added and removed; null when git treats the file as binary. */
  added: number | null;
  removed: number | null;
  /** Bytes of the new content (0 when deleted). */
  size: number;
  /** What the link points to, when the new side is a symbolic link (mode 120000). */
  linkTarget?: string;
}

export interface AppliedPatch {
  changes: AppliedChange[];
  /**
   * When `originCommit` is not `baseCommit` (a follow-up): the whole change since the origin,
   * the previous revisions included; `setAside` picks among these, and `split` is of this.
   */
  sinceOrigin?: AppliedChange[];
  /**
   * When `setAside` was given: `kept` is the change without the paths it picked (applies to
   * the origin commit), `setAside` those paths alone (applies on top of `kept`). Binary-safe,
   * full-index patches written by host git, not the agent's text. Empty strings when empty.
   */
  split?: { kept: string; setAside: string; setAsidePaths: string[] };
}

/** The run's clone and the commits a reading starts from. */
export interface Commits {
  tree: SimpleGit;
  raw: { dir: string; env: Record<string, string> };
  runDir: string;
  baseCommit: string;
  originCommit: string;
}

/** `changesFromPatch` with a patch, `previousChanges` without one (see Workspace). */
export async function readChanges(
  at: Commits,
  patch: string | undefined,
  setAside: ((path: string, change: AppliedChange) => boolean) | undefined,
): Promise<AppliedPatch> {
  const { tree, raw, runDir, baseCommit, originCommit } = at;
  const file = path.join(runDir, 'policy-check.patch');
  // info/attributes outranks every .gitattributes: the patch's own cannot declare its binary
  // files text (or the reverse) and so keep them out of the list of binaries.
  const attributes = path.join(raw.dir, '.git', 'info', 'attributes');
  await mkdir(path.dirname(attributes), { recursive: true });
  await writeFile(attributes, '* !diff\n');
  try {
    // The clone rests at the origin; the patch applies where the run started.
    if (originCommit !== baseCommit) await tree.raw(['reset', '-q', '--hard', baseCommit]);
    if (patch !== undefined) {
      // Byte for byte what publishing applies (it adds a final newline when missing).
      await writeFile(file, patch.endsWith('\n') ? patch : `${patch}\n`);
      await tree.raw(['apply', '--index', '--whitespace=nowarn', file]);
    }
    const fullTree = (await tree.raw(['write-tree'])).trim();
    const changes = await describeChanges(tree, raw, baseCommit, fullTree);
    const sinceOrigin =
      originCommit === baseCommit
        ? undefined
        : await describeChanges(tree, raw, originCommit, fullTree);
    const whole = sinceOrigin ?? changes;
    const described = { changes, ...(sinceOrigin ? { sinceOrigin } : {}) };
    if (!setAside) return described;
    const setAsidePaths = whole.filter((c) => setAside(c.path, c)).map((c) => c.path);
    let keptTree = fullTree;
    if (setAsidePaths.length > 0) {
      const list = path.join(runDir, 'set-aside.paths');
      await writeFile(list, setAsidePaths.map((p) => `${p}\0`).join(''));
      // Back to the origin's version (or absence) of each path set aside, in the index only.
      await gitWithInput(
        { ...raw, env: { ...raw.env, GIT_LITERAL_PATHSPECS: '1' } },
        ['reset', '-q', `--pathspec-from-file=${list}`, '--pathspec-file-nul', originCommit],
        Buffer.alloc(0),
      );
      keptTree = (await tree.raw(['write-tree'])).trim();
    }
    const render = (from: string, to: string) =>
      from === to
        ? Promise.resolve('')
        : tree.raw(['diff-tree', '-p', '--binary', '--full-index', '--no-renames', from, to]);
    const originTree = (await tree.raw(['rev-parse', `${originCommit}^{tree}`])).trim();
    return {
      ...described,
      split: {
        kept: await render(originTree, keptTree),
        setAside: await render(keptTree, fullTree),
        setAsidePaths,
      },
    };
  } finally {
    await tree.raw(['reset', '-q', '--hard', originCommit]).catch(() => undefined);
    await tree.raw(['clean', '-q', '-f', '-d', '-x']).catch(() => undefined);
    await rm(file, { force: true });
    await rm(attributes, { force: true });
  }
}

/** git's reading of `from..to` (commits or trees): plumbing, no textconv, no renames. */
async function describeChanges(
  tree: SimpleGit,
  raw: { dir: string; env: Record<string, string> },
  from: string,
  to: string,
): Promise<AppliedChange[]> {
  const diff = ['diff-tree', '-r', '-z', '--no-renames'];
  const changes = parseRaw(await tree.raw([...diff, '--raw', '--no-abbrev', from, to]));
  const numstat = parseNumstat(await tree.raw([...diff, '--numstat', from, to]));
  const live = changes.filter((c) => c.newMode !== '000000' && c.newMode !== '160000');
  const objects = await catFile(
    raw,
    '--batch-check',
    live.map((c) => c.newBlob),
  );
  const links = await catFile(
    raw,
    '--batch',
    live.filter((c) => c.newMode === '120000').map((c) => c.newBlob),
  );
  return changes.map((c) => {
    const counts = numstat.get(c.path);
    const change: AppliedChange = {
      path: c.path,
      oldMode: c.oldMode,
      newMode: c.newMode,
      status: c.status,
      added: counts ? counts.added : 0,
      removed: counts ? counts.removed : 0,
      size: objects.get(c.newBlob)?.size ?? 0,
    };
    const link = c.newMode === '120000' ? links.get(c.newBlob)?.content : undefined;
    if (link) change.linkTarget = link.toString('utf8');
    return change;
  });
}

interface RawEntry {
  path: string;
  oldMode: string;
  newMode: string;
  newBlob: string;
  status: string;
}

function parseRaw(out: string): RawEntry[] {
  const fields = out.split('\0');
  const entries: RawEntry[] = [];
  for (let i = 0; i + 1 < fields.length; i += 2) {
    const meta = /^:(\d{6}) (\d{6}) [0-9a-f]+ ([0-9a-f]+) ([A-Z])/.exec(fields[i] ?? '');
    if (!meta) throw new CloneError(`unexpected git diff-tree --raw output: ${fields[i]}`);
    entries.push({
      path: fields[i + 1] ?? '',
      oldMode: meta[1]!,
      newMode: meta[2]!,
      newBlob: meta[3]!,
      status: meta[4]!,
    });
  }
  return entries;
}

/** `added<TAB>removed<TAB>path<NUL>` per file; `-` counts mean binary. */
function parseNumstat(out: string): Map<string, { added: number | null; removed: number | null }> {
  const map = new Map<string, { added: number | null; removed: number | null }>();
  for (const record of out.split('\0')) {
    const m = /^(-|\d+)\t(-|\d+)\t([\s\S]*)$/.exec(record);
    if (!m) continue;
    map.set(m[3]!, {
      added: m[1] === '-' ? null : Number(m[1]),
      removed: m[2] === '-' ? null : Number(m[2]),
    });
  }
  return map;
}

/** `git cat-file --batch-check|--batch` for many objects in one process. */
async function catFile(
  repo: { dir: string; env: Record<string, string> },
  mode: '--batch' | '--batch-check',
  ids: readonly string[],
): Promise<Map<string, { size: number; content?: Buffer }>> {
  const found = new Map<string, { size: number; content?: Buffer }>();
  if (ids.length === 0) return found;
  const out = await gitWithInput(
    repo,
    ['cat-file', mode],
    Buffer.from(ids.map((id) => `${id}\n`).join('')),
  );
  let at = 0;
  while (at < out.length) {
    const nl = out.indexOf(0x0a, at);
    if (nl < 0) break;
    const [id, type, size] = out.subarray(at, nl).toString('utf8').split(' ');
    at = nl + 1;
    if (type === 'missing' || id === undefined || size === undefined) continue;
    const bytes = Number(size);
    if (mode === '--batch') {
      found.set(id, { size: bytes, content: out.subarray(at, at + bytes) });
      at += bytes + 1;
    } else {
      found.set(id, { size: bytes });
    }
  }
  return found;
}
