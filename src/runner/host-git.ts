// Running host git for a workspace: simple-git with the fixed defences switched on, git with
// bytes on stdin, and its messages cut to one line without the credential.
import { spawn } from 'node:child_process';
import { simpleGit, type SimpleGit } from 'simple-git';
import { CloneError } from './clone-error.js';
import { hostGitEnv } from './host-git-env.js';

// Kill a git command that has printed nothing for this long (a hung remote).
const GIT_SILENCE_TIMEOUT_MS = 5 * 60_000;

/** The environment for this workspace's git commands: see host-git-env.ts. */
export function gitEnv(
  base: NodeJS.ProcessEnv,
  url: string,
  credential: { username: string; password: string } | undefined,
  home: string,
): Record<string, string> {
  return hostGitEnv({ base, home, url, credential });
}

export function makeGit(
  baseDir: string,
  env: Record<string, string>,
  signal?: AbortSignal,
): SimpleGit {
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

export function gitWithInput(
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

/** The line of a failed git command's error that says what went wrong. */
export function gitErrorLine(error: unknown): string {
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
