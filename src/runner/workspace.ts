// Host-side git: a cached bare mirror per repository, and a fresh working clone per run.
// Host git only ever runs in the mirror and in the run's clone BEFORE the tree is copied
// into the sandbox; the sandbox's copy (and its .git) is never touched by host git.
// Credentials travel only through the child's environment, scoped to the remote's origin.
import { mkdir, rename, rm, writeFile } from 'node:fs/promises';
import path from 'node:path';
import type { SimpleGit } from 'simple-git';
import type { Logger } from 'pino';
import { CloneError } from './clone-error.js';
import { basicCredential } from './git-auth-header.js';
import { resolveRevision, mergeBase, revParse } from './git-revisions.js';
import { isMirror, mirrorName, resolveSource, type Source } from './git-source.js';
import { gitEnv, gitErrorLine, makeGit, scrub } from './host-git.js';
import { DEFAULT_LOCK_TIMEOUT_MS, withLock } from './mirror-lock.js';
import {
  readChanges,
  type AppliedChange,
  type AppliedPatch,
  type Commits,
} from './patch-changes.js';
import { registerSecret } from '../redact.js';
import type { CredentialProvider } from './run-types.js';
import { readTreeFiles, type TreeFile } from './tree-files.js';
import { currentProcessId } from '../sandbox/owner.js';
import { RUN_MARKER } from '../sandbox/run-marker.js';

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
  await makeRunDir(runDir, options.runId);
  const dispose = () => rm(runDir, { recursive: true, force: true });
  try {
    const source = await resolveSource(options.repo);
    const git = await gitFor(options, source, runDir);
    const mirror = await syncMirror(options, source, git);
    const tree = await workingClone(git, mirror, runDir, treeDir);
    return workspaceOf({ ...tree, runDir, treeDir, mirror, git, dispose });
  } catch (error) {
    await dispose();
    throw error;
  }
}

/** The run's directory, new (never a second run's with the same id), with its marker. */
async function makeRunDir(runDir: string, runId: string): Promise<void> {
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
      runId,
      pid: process.pid,
      owner: currentProcessId(),
      createdAt: new Date().toISOString(),
    }),
  );
}

/** Host git for this run: its environment (the credential in it), and failures as CloneError. */
interface RunGit {
  env: Record<string, string>;
  at(baseDir: string): SimpleGit;
  fail(what: string, error: unknown): never;
}

async function gitFor(
  options: PrepareWorkspaceOptions,
  source: Source,
  runDir: string,
): Promise<RunGit> {
  const credential = (await options.getCredential?.()) ?? source.embedded;
  const secrets = credential ? [credential.password, basicCredential(credential)] : [];
  for (const s of secrets) registerSecret(s);
  // git's HOME: empty, so nothing of the operator's (~/.gitconfig, ~/.config/git/*) is read.
  const home = path.join(runDir, 'git-home');
  await mkdir(home);
  const env = gitEnv(options.env ?? process.env, source.url, credential, home);
  return {
    env,
    at: (baseDir) => makeGit(baseDir, env, options.signal),
    fail: (what, error) => {
      throw new CloneError(`${what}: ${scrub(gitErrorLine(error), secrets)}`);
    },
  };
}

interface Mirror {
  dir: string;
  reused: boolean;
  baseCommit: string;
  originCommit: string;
}

/** The cached mirror, fetched (or cloned), and the run's commits read from it, under its lock. */
async function syncMirror(
  options: PrepareWorkspaceOptions,
  source: Source,
  git: RunGit,
): Promise<Mirror> {
  const dir = path.join(path.resolve(options.cacheDir), 'mirrors', mirrorName(source));
  await mkdir(path.dirname(dir), { recursive: true });
  const timeoutMs = options.lockTimeoutMs ?? DEFAULT_LOCK_TIMEOUT_MS;
  return withLock(`${dir}.lock`, timeoutMs, options.signal, async () => {
    const reused = await isMirror(dir);
    const shown = { runId: options.runId, repo: source.display };
    if (reused) {
      options.log?.info(shown, 'fetching cached mirror');
      await git
        .at(dir)
        .raw(['fetch', '--prune', '--quiet', 'origin'])
        .catch((e: unknown) => git.fail(`cannot fetch ${source.display}`, e));
    } else {
      options.log?.info(shown, 'cloning mirror');
      await cloneMirror(git, source, dir);
    }
    const baseCommit = await resolveRevision(git.at(dir), options.revision, source, git.fail);
    const originCommit =
      options.baseRevision === undefined
        ? baseCommit
        : await mergeBase(git.at(dir), options.baseRevision, baseCommit, source, git.fail);
    return { dir, reused, baseCommit, originCommit };
  });
}

/** Clones next to the final place and renames, so an interrupted clone never looks valid. */
async function cloneMirror(git: RunGit, source: Source, mirrorDir: string): Promise<void> {
  const partial = `${mirrorDir}.partial-${process.pid}`;
  await rm(partial, { recursive: true, force: true });
  await git
    .at(path.dirname(mirrorDir))
    .raw(['clone', '--mirror', '--quiet', '--', source.url, partial])
    .catch(async (e: unknown) => {
      await rm(partial, { recursive: true, force: true });
      return git.fail(`cannot clone ${source.display}`, e);
    });
  await rm(mirrorDir, { recursive: true, force: true });
  await rename(partial, mirrorDir);
}

/** The run's working clone at the origin commit, with no remote (the sandbox gets its .git). */
async function workingClone(
  git: RunGit,
  mirror: Mirror,
  runDir: string,
  treeDir: string,
): Promise<{ tree: SimpleGit; commits: Commits }> {
  // A full copy (not hardlinks) so nothing done to the run's tree can reach the mirror.
  await git
    .at(runDir)
    .raw(['clone', '--no-checkout', '--no-hardlinks', '--quiet', '--', mirror.dir, treeDir])
    .catch((e: unknown) => git.fail('cannot create the working clone', e));
  const tree = git.at(treeDir);
  const { baseCommit, originCommit } = mirror;
  const commits: Commits = {
    tree,
    raw: { dir: treeDir, env: git.env },
    runDir,
    baseCommit,
    originCommit,
  };
  await tree
    .raw(['checkout', '--quiet', '--detach', originCommit])
    .catch((e: unknown) => git.fail(`cannot check out ${originCommit}`, e));
  // The sandbox gets this .git: no host paths, no URLs, no credentials in it.
  await tree
    .raw(['remote', 'remove', 'origin'])
    .catch((e: unknown) => git.fail('cannot prepare the working clone', e));
  return { tree, commits };
}

function workspaceOf(at: {
  runDir: string;
  treeDir: string;
  mirror: Mirror;
  git: RunGit;
  tree: SimpleGit;
  commits: Commits;
  dispose: () => Promise<void>;
}): Workspace {
  const { runDir, treeDir, mirror, git, tree, commits, dispose } = at;
  const { baseCommit, originCommit } = mirror;
  // Branch names live in the mirror (the working clone keeps only the objects).
  const inMirror = (revision: string) =>
    revision.startsWith('-') ? Promise.resolve(undefined) : revParse(git.at(mirror.dir), revision);
  return {
    runDir,
    treeDir,
    baseCommit,
    originCommit,
    mirror: { dir: mirror.dir, reused: mirror.reused },
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
      return readTreeFiles({ dir: treeDir, env: git.env }, at, paths, opts.maxBytes);
    },
    dispose: () => dispose(),
  };
}
