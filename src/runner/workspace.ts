// Host-side git: a cached bare mirror per repository, and a fresh working clone per run.
// Host git only ever runs in the mirror and in the run's clone BEFORE the tree is copied
// into the sandbox; the sandbox's copy (and its .git) is never touched by host git.
// Credentials travel only through the child's environment, scoped to the remote's origin.
import { spawn } from 'node:child_process';
import { createHash } from 'node:crypto';
import { mkdir, readFile, rename, rm, stat, writeFile } from 'node:fs/promises';
import path from 'node:path';
import { simpleGit, type SimpleGit } from 'simple-git';
import type { Logger } from 'pino';
import { basicCredential } from './git-auth-header.js';
import { hostGitEnv } from './host-git-env.js';
import { registerSecret } from '../redact.js';
import type { CredentialProvider } from './run-types.js';
import { readTreeFiles, type TreeFile } from './tree-files.js';
import { currentProcessId } from '../sandbox/owner.js';
import { RUN_MARKER } from '../sandbox/run-marker.js';

const DEFAULT_LOCK_TIMEOUT_MS = 10 * 60_000;
// Kill a git command that has printed nothing for this long (a hung remote).
const GIT_SILENCE_TIMEOUT_MS = 5 * 60_000;

export interface PrepareWorkspaceOptions {
  runId: string;
  /** A local directory (a git repository) or a clone URL (https://, file://, ssh). */
  repo: string;
  /** Commit, branch or tag; default: the remote's HEAD. */
  revision?: string;
  /**
   * A follow-up: the revision the previous attempts started from (commit, branch or tag). The
   * tree is checked out at its merge base with `revision` (the origin), not at `revision`.
   */
  baseRevision?: string;
  getCredential?: CredentialProvider;
  /** Mirrors live in `<cacheDir>/mirrors`. */
  cacheDir: string;
  /** The run's directory is `<workRoot>/<runId>`. */
  workRoot: string;
  signal?: AbortSignal;
  log?: Logger;
  lockTimeoutMs?: number;
  /** Environment to take PATH, locale and proxies from (default process.env); never HOME. */
  env?: NodeJS.ProcessEnv;
}

export interface Workspace {
  /** `<workRoot>/<runId>`: everything of this run on the host. */
  runDir: string;
  /** The working clone at `originCommit` (with its .git), ready to copy into a sandbox. */
  treeDir: string;
  /** The commit the run starts from: its patch applies there. */
  baseCommit: string;
  /**
   * Where setup, the snapshot key and the verdict's harness come from: `baseCommit` itself, or
   * for a follow-up the base revision (what no revision of the model wrote), with the previous
   * revisions (`previousChanges`) applied in the sandbox only after setup, offline.
   */
  originCommit: string;
  /** Whether the mirror already existed (fetched) or was cloned now. */
  mirror: { dir: string; reused: boolean };
  /**
   * What `git apply --index` (as publishing runs it) changes when the patch is applied to this
   * clean clone at `baseCommit`: git's own reading of the untrusted patch text, for the policy
   * and the evidence. With `setAside`, also git's own diffs of the change without the paths it
   * accepts, and of those paths alone, both from `originCommit` (a follow-up: the previous
   * revisions and the patch as one change). The clone is reset afterwards. Throws when the
   * patch does not apply.
   */
  changesFromPatch(
    patch: string,
    options?: { setAside?: (path: string, change: AppliedChange) => boolean },
  ): Promise<AppliedPatch>;
  /** The same reading of `originCommit..baseCommit`: a follow-up's previous revisions. */
  previousChanges(options: {
    setAside: (path: string, change: AppliedChange) => boolean;
  }): Promise<AppliedPatch>;
  /**
   * `git diff <base>...<baseCommit>` as text (no external diff, no textconv): a previous
   * attempt's change since it left `base` (a commit, branch or tag of the source).
   */
  diffFrom(base: string): Promise<string>;
  /**
   * Files as git stores them at `revision` (a commit, branch or tag of the source; default
   * `baseCommit`), each cut at `maxBytes`; symbolic links leading out of the tree are not read.
   */
  readFiles(
    paths: readonly string[],
    options: { revision?: string; maxBytes: number },
  ): Promise<TreeFile[]>;
  /** Removes the run directory. Idempotent. */
  dispose(): Promise<void>;
}

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

