// The git side of publishing: git run with the publishing environment (the token only as an
// HTTP header, runner/host-git-env.ts), commands that talk to the remote retried after a
// backoff when the server or the network failed, and the temporary directory it all runs in.
import { spawn } from 'node:child_process';
import { mkdtemp, mkdir } from 'node:fs/promises';
import { join } from 'node:path';
import { redactSecrets } from '../../redact.js';
import { hostGitEnv } from '../../runner/host-git-env.js';

export interface GitResult {
  code: number;
  stdout: string;
  stderr: string;
}

export type GitRunner = (
  args: string[],
  options: { cwd: string; env: NodeJS.ProcessEnv },
) => Promise<GitResult>;

export const runGit: GitRunner = (args, options) =>
  new Promise((resolvePromise, reject) => {
    const child = spawn('git', args, {
      cwd: options.cwd,
      env: options.env,
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    const out: Buffer[] = [];
    const err: Buffer[] = [];
    child.stdout.on('data', (b: Buffer) => out.push(b));
    child.stderr.on('data', (b: Buffer) => err.push(b));
    child.on('error', reject);
    child.on('close', (code) =>
      resolvePromise({
        code: code ?? 1,
        stdout: Buffer.concat(out).toString('utf8'),
        stderr: Buffer.concat(err).toString('utf8'),
      }),
    );
  });

/** Backoff between attempts of a network git command that failed transiently. */
export const GIT_RETRY_DELAYS_MS = [1000, 3000, 9000];

/** git's words for a failure worth another attempt: the server or the network, not us. */
export const TRANSIENT_GIT_FAILURE =
  /(RPC failed|returned error: 5\d\d|HTTP 5\d\d|Could not resolve host|Connection (reset|refused|timed out)|Operation timed out|early EOF|unexpected disconnect|hung up unexpectedly)/i;

export class PublishError extends Error {
  /** The server or the network failed (and kept failing): trying later may work. */
  readonly transient: boolean;
  constructor(message: string, options: { transient?: boolean } = {}) {
    super(message);
    this.name = 'PublishError';
    this.transient = options.transient ?? false;
  }
}

/**
 * The environment every git command runs with (runner/host-git-env.ts, shared by every host git
 * call): no system or global config, an empty HOME, hooks disabled, no prompts, and - for
 * http(s) remotes - the token as an Authorization header scoped to the remote's origin.
 */
export function gitEnvironment(home: string, gitUrl: string, token?: string): NodeJS.ProcessEnv {
  return hostGitEnv({
    home,
    url: gitUrl,
    credential: token ? { username: 'x-access-token', password: token } : undefined,
  });
}

/** A temporary clone's directory under `workRoot`, with its work tree and empty HOME. */
export async function makePublishDir(
  workRoot: string,
  prefix: string,
): Promise<{ dir: string; tree: string; home: string }> {
  await mkdir(workRoot, { recursive: true });
  const dir = await mkdtemp(join(workRoot, prefix));
  const tree = join(dir, 'tree');
  const home = join(dir, 'home');
  await mkdir(tree);
  await mkdir(home);
  return { dir, tree, home };
}

/** A failed git command as a PublishError, its output redacted and cut to its end. */
export function gitFailure(what: string, r: GitResult, transient = false): PublishError {
  return new PublishError(
    `${what} failed: ${redactSecrets(r.stderr.trim() || r.stdout.trim()).slice(-2000)}`,
    { transient },
  );
}

export interface GitCommands {
  exec: (args: string[]) => Promise<GitResult>;
  /** A local command: its stdout, or a PublishError. */
  run: (args: string[], what: string) => Promise<string>;
  /**
   * A command that talks to the remote: a transient failure (the server's 5xx, a dropped
   * connection) is tried again after a backoff. `settled` may say the last attempt took
   * effect after all (a push applied before its answer was lost).
   */
  remote: (args: string[], what: string, settled?: () => Promise<boolean>) => Promise<string>;
}

export function gitCommands(o: {
  git: GitRunner;
  cwd: string;
  env: NodeJS.ProcessEnv;
  delays: number[];
  /** Before each new attempt: the caller's log line. */
  onRetry: (what: string, attempt: number, r: GitResult) => void;
}): GitCommands {
  const exec = (args: string[]) => o.git(args, { cwd: o.cwd, env: o.env });
  return {
    exec,
    async run(args, what) {
      const r = await exec(args);
      if (r.code !== 0) throw gitFailure(what, r);
      return r.stdout;
    },
    async remote(args, what, settled) {
      for (let attempt = 0; ; attempt++) {
        const r = await exec(args);
        if (r.code === 0) return r.stdout;
        const transient = TRANSIENT_GIT_FAILURE.test(`${r.stderr}\n${r.stdout}`);
        if (!transient || attempt >= o.delays.length) throw gitFailure(what, r, transient);
        o.onRetry(what, attempt + 1, r);
        await new Promise((resolve) => setTimeout(resolve, o.delays[attempt]));
        if (settled && (await settled())) return '';
      }
    },
  };
}

/** The head of `branch` on the remote ('' when it has none). */
export async function remoteBranchHead(
  cmds: GitCommands,
  gitUrl: string,
  branch: string,
  what: string,
): Promise<string> {
  const out = await cmds.remote(['ls-remote', gitUrl, `refs/heads/${branch}`], what);
  return out.split(/\s+/)[0] ?? '';
}
