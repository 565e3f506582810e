// Host-side git: a cached bare mirror per repository, and a fresh working clone per run.
// Host git only ever runs in the mirror and in the run's clone BEFORE the tree is copied
// into the sandbox; the sandbox's copy (and its .git) is never touched by host git.
// Credentials travel only through the child's environment, scoped to the remote's origin.
import { createHash } from 'node:crypto';
import { mkdir, readFile, rename, rm, stat, writeFile } from 'node:fs/promises';
import path from 'node:path';
import { simpleGit, type SimpleGit } from 'simple-git';
import type { Logger } from 'pino';
import { basicCredential, gitAuthHeader } from './git-auth-header.js';
import { registerSecret } from '../redact.js';
import type { CredentialProvider } from './run-types.js';
import { currentProcessId } from '../sandbox/owner.js';

/** Marks a directory under the work root as a run's, so the reaper only removes ours. */
export const RUN_MARKER = '.frognano-run.json';

// Defences for every host git command: no hooks, no fsmonitor (a repository's config could
// name a program), no LFS downloads, and no interactive prompt that would hang a worker.
export const HOST_GIT_CONFIG: readonly string[] = Object.freeze([
  'core.hooksPath=/dev/null',
  'core.fsmonitor=false',
  'advice.detachedHead=false',
  'init.defaultBranch=main',
]);

// The host environment variables git may see; everything else (EDITOR, PAGER, GIT_SSH_COMMAND,
// GIT_TRACE which would print headers, tokens of other tools) stays out.
const PASSED_ENV = [
  'PATH',
  'HOME',
  'LANG',
  'LC_ALL',
  'TMPDIR',
  'SSH_AUTH_SOCK',
  'http_proxy',
  'https_proxy',
  'no_proxy',
  'HTTP_PROXY',
  'HTTPS_PROXY',
  'NO_PROXY',
];

const DEFAULT_LOCK_TIMEOUT_MS = 10 * 60_000;
// Kill a git command that has printed nothing for this long (a hung remote).
const GIT_SILENCE_TIMEOUT_MS = 5 * 60_000;

export interface PrepareWorkspaceOptions {
  runId: string;
  /** A local directory (a git repository) or a clone URL (https://, file://, ssh). */
  repo: string;
  /** Commit, branch or tag; default: the remote's HEAD. */
  revision?: string;
  getCredential?: CredentialProvider;
  /** Mirrors live in `<cacheDir>/mirrors`. */
  cacheDir: string;
  /** The run's directory is `<workRoot>/<runId>`. */
  workRoot: string;
  signal?: AbortSignal;
  log?: Logger;
  lockTimeoutMs?: number;
  /** Environment to take PATH, HOME and proxies from (default process.env). */
  env?: NodeJS.ProcessEnv;
}

export interface Workspace {
  /** `<workRoot>/<runId>`: everything of this run on the host. */
  runDir: string;
  /** The working clone at `baseCommit` (with its .git), ready to copy into a sandbox. */
  treeDir: string;
  baseCommit: string;
  /** Whether the mirror already existed (fetched) or was cloned now. */
  mirror: { dir: string; reused: boolean };
  /**
   * What `git apply --index` (as publishing runs it) changes when the patch is applied to this
   * clean clone at `baseCommit`: git's own reading of the untrusted patch text, for the policy.
   * The clone is reset afterwards. Throws when the patch does not apply.
   */
  changesFromPatch(patch: string): Promise<AppliedChange[]>;
  /** Removes the run directory. Idempotent. */
  dispose(): Promise<void>;
}

/** One entry of `git diff --cached --raw --no-renames`: modes as octal text. */
export interface AppliedChange {
  path: string;
  oldMode: string;
  newMode: string;
  status: string;
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
    const env = gitEnv(options.env ?? process.env, source.url, credential);
    const git = (baseDir: string): SimpleGit => makeGit(baseDir, env, options.signal);
    const fail = (what: string, error: unknown): never => {
      throw new CloneError(`${what}: ${scrub(oneLine(error), secrets)}`);
    };