/** Clone or fetch failed; the message is one line, free of credentials. */
export class CloneError extends Error {
  constructor(message: string) {
    super(message);
    this.name = 'CloneError';
  }
}

interface Source {
  /** What git is given (no userinfo). */
  url: string;
  /** Key for the mirror cache. */
  key: string;
  /** For messages. */
  display: string;
  embedded?: { username: string; password: string };
}

export function runDirFor(workRoot: string, runId: string): string {
  if (!/^[A-Za-z0-9][A-Za-z0-9._-]{0,127}$/.test(runId)) {
    throw new Error(
      `run id ${JSON.stringify(runId)} must be letters, digits, dot, dash or underscore`,
    );
  }
  return path.join(path.resolve(workRoot), runId);
}

export async function prepareWorkspace(options: PrepareWorkspaceOptions): Promise<Workspace> {
  const runDir = runDirFor(options.workRoot, options.runId);
  const treeDir = path.join(runDir, 'tree');
  await mkdir(path.dirname(runDir), { recursive: true });
  // Not recursive: a second run with the same id must not adopt (and later delete) the first's.
  await mkdir(runDir).catch((error: NodeJS.ErrnoException) => {
    throw error.code === 'EEXIST'
      ? new CloneError(`run directory ${runDir} already exists`)
      : error;
  });
  await writeFile(
    path.join(runDir, RUN_MARKER),
    JSON.stringify({
      runId: options.runId,
      pid: process.pid,
      owner: currentProcessId(),
      createdAt: new Date().toISOString(),
    }),
  );
  const dispose = () => rm(runDir, { recursive: true, force: true });
  try {
    const source = await resolveSource(options.repo);
    const credential = (await options.getCredential?.()) ?? source.embedded;
    const secrets = credential ? [credential.password, basicCredential(credential)] : [];
    for (const s of secrets) registerSecret(s);
    // git's HOME: empty, so nothing of the operator's (~/.gitconfig, ~/.config/git/*) is read.
    const home = path.join(runDir, 'git-home');
    await mkdir(home);
    const env = gitEnv(options.env ?? process.env, source.url, credential, home);
    const git = (baseDir: string): SimpleGit => makeGit(baseDir, env, options.signal);
    const fail = (what: string, error: unknown): never => {
      throw new CloneError(`${what}: ${scrub(oneLine(error), secrets)}`);
    };

    const mirrorDir = path.join(path.resolve(options.cacheDir), 'mirrors', mirrorName(source));
    await mkdir(path.dirname(mirrorDir), { recursive: true });
    let reused = false;
    let baseCommit = '';
    let originCommit = '';
    await withLock(
      `${mirrorDir}.lock`,
      options.lockTimeoutMs ?? DEFAULT_LOCK_TIMEOUT_MS,
      options.signal,
      async () => {
        reused = await isMirror(mirrorDir);
        if (reused) {
          options.log?.info(
            { runId: options.runId, repo: source.display },
            'fetching cached mirror',
          );
          await git(mirrorDir)
            .raw(['fetch', '--prune', '--quiet', 'origin'])
            .catch((e: unknown) => fail(`cannot fetch ${source.display}`, e));
        } else {
          options.log?.info({ runId: options.runId, repo: source.display }, 'cloning mirror');
          // Clone next to the final place and rename, so an interrupted clone never looks valid.
          const partial = `${mirrorDir}.partial-${process.pid}`;
          await rm(partial, { recursive: true, force: true });
          await git(path.dirname(mirrorDir))
            .raw(['clone', '--mirror', '--quiet', '--', source.url, partial])
            .catch(async (e: unknown) => {
              await rm(partial, { recursive: true, force: true });
              return fail(`cannot clone ${source.display}`, e);
            });
          await rm(mirrorDir, { recursive: true, force: true });
          await rename(partial, mirrorDir);
        }
        baseCommit = await resolveRevision(git(mirrorDir), options.revision, source, fail);
        originCommit =
          options.baseRevision === undefined
            ? baseCommit
            : await mergeBase(git(mirrorDir), options.baseRevision, baseCommit, source, fail);
      },
    );

    // A full copy (not hardlinks) so nothing done to the run's tree can reach the mirror.
    await git(runDir)
      .raw(['clone', '--no-checkout', '--no-hardlinks', '--quiet', '--', mirrorDir, treeDir])
      .catch((e: unknown) => fail('cannot create the working clone', e));
    const tree = git(treeDir);
    const commits: Commits = { tree, raw: { dir: treeDir, env }, runDir, baseCommit, originCommit };
    await tree
      .raw(['checkout', '--quiet', '--detach', originCommit])
      .catch((e: unknown) => fail(`cannot check out ${originCommit}`, e));
    // The sandbox gets this .git: no host paths, no URLs, no credentials in it.
    await tree
      .raw(['remote', 'remove', 'origin'])
      .catch((e: unknown) => fail('cannot prepare the working clone', e));
    // Branch names live in the mirror (the working clone keeps only the objects).
    const inMirror = (revision: string) =>
      revision.startsWith('-') ? Promise.resolve(undefined) : revParse(git(mirrorDir), revision);
    return {
      runDir,
      treeDir,
      baseCommit,
      originCommit,
      mirror: { dir: mirrorDir, reused },
      changesFromPatch: (patch, opts) => readChanges(commits, patch, opts?.setAside),
      previousChanges: (opts) => readChanges(commits, undefined, opts.setAside),
      diffFrom: async (base) => {
        const from = await inMirror(base);
        if (!from) throw new CloneError(`the diff base ${base} is not in the repository`);
        // Three dots: the change since the branch left the base, however far the base moved on.
        return tree.raw([
          'diff',
          '--no-ext-diff',
          '--no-textconv',
          '--no-color',
          `${from}...${baseCommit}`,
        ]);
      },
      readFiles: async (paths, opts) => {
        const at = opts.revision === undefined ? baseCommit : await inMirror(opts.revision);
        if (!at) throw new CloneError(`the revision ${opts.revision} is not in the repository`);
        return readTreeFiles({ dir: treeDir, env }, at, paths, opts.maxBytes);
      },
      dispose: () => dispose(),
    };
  } catch (error) {
    await dispose();
    throw error;
  }
}

