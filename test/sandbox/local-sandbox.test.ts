// LocalSandbox: isolation of the copy, process groups, output caps, environment, cleanup.
import { execFileSync } from 'node:child_process';
import { existsSync, mkdtempSync, readFileSync, rmSync, symlinkSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { PythonError, SandboxFailure } from '../../src/leaf/sandbox.js';
import {
  createLocalSandbox,
  type LocalSandbox,
  pythonOSError,
} from '../../src/sandbox/local-sandbox.js';

let source: string;
const sandboxes: LocalSandbox[] = [];

async function sandbox(): Promise<LocalSandbox> {
  const sb = await createLocalSandbox({ sourceDir: source });
  sandboxes.push(sb);
  return sb;
}

function processGone(pid: number): boolean {
  try {
    process.kill(pid, 0);
  } catch {
    return true;
  }
  // A killed child of init may linger as a zombie until reaped: dead all the same.
  try {
    return /^State:\s+Z/m.test(readFileSync(`/proc/${pid}/status`, 'utf8'));
  } catch {
    return true;
  }
}

async function waitUntil(check: () => boolean): Promise<boolean> {
  for (let i = 0; i < 50; i++) {
    if (check()) return true;
    await new Promise((resolve) => setTimeout(resolve, 20));
  }
  return check();
}

beforeAll(() => {
  source = mkdtempSync(path.join(tmpdir(), 'frognano-local-src-'));
  const git = (...args: string[]) => execFileSync('git', args, { cwd: source, stdio: 'pipe' });
  git('init', '-q', '-b', 'main');
  writeFileSync(path.join(source, 'calc.py'), 'def add(a, b):\n    return a - b\n');
  git('add', '.');
  git('-c', 'user.name=t', '-c', 'user.email=t@example.com', 'commit', '-q', '-m', 'init');
});

afterEach(async () => {
  await Promise.all(sandboxes.splice(0).map((sb) => sb.dispose()));
});

afterAll(() => {
  rmSync(source, { recursive: true, force: true });
});

describe('createLocalSandbox', () => {
  it('works on a copy (with .git) and never touches the source', async () => {
    const sb = await sandbox();
    expect(sb.kind).toBe('local');
    expect(sb.workdir).not.toBe(source);
    const log = await sb.exec('git log --format=%s && git status --porcelain');
    expect(log.stdout.toString()).toBe('init\n');
    await sb.writeFile(`${sb.workdir}/calc.py`, Buffer.from('changed'));
    await sb.exec(
      'echo new > new.txt && git add -A && git -c user.name=t -c user.email=t@e commit -qm x',
    );
    expect(readFileSync(path.join(source, 'calc.py'), 'utf8')).toBe(
      'def add(a, b):\n    return a - b\n',
    );
    expect(existsSync(path.join(source, 'new.txt'))).toBe(false);
    expect(execFileSync('git', ['log', '--format=%s'], { cwd: source }).toString()).toBe('init\n');
  });

  it('keeps modes and symlinks verbatim and skips special files', async () => {
    const odd = mkdtempSync(path.join(tmpdir(), 'frognano-local-odd-'));
    try {
      writeFileSync(path.join(odd, 'run.sh'), '#!/bin/sh\necho ran\n', { mode: 0o755 });
      symlinkSync('/nonexistent/abs', path.join(odd, 'abs-link'));
      symlinkSync('run.sh', path.join(odd, 'rel-link'));
      execFileSync('mkfifo', [path.join(odd, 'fifo')]);
      const sb = await createLocalSandbox({ sourceDir: odd });
      sandboxes.push(sb);
      const result = await sb.exec('./rel-link; readlink abs-link; ls');
      expect(result.stdout.toString()).toBe('ran\n/nonexistent/abs\nabs-link\nrel-link\nrun.sh\n');
    } finally {
      rmSync(odd, { recursive: true, force: true });
    }
  });

  it('refuses a source that is not a directory', async () => {
    await expect(createLocalSandbox({ sourceDir: path.join(source, 'calc.py') })).rejects.toThrow(
      /sourceDir is not a directory/,
    );
  });
});

describe('exec', () => {
  it('passes stdin and runs in workdir or the given cwd', async () => {
    const sb = await sandbox();
    const result = await sb.exec('cat; pwd', { stdin: 'from stdin\n' });
    expect(result.stdout.toString()).toBe(`from stdin\n${sb.workdir}\n`);
    expect(result.exitCode).toBe(0);
    expect(result.timedOut).toBe(false);
    expect((await sb.exec('pwd', { cwd: sb.homeDir })).stdout.toString()).toBe(`${sb.homeDir}\n`);
  });

  it('gives commands a minimal environment without host secrets', async () => {
    const saved = process.env.GITHUB_TOKEN;
    process.env.GITHUB_TOKEN = 'ghs_secret_for_the_test';
    try {
      const sb = await sandbox();
      const env = (await sb.exec('env')).stdout.toString();
      expect(env).not.toContain('ghs_secret_for_the_test');
      expect(env).not.toMatch(/^GITHUB_TOKEN=/m);
      expect(env).toMatch(/^LANG=C\.UTF-8$/m);
      expect(env).toMatch(/^TERM=dumb$/m);
      expect(env).toContain(`HOME=${sb.homeDir}\n`);
      expect((await sb.exec('echo $EXTRA', { env: { EXTRA: 'yes' } })).stdout.toString()).toBe(
        'yes\n',
      );
    } finally {
      if (saved === undefined) delete process.env.GITHUB_TOKEN;
      else process.env.GITHUB_TOKEN = saved;
    }
  });

  it('caps each stream and counts the drained code points', async () => {
    const sb = await sandbox();
    // 'é' is 2 bytes: 5 kept bytes end inside the third one.
    const result = await sb.exec("printf 'éééé'; printf 'abcdef' >&2", { maxOutputBytes: 5 });
    expect(result.stdout).toEqual(Buffer.from('éééé').subarray(0, 5));
    expect(result.stdoutDroppedChars).toBe(1);
    expect(result.stderr.toString()).toBe('abcde');
    expect(result.stderrDroppedChars).toBe(1);
    const big = await sb.exec("head -c 5000000 /dev/zero | tr '\\0' x");
    expect(big.stdout.length).toBe(1024 * 1024);
    expect(big.stdoutDroppedChars).toBe(5000000 - 1024 * 1024);
  });

  it('reports a signal death as a negative exit code', async () => {
    const sb = await sandbox();
    expect((await sb.exec('kill -9 $$')).exitCode).toBe(-9);
    expect((await sb.exec('kill -INT $$')).exitCode).toBe(-2);
    expect((await sb.exec('exit 7')).exitCode).toBe(7);
  });

  it('kills the whole process group on timeout and keeps the output so far', async () => {
    const sb = await sandbox();
    const result = await sb.exec('echo $$; sleep 30 & echo $!; wait', { timeoutMs: 2000 });
    expect(result.timedOut).toBe(true);
    const [bash, child] = result.stdout.toString().trim().split('\n').map(Number);
    expect(bash).toBeGreaterThan(0);
    expect(await waitUntil(() => processGone(child as number))).toBe(true);
    expect(await waitUntil(() => processGone(bash as number))).toBe(true);
  });

  it('stops at the timeout even when a process outside the group holds the pipes', async () => {
    const sb = await sandbox();
    // The escaped sleep keeps stdout open for a minute: waiting for EOF would time the test out.
    const result = await sb.exec(
      "setsid sh -c 'echo $$ > ~/escaped.pid; exec sleep 60'; echo never",
      {
        timeoutMs: 300,
      },
    );
    expect(result.timedOut).toBe(true);
    expect(result.stdout.toString()).toBe('');
    const escaped = Number(readFileSync(path.join(sb.homeDir, 'escaped.pid'), 'utf8'));
    // It left the group, but it is still the command's: the timeout kills it too.
    await expect.poll(() => processGone(escaped), { timeout: 5000 }).toBe(true);
  });

  it('on timeout kills what the command started wherever it went: setsid, daemons, a timeout wrapper', async () => {
    const sb = await sandbox();
    const result = await sb.exec(
      [
        // Orphaned at once (double fork): no parent link left, only the environment marker.
        "(setsid sh -c 'echo $$ > ~/daemon.pid; exec sleep 61' > /dev/null 2>&1 &)",
        "setsid sh -c 'echo $$ > ~/setsid.pid; exec sleep 62' > /dev/null 2>&1 &",
        "timeout 1000 sh -c 'echo $$ > ~/wrapped.pid; exec sleep 63' > /dev/null 2>&1 &",
        'sleep 0.5; sleep 64',
      ].join('\n'),
      { timeoutMs: 1500 },
    );
    expect(result.timedOut).toBe(true);
    for (const name of ['daemon.pid', 'setsid.pid', 'wrapped.pid']) {
      const pid = Number(readFileSync(path.join(sb.homeDir, name), 'utf8'));
      await expect.poll(() => processGone(pid), { timeout: 5000 }).toBe(true);
    }
  });

  it('leaves a background process alone when the command ends by itself, until dispose', async () => {
    const sb = await sandbox();
    const result = await sb.exec(
      "setsid sh -c 'echo $$ > ~/server.pid; exec sleep 65' > /dev/null 2>&1 &",
    );
    expect(result.exitCode).toBe(0);
    await expect.poll(() => existsSync(path.join(sb.homeDir, 'server.pid'))).toBe(true);
    const pid = Number(readFileSync(path.join(sb.homeDir, 'server.pid'), 'utf8'));
    expect(processGone(pid)).toBe(false);
    // ... until the sandbox goes: dispose() finds it by the sandbox's marker.
    await sb.dispose();
    await expect.poll(() => processGone(pid), { timeout: 5000 }).toBe(true);
  });

  it('kills the group when the signal aborts', async () => {
    const sb = await sandbox();
    const controller = new AbortController();
    const pending = sb.exec('sleep 30', { signal: controller.signal });
    setTimeout(() => controller.abort(), 100);
    const result = await pending;
    expect(result.exitCode).toBe(-9);
    expect(result.timedOut).toBe(false);
  });
});

describe('files', () => {
  it('maps errno to the Python exception and message', async () => {
    const sb = await sandbox();
    await expect(sb.readFile(`${sb.workdir}/nope.txt`)).rejects.toMatchObject({
      pythonType: 'FileNotFoundError',
      message: `[Errno 2] No such file or directory: '${sb.workdir}/nope.txt'`,
    });
    await expect(sb.writeFile(`${sb.workdir}/calc.py/x`, Buffer.from('x'))).rejects.toMatchObject({
      pythonType: 'FileExistsError',
      message: `[Errno 17] File exists: '${sb.workdir}/calc.py'`,
    });
    const errors = [
      'EACCES',
      'EPERM',
      'ENOENT',
      'EISDIR',
      'ENOTDIR',
      'EEXIST',
      'ELOOP',
      'EROFS',
    ].map((code) =>
      pythonOSError(Object.assign(new Error(code), { code }), '/t/x').toObservation(),
    );
    expect(errors).toEqual([
      "PermissionError: [Errno 13] Permission denied: '/t/x'",
      "PermissionError: [Errno 1] Operation not permitted: '/t/x'",
      "FileNotFoundError: [Errno 2] No such file or directory: '/t/x'",
      "IsADirectoryError: [Errno 21] Is a directory: '/t/x'",
      "NotADirectoryError: [Errno 20] Not a directory: '/t/x'",
      "FileExistsError: [Errno 17] File exists: '/t/x'",
      "OSError: [Errno 40] Too many levels of symbolic links: '/t/x'",
      "OSError: [Errno 30] Read-only file system: '/t/x'",
    ]);
  });

  it('reports PermissionError for an unreadable file (needs a non-root user)', async ({ skip }) => {
    if (process.getuid?.() === 0) {
      console.warn('SKIPPING the PermissionError check: root reads any file');
      skip();
    }
    const sb = await sandbox();
    await sb.exec('echo secret > locked.txt && chmod 000 locked.txt');
    await expect(sb.readFile(`${sb.workdir}/locked.txt`)).rejects.toMatchObject({
      pythonType: 'PermissionError',
      message: `[Errno 13] Permission denied: '${sb.workdir}/locked.txt'`,
    });
  });

  it('reads special files without hanging or exhausting memory', async () => {
    const sb = await sandbox();
    await sb.exec('mkfifo fifo');
    expect((await sb.readFile('/dev/null')).data.length).toBe(0);
    expect((await sb.readFile(`${sb.workdir}/fifo`)).data.length).toBe(0);
    await expect(sb.readFile('/dev/zero')).rejects.toMatchObject({
      pythonType: 'MemoryError',
      message: '',
    });
    await expect(sb.readFile(sb.workdir)).rejects.toMatchObject({
      pythonType: 'IsADirectoryError',
      message: `[Errno 21] Is a directory: '${sb.workdir}'`,
    });
  });

  it('returns resolved paths, resolving as far as the path exists', async () => {
    const sb = await sandbox();
    await sb.exec('mkdir -p real/inner && ln -s real alias && echo x > real/inner/f');
    expect((await sb.readFile(`${sb.workdir}/alias/inner/f`)).realPath).toBe(
      `${sb.workdir}/real/inner/f`,
    );
    const written = await sb.writeFile(`${sb.workdir}/alias/new/deeper/g.txt`, Buffer.from('g'));
    expect(written.realPath).toBe(`${sb.workdir}/real/new/deeper/g.txt`);
    expect(await sb.glob(`${sb.workdir}/alias/**/*`)).toEqual(
      expect.arrayContaining([
        { path: `${sb.workdir}/alias/inner/f`, realPath: `${sb.workdir}/real/inner/f` },
      ]),
    );
  });
});

describe('dispose', () => {
  it('kills running and background processes, removes the temp dirs, and is idempotent', async () => {
    const sb = await createLocalSandbox({ sourceDir: source });
    const background = await sb.exec('sleep 30 >/dev/null 2>&1 & echo $!');
    const backgroundPid = Number(background.stdout.toString().trim());
    const running = sb.exec('sleep 30');
    await new Promise((resolve) => setTimeout(resolve, 100));
    expect(processGone(backgroundPid)).toBe(false);
    await Promise.all([sb.dispose(), sb.dispose()]);
    await sb.dispose();
    expect((await running).exitCode).toBe(-9);
    expect(await waitUntil(() => processGone(backgroundPid))).toBe(true);
    expect(existsSync(sb.tempDir)).toBe(false);
    expect(existsSync(sb.workdir)).toBe(false);
    await expect(sb.exec('true')).rejects.toBeInstanceOf(SandboxFailure);
  });

  it('removes a tree the command made read-only', async () => {
    const sb = await createLocalSandbox({ sourceDir: source });
    await sb.exec('mkdir -p ro/sub && touch ro/sub/f && chmod -R a-w ro');
    await sb.dispose();
    expect(existsSync(sb.tempDir)).toBe(false);
  });

  it('leaves null bytes to Python-style errors', async () => {
    const sb = await sandbox();
    await expect(sb.readFile(`${sb.workdir}/a\0b`)).rejects.toBeInstanceOf(PythonError);
    await expect(sb.exec('echo \0')).rejects.toMatchObject({
      pythonType: 'ValueError',
      message: 'embedded null byte',
    });
  });
});