    const mirrorDir = path.join(path.resolve(options.cacheDir), 'mirrors', mirrorName(source));
    await mkdir(path.dirname(mirrorDir), { recursive: true });
    let reused = false;
    let baseCommit = '';
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
      },
    );

    // A full copy (not hardlinks) so nothing done to the run's tree can reach the mirror.
    await git(runDir)
      .raw(['clone', '--no-checkout', '--no-hardlinks', '--quiet', '--', mirrorDir, treeDir])
      .catch((e: unknown) => fail('cannot create the working clone', e));
    const tree = git(treeDir);
    await tree
      .raw(['checkout', '--quiet', '--detach', baseCommit])
      .catch((e: unknown) => fail(`cannot check out ${baseCommit}`, e));
    // The sandbox gets this .git: no host paths, no URLs, no credentials in it.
    await tree
      .raw(['remote', 'remove', 'origin'])
      .catch((e: unknown) => fail('cannot prepare the working clone', e));
    return {
      runDir,
      treeDir,
      baseCommit,
      mirror: { dir: mirrorDir, reused },
      changesFromPatch: (patch) => changesFromPatch(tree, runDir, baseCommit, patch),
      dispose: () => dispose(),
    };
  } catch (error) {
    await dispose();
    throw error;
  }
}

async function changesFromPatch(
  tree: SimpleGit,
  runDir: string,
  baseCommit: string,
  patch: string,
): Promise<AppliedChange[]> {
  const file = path.join(runDir, 'policy-check.patch');
  // Byte for byte what publishing applies (it adds a final newline when missing).
  await writeFile(file, patch.endsWith('\n') ? patch : `${patch}\n`);
  try {
    await tree.raw(['apply', '--index', '--whitespace=nowarn', file]);
    const raw = await tree.raw(['diff', '--cached', '--raw', '-z', '--no-renames', '--no-abbrev']);
    const fields = raw.split('\0');
    const changes: AppliedChange[] = [];
    for (let i = 0; i + 1 < fields.length; i += 2) {
      const meta = /^:(\d{6}) (\d{6}) [0-9a-f]+ [0-9a-f]+ ([A-Z])/.exec(fields[i] ?? '');
      if (!meta) throw new CloneError(`unexpected git diff --raw output: ${fields[i]}`);
      changes.push({
        path: fields[i + 1] ?? '',
        oldMode: meta[1]!,
        newMode: meta[2]!,
        status: meta[3]!,
      });
    }
    return changes;
  } finally {
    await tree.raw(['reset', '-q', '--hard', baseCommit]).catch(() => undefined);
    await tree.raw(['clean', '-q', '-f', '-d', '-x']).catch(() => undefined);
    await rm(file, { force: true });
  }
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

/**
 * The environment for a host git command. The credential, if any, becomes an
 * `http.<origin>/.extraHeader` through GIT_CONFIG_COUNT/KEY/VALUE: never argv, never a
 * config file, and only sent to the remote's own origin.
 */
export function gitEnv(
  base: NodeJS.ProcessEnv,
  url: string,
  credential?: { username: string; password: string },
): Record<string, string> {
  const env: Record<string, string> = { GIT_TERMINAL_PROMPT: '0', GIT_LFS_SKIP_SMUDGE: '1' };
  for (const key of PASSED_ENV) {
    const value = base[key];
    if (value !== undefined) env[key] = value;
  }
  const header = gitAuthHeader(url, credential);
  if (header) {
    env.GIT_CONFIG_COUNT = '1';
    [env.GIT_CONFIG_KEY_0, env.GIT_CONFIG_VALUE_0] = header;
  }
  return env;
}

function makeGit(baseDir: string, env: Record<string, string>, signal?: AbortSignal): SimpleGit {
  return simpleGit({
    baseDir,
    config: [...HOST_GIT_CONFIG],
    timeout: { block: GIT_SILENCE_TIMEOUT_MS },
    ...(signal ? { abort: signal } : {}),
    // simple-git refuses these by default because callers could pass them from untrusted
    // input; here they are our own fixed defences (hooks and fsmonitor switched OFF) and
    // the credential channel.
    unsafe: {
      allowUnsafeHooksPath: true,
      allowUnsafeFsMonitor: true,
      allowUnsafeConfigEnvCount: true,
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