interface Commits {
  tree: SimpleGit;
  raw: { dir: string; env: Record<string, string> };
  runDir: string;
  baseCommit: string;
  originCommit: string;
}

/** `changesFromPatch` with a patch, `previousChanges` without one (see Workspace). */
async function readChanges(
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

function gitWithInput(
  repo: { dir: string; env: Record<string, string> },
  args: string[],
  input: Buffer,
): Promise<Buffer> {
  return new Promise((resolve, reject) => {
    const child = spawn('git', args, {
      cwd: repo.dir,
      env: repo.env,
      stdio: ['pipe', 'pipe', 'pipe'],
    });
    const out: Buffer[] = [];
    const err: Buffer[] = [];
    child.stdout.on('data', (b: Buffer) => out.push(b));
    child.stderr.on('data', (b: Buffer) => err.push(b));
    child.on('error', reject);
    child.on('close', (code) => {
      if (code === 0) resolve(Buffer.concat(out));
      else
        reject(
          new CloneError(
            `git ${args[0]} failed: ${Buffer.concat(err).toString('utf8').trim().split('\n')[0] ?? ''}`,
          ),
        );
    });
    child.stdin.on('error', () => undefined);
    child.stdin.end(input);
  });
}

async function resolveRevision(
  git: SimpleGit,
  revision: string | undefined,
  source: Source,
  fail: (what: string, e: unknown) => never,
): Promise<string> {
  if (revision === undefined || revision === '') {
    // The remote's HEAD now (the mirror's own HEAD is only set at clone time).
    const out = await git
      .raw(['ls-remote', '--', 'origin', 'HEAD'])
      .catch((e: unknown) => fail(`cannot read HEAD of ${source.display}`, e));
    const sha = /^([0-9a-f]{40,64})\tHEAD$/m.exec(out)?.[1];
    if (!sha) throw new CloneError(`${source.display} has no HEAD (an empty repository?)`);
    if (await commitExists(git, sha)) return sha;
    await git
      .raw(['fetch', '--quiet', 'origin', sha])
      .catch((e: unknown) => fail(`cannot fetch HEAD of ${source.display}`, e));
    return sha;
  }
  if (revision.startsWith('-') || /[\s\0~^:?*[\\]/.test(revision.replace(/\^\{commit\}$/, ''))) {
    throw new CloneError(
      `revision ${JSON.stringify(revision)} is not a valid commit, branch or tag name`,
    );
  }
  const found = await revParse(git, revision);
  if (found) return found;
  if (/^[0-9a-f]{7,64}$/i.test(revision)) {
    // A commit no branch points at (e.g. a fork's pull request head) can still be fetched.
    await git.raw(['fetch', '--quiet', 'origin', revision]).catch(() => undefined);
    const fetched = await revParse(git, revision);
    if (fetched) return fetched;
  }
  throw new CloneError(`revision ${revision} not found in ${source.display}`);
}

/**
 * A follow-up's origin: where `baseRevision` and the run's commit part (the commit the previous
 * attempts started from, however far the base branch moved on since).
 */
async function mergeBase(
  git: SimpleGit,
  baseRevision: string,
  baseCommit: string,
  source: Source,
  fail: (what: string, e: unknown) => never,
): Promise<string> {
  const base = await resolveRevision(git, baseRevision, source, fail).catch(() => {
    throw new CloneError(`the diff base ${baseRevision} is not in the repository`);
  });
  const sha = (await git.raw(['merge-base', base, baseCommit]).catch(() => '')).trim();
  if (!/^[0-9a-f]{40,64}$/.test(sha))
    throw new CloneError(`the diff base ${baseRevision} shares no history with ${baseCommit}`);
  return sha;
}

async function revParse(git: SimpleGit, revision: string): Promise<string | undefined> {
  const out = await git
    .raw(['rev-parse', '--verify', '--quiet', '--end-of-options', `${revision}^{commit}`])
    .catch(() => '');
  const sha = out.trim();
  return /^[0-9a-f]{40,64}$/.test(sha) ? sha : undefined;
}

async function commitExists(git: SimpleGit, sha: string): Promise<boolean> {
  return (await revParse(git, sha)) === sha;
}

async function resolveSource(repo: string): Promise<Source> {
  const trimmed = repo.trim();
  if (/^[a-z][a-z0-9+.-]*:\/\//i.test(trimmed)) {
    const url = new URL(trimmed);
    let embedded: Source['embedded'];
    if (url.username || url.password) {
      embedded = {
        username: decodeURIComponent(url.username),
        password: decodeURIComponent(url.password),
      };
      url.username = '';
      url.password = '';
    }
    const clean = url.toString();
    return {
      url: clean,
      key: clean.replace(/\/+$/, '').replace(/\.git$/, ''),
      display: clean,
      embedded,
    };
  }
  if (/^[\w.-]+@[\w.-]+:/.test(trimmed))
    return { url: trimmed, key: trimmed.replace(/\.git$/, ''), display: trimmed };
  const dir = path.resolve(trimmed);
  const info = await stat(dir).catch(() => undefined);
  if (!info?.isDirectory()) {
    throw new CloneError(`${repo} is neither a clone URL nor a local directory`);
  }
  return { url: dir, key: `local:${dir}`, display: dir };
}

function mirrorName(source: Source): string {
  const base = (source.key.split(/[/:]/).filter(Boolean).pop() ?? 'repo')
    .replace(/[^A-Za-z0-9._-]/g, '_')
    .slice(0, 40);
  const hash = createHash('sha256').update(source.key).digest('hex').slice(0, 16);
  return `${base}-${hash}.git`;
}

async function isMirror(dir: string): Promise<boolean> {
  try {
    return (await readFile(path.join(dir, 'config'), 'utf8')).includes('mirror = true');
  } catch {
    return false;
  }
}

/** The environment for this workspace's git commands: see host-git-env.ts. */
export function gitEnv(
  base: NodeJS.ProcessEnv,
  url: string,
  credential: { username: string; password: string } | undefined,
  home: string,
): Record<string, string> {
  return hostGitEnv({ base, home, url, credential });
}

function makeGit(baseDir: string, env: Record<string, string>, signal?: AbortSignal): SimpleGit {
  return simpleGit({
    baseDir,
    timeout: { block: GIT_SILENCE_TIMEOUT_MS },
    ...(signal ? { abort: signal } : {}),
    // simple-git refuses these by default because callers could pass them from untrusted
    // input; here they are our own fixed defences (hooks and fsmonitor switched OFF, in the
    // environment) and the credential channel.
    unsafe: {
      allowUnsafeHooksPath: true,
      allowUnsafeFsMonitor: true,
      allowUnsafeConfigEnvCount: true,
      // GIT_CONFIG_GLOBAL=/dev/null, credential.helper= (none) and protocol.ext.allow=never:
      // settings that switch things OFF.
      allowUnsafeConfigPaths: true,
      allowUnsafeCredentialHelper: true,
      allowUnsafeProtocolOverride: true,
    },
  }).env(env);
}

/** A directory lock shared by every process on this host; a dead holder's lock is taken over. */
async function withLock<T>(
  lockDir: string,
  timeoutMs: number,
  signal: AbortSignal | undefined,
  fn: () => Promise<T>,
): Promise<T> {
  const deadline = Date.now() + timeoutMs;
  const owner = `${process.pid} ${Math.random().toString(36).slice(2)}`;
  for (;;) {
    signal?.throwIfAborted();
    try {
      await mkdir(lockDir);
      await writeFile(path.join(lockDir, 'owner'), owner);
      break;
    } catch (error) {
      if ((error as NodeJS.ErrnoException).code !== 'EEXIST') throw error;
    }
    const holder = await readFile(path.join(lockDir, 'owner'), 'utf8').catch(() => '');
    const pid = Number(holder.split(' ')[0]);
    if (holder && !isAlive(pid)) {
      await rm(lockDir, { recursive: true, force: true });
      continue;
    }
    if (Date.now() > deadline)
      throw new CloneError(`timed out waiting for the mirror lock ${lockDir}`);
    await new Promise((resolve) => setTimeout(resolve, 100));
  }
  try {
    return await fn();
  } finally {
    const holder = await readFile(path.join(lockDir, 'owner'), 'utf8').catch(() => '');
    if (holder === owner) await rm(lockDir, { recursive: true, force: true });
  }
}

function isAlive(pid: number): boolean {
  if (!Number.isInteger(pid) || pid <= 0) return false;
  try {
    process.kill(pid, 0);
    return true;
  } catch (error) {
    return (error as NodeJS.ErrnoException).code === 'EPERM';
  }
}

function oneLine(error: unknown): string {
  const text = error instanceof Error ? error.message : String(error);
  const lines = text
    .split('\n')
    .map((l) => l.trim())
    .filter((l) => l !== '');
  // git's last `fatal:` line is the one that says what went wrong.
  return lines.filter((l) => /^(fatal|error):/.test(l)).pop() ?? lines[0] ?? 'unknown error';
}

/** Removes the credential in any form from a message. */
export function scrub(text: string, secrets: readonly string[]): string {
  let out = text.replace(/(\/\/)[^/@\s]+@/g, '$1');
  for (const s of secrets) if (s) out = out.split(s).join('***');
  return out;
}
