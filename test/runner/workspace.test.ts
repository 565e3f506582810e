import { execFileSync, spawn } from 'node:child_process';
import {
  chmodSync,
  existsSync,
  mkdtempSync,
  readFileSync,
  readdirSync,
  rmSync,
  writeFileSync,
  mkdirSync,
  symlinkSync,
} from 'node:fs';
import { createServer, type Server } from 'node:http';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { RUN_MARKER } from '../../src/sandbox/run-marker.js';
import { CloneError } from '../../src/runner/clone-error.js';
import { gitEnv } from '../../src/runner/host-git.js';
import { prepareWorkspace } from '../../src/runner/workspace.js';

const temps: string[] = [];
function temp(prefix: string): string {
  const dir = mkdtempSync(path.join(tmpdir(), prefix));
  temps.push(dir);
  return dir;
}
afterAll(() => {
  for (const d of temps) rmSync(d, { recursive: true, force: true });
});

const GIT_ENV = {
  ...process.env,
  GIT_CONFIG_GLOBAL: '/dev/null',
  GIT_AUTHOR_NAME: 't',
  GIT_AUTHOR_EMAIL: 't@example.invalid',
  GIT_COMMITTER_NAME: 't',
  GIT_COMMITTER_EMAIL: 't@example.invalid',
};
function git(cwd: string, ...args: string[]): string {
  return execFileSync('git', args, { cwd, encoding: 'utf8', env: GIT_ENV }).trim();
}

/** A bare "remote" with one commit on main; returns helpers to add commits through a work clone. */
function makeRemote(): { bare: string; commit: (file: string, text: string) => string } {
  const root = temp('ws-remote-');
  const bare = path.join(root, 'project.git');
  git(root, 'init', '-q', '--bare', '-b', 'main', bare);
  const work = path.join(root, 'work');
  git(root, 'clone', '-q', bare, work);
  git(work, 'checkout', '-q', '-b', 'main');
  const commit = (file: string, text: string) => {
    mkdirSync(path.dirname(path.join(work, file)), { recursive: true });
    writeFileSync(path.join(work, file), text);
    git(work, 'add', '-A');
    git(work, 'commit', '-q', '-m', `edit ${file}`);
    git(work, 'push', '-q', 'origin', 'HEAD:main');
    return git(work, 'rev-parse', 'HEAD');
  };
  commit('README.md', 'one\n');
  return { bare, commit };
}

function dirs() {
  const root = temp('ws-');
  return { cacheDir: path.join(root, 'cache'), workRoot: path.join(root, 'runs') };
}

describe('prepareWorkspace', () => {
  const disposers: (() => Promise<void>)[] = [];
  afterEach(async () => {
    for (const d of disposers.splice(0)) await d();
  });

  it('clones a file:// remote through a cached mirror, then fetches new commits on reuse', async () => {
    const { bare, commit } = makeRemote();
    const d = dirs();
    const first = await prepareWorkspace({ runId: 'r1', repo: `file://${bare}`, ...d });
    disposers.push(first.dispose);
    expect(first.mirror.reused).toBe(false);
    expect(first.baseCommit).toBe(git(bare, 'rev-parse', 'main'));
    expect(readFileSync(path.join(first.treeDir, 'README.md'), 'utf8')).toBe('one\n');
    expect(existsSync(path.join(first.runDir, RUN_MARKER))).toBe(true);
    expect(first.runDir).toBe(path.join(d.workRoot, 'r1'));

    const second = commit('src/app.py', 'print(2)\n');
    const again = await prepareWorkspace({ runId: 'r2', repo: `file://${bare}`, ...d });
    disposers.push(again.dispose);
    expect(again.mirror).toEqual({ dir: first.mirror.dir, reused: true });
    expect(again.baseCommit).toBe(second);
    expect(readFileSync(path.join(again.treeDir, 'src/app.py'), 'utf8')).toBe('print(2)\n');
    // The first run's tree is untouched by the second.
    expect(existsSync(path.join(first.treeDir, 'src/app.py'))).toBe(false);
    expect(readdirSync(path.join(d.cacheDir, 'mirrors'))).toEqual([
      path.basename(first.mirror.dir),
    ]);
  });

  it('checks out a requested branch, tag or commit, detached', async () => {
    const { bare, commit } = makeRemote();
    const old = git(bare, 'rev-parse', 'main');
    git(bare, 'tag', 'v1', old);
    git(bare, 'branch', 'feature', old);
    commit('x.txt', 'x\n');
    const d = dirs();
    for (const [i, revision] of ['v1', 'feature', old, old.slice(0, 10)].entries()) {
      const ws = await prepareWorkspace({ runId: `rev-${i}`, repo: bare, revision, ...d });
      disposers.push(ws.dispose);
      expect(ws.baseCommit).toBe(old);
      expect(git(ws.treeDir, 'rev-parse', 'HEAD')).toBe(old);
      expect(existsSync(path.join(ws.treeDir, 'x.txt'))).toBe(false);
    }
  });

  it('works from a local directory and leaves no host path or remote in the clone', async () => {
    const { bare } = makeRemote();
    const local = path.join(temp('ws-local-'), 'checkout');
    git(path.dirname(local), 'clone', '-q', bare, local);
    const ws = await prepareWorkspace({ runId: 'local', repo: local, ...dirs() });
    disposers.push(ws.dispose);
    expect(ws.baseCommit).toBe(git(local, 'rev-parse', 'HEAD'));
    const config = readFileSync(path.join(ws.treeDir, '.git/config'), 'utf8');
    expect(config).not.toContain(local);
    expect(config).not.toContain('[remote');
  });

  it('fails in one line for an unknown revision, a bad revision and a missing repository, and cleans up', async () => {
    const { bare } = makeRemote();
    const d = dirs();
    await expect(
      prepareWorkspace({ runId: 'a', repo: bare, revision: 'nope', ...d }),
    ).rejects.toThrow(new CloneError(`revision nope not found in ${bare}`));
    await expect(
      prepareWorkspace({ runId: 'b', repo: bare, revision: '--upload-pack=touch /tmp/x', ...d }),
    ).rejects.toThrow(/is not a valid commit, branch or tag name/);
    const missing = await prepareWorkspace({
      runId: 'c',
      repo: 'file:///nonexistent/repo.git',
      ...d,
    }).catch((e: Error) => e);
    expect(missing).toBeInstanceOf(CloneError);
    expect((missing as Error).message).toMatch(
      /^cannot clone file:\/\/\/nonexistent\/repo\.git: fatal: /,
    );
    expect((missing as Error).message).not.toContain('\n');
    expect(readdirSync(d.workRoot)).toEqual([]);
    // A second run with a live run's id neither adopts nor deletes its directory.
    const live = await prepareWorkspace({ runId: 'same', repo: bare, ...d });
    await expect(prepareWorkspace({ runId: 'same', repo: bare, ...d })).rejects.toThrow(
      /already exists/,
    );
    expect(existsSync(live.treeDir)).toBe(true);
    await live.dispose();
    // No half-made mirror is left to be mistaken for a good one.
    expect(
      readdirSync(path.join(d.cacheDir, 'mirrors')).filter((n) => !n.endsWith('.lock')),
    ).toHaveLength(1);
  });

  it('serialises two runs of one repository on the mirror lock', async () => {
    const { bare } = makeRemote();
    const d = dirs();
    const [a, b] = await Promise.all([
      prepareWorkspace({ runId: 'p1', repo: bare, ...d }),
      prepareWorkspace({ runId: 'p2', repo: bare, ...d }),
    ]);
    disposers.push(a.dispose, b.dispose);
    expect(a.baseCommit).toBe(b.baseCommit);
    expect([a.mirror.reused, b.mirror.reused].sort()).toEqual([false, true]);
    expect(readdirSync(path.join(d.cacheDir, 'mirrors'))).toEqual([path.basename(a.mirror.dir)]);
  });

  it('takes over a mirror lock left by a dead process', async () => {
    const { bare } = makeRemote();
    const d = dirs();
    const first = await prepareWorkspace({ runId: 'l1', repo: bare, ...d });
    await first.dispose();
    const lock = `${first.mirror.dir}.lock`;
    mkdirSync(lock);
    writeFileSync(path.join(lock, 'owner'), '999999999 stale');
    const again = await prepareWorkspace({ runId: 'l2', repo: bare, ...d, lockTimeoutMs: 5000 });
    await again.dispose();
    expect(existsSync(lock)).toBe(false);
    // A live holder is waited for, up to the timeout.
    mkdirSync(lock);
    writeFileSync(path.join(lock, 'owner'), `${process.pid} other`);
    await expect(
      prepareWorkspace({ runId: 'l3', repo: bare, ...d, lockTimeoutMs: 300 }),
    ).rejects.toThrow(/timed out waiting for the mirror lock/);
    rmSync(lock, { recursive: true });
  });

  it('never runs a hook planted in the source repository', async () => {
    const { bare } = makeRemote();
    const marker = path.join(temp('ws-hook-'), 'ran');
    for (const hook of ['post-checkout', 'reference-transaction', 'post-index-change']) {
      writeFileSync(path.join(bare, 'hooks', hook), `#!/bin/sh\ntouch ${marker}\n`);
      chmodSync(path.join(bare, 'hooks', hook), 0o755);
    }
    const ws = await prepareWorkspace({ runId: 'hooks', repo: bare, ...dirs() });
    disposers.push(ws.dispose);
    expect(existsSync(marker)).toBe(false);
  });
});

describe("host git and the operator's config", () => {
  it("never runs a filter or diff driver from the operator's ~/.gitconfig or XDG config, at clone or at the policy's apply", async () => {
    const { bare, commit } = makeRemote();
    // The repository (and then the patch) names drivers that only the operator's config defines.
    commit('.gitattributes', '*.dat filter=lfs diff=lfs\n');
    commit('blob.dat', 'payload\n');
    const home = temp('ws-home-');
    const marker = path.join(temp('ws-marker-'), 'filter-ran');
    const driver = `sh -c 'echo ran >> ${marker}; cat'`;
    const config = [
      '[filter "lfs"]',
      `\tclean = ${driver}`,
      `\tsmudge = ${driver}`,
      '\trequired = true',
      '[diff "lfs"]',
      `\ttextconv = ${driver}`,
      '[core]',
      `\tattributesFile = ${path.join(home, 'attributes')}`,
      '',
    ].join('\n');
    writeFileSync(path.join(home, '.gitconfig'), config);
    mkdirSync(path.join(home, 'xdg', 'git'), { recursive: true });
    writeFileSync(path.join(home, 'xdg', 'git', 'config'), config);
    writeFileSync(path.join(home, 'attributes'), '* filter=lfs\n');
    const env = { ...process.env, HOME: home, XDG_CONFIG_HOME: path.join(home, 'xdg') };
    const ws = await prepareWorkspace({ runId: 'cfg', repo: bare, env, ...dirs() });
    try {
      expect(existsSync(marker)).toBe(false);
      const patch = [
        'diff --git a/.gitattributes b/.gitattributes',
        '--- a/.gitattributes',
        '+++ b/.gitattributes',
        '@@ -1 +1,2 @@',
        ' *.dat filter=lfs diff=lfs',
        '+*.txt filter=lfs diff=lfs',
        'diff --git a/new.txt b/new.txt',
        'new file mode 100644',
        '--- /dev/null',
        '+++ b/new.txt',
        '@@ -0,0 +1 @@',
        '+hello',
        'diff --git a/blob.dat b/blob.dat',
        '--- a/blob.dat',
        '+++ b/blob.dat',
        '@@ -1 +1 @@',
        '-payload',
        '+changed',
        '',
      ].join('\n');
      const applied = await ws.changesFromPatch(patch);
      expect(applied.changes.map((c) => c.path)).toEqual(['.gitattributes', 'blob.dat', 'new.txt']);
      expect(existsSync(marker)).toBe(false);
    } finally {
      await ws.dispose();
    }
  });
});

describe('changesFromPatch', () => {
  it("reads binaries, modes, sizes and links with git's own machine output, whatever the patch's .gitattributes say", async () => {
    const { bare, commit } = makeRemote();
    commit('run.sh', 'echo hi\n');
    const ws = await prepareWorkspace({ runId: 'facts', repo: bare, ...dirs() });
    try {
      // The patch, as git in the sandbox would write it.
      const work = path.join(temp('ws-facts-'), 'w');
      git(path.dirname(work), 'clone', '-q', bare, work);
      writeFileSync(path.join(work, '.gitattributes'), '*.bin diff\n');
      writeFileSync(path.join(work, 'tool.bin'), Buffer.from([0x7f, 0x45, 0x4c, 0x46, 0, 1, 2, 0]));
      chmodSync(path.join(work, 'tool.bin'), 0o755);
      chmodSync(path.join(work, 'run.sh'), 0o755);
      mkdirSync(path.join(work, 'docs b'));
      writeFileSync(path.join(work, 'docs b', 'innocent.md'), 'a\nb\n');
      symlinkSync('../README.md', path.join(work, 'docs b', 'readme'));
      git(work, 'add', '-A');
      const patch = git(work, 'diff', '--cached', '--binary', '--no-renames') + '\n';
      const applied = await ws.changesFromPatch(patch, {
        setAside: (p) => p.startsWith('docs b/'),
      });
      expect(applied.changes).toEqual([
        {
          path: '.gitattributes',
          oldMode: '000000',
          newMode: '100644',
          status: 'A',
          added: 1,
          removed: 0,
          size: 11,
        },
        {
          path: 'docs b/innocent.md',
          oldMode: '000000',
          newMode: '100644',
          status: 'A',
          added: 2,
          removed: 0,
          size: 4,
        },
        {
          path: 'docs b/readme',
          oldMode: '000000',
          newMode: '120000',
          status: 'A',
          added: 1,
          removed: 0,
          size: 12,
          linkTarget: '../README.md',
        },
        {
          path: 'run.sh',
          oldMode: '100644',
          newMode: '100755',
          status: 'M',
          added: 0,
          removed: 0,
          size: 8,
        },
        {
          path: 'tool.bin',
          oldMode: '000000',
          newMode: '100755',
          status: 'A',
          added: null,
          removed: null,
          size: 8,
        },
      ]);
      // The split is git's own text: the kept part names no set-aside path, and both apply.
      expect(applied.split!.setAsidePaths).toEqual(['docs b/innocent.md', 'docs b/readme']);
      expect(applied.split!.kept).not.toContain('docs b/');
      expect(applied.split!.setAside).toContain(
        'diff --git a/docs b/innocent.md b/docs b/innocent.md',
      );
      expect(applied.split!.setAside).not.toContain('tool.bin');
      const check = path.join(temp('ws-split-'), 'c');
      git(path.dirname(check), 'clone', '-q', bare, check);
      execFileSync('git', ['apply', '--index', '-'], {
        cwd: check,
        input: applied.split!.kept,
        env: GIT_ENV,
      });
      execFileSync('git', ['apply', '--index', '-'], {
        cwd: check,
        input: applied.split!.setAside,
        env: GIT_ENV,
      });
      expect(git(check, 'diff', '--cached', '--stat', '--no-renames').split('\n').length).toBe(6);
      // The clean clone is clean again, its info/attributes gone.
      expect(git(ws.treeDir, 'status', '--porcelain')).toBe('');
      expect(existsSync(path.join(ws.treeDir, '.git', 'info', 'attributes'))).toBe(false);
    } finally {
      await ws.dispose();
    }
  });
});

describe('a follow-up workspace', () => {
  it('rests at the base revision; the patch applies at the head and splits from the base', async () => {
    const { bare, commit } = makeRemote();
    const origin = commit('calc.py', 'def add(a, b):\n    return a - b\n');
    const work = path.join(temp('ws-fu-'), 'w');
    git(path.dirname(work), 'clone', '-q', bare, work);
    git(work, 'checkout', '-q', '-b', 'frognano/issue-1');
    writeFileSync(path.join(work, 'calc.py'), 'def add(a, b):\n    return a + b\n');
    writeFileSync(path.join(work, 'conftest.py'), 'forged = True\n');
    git(work, 'add', '-A');
    git(work, 'commit', '-q', '-m', 'revision 1');
    git(work, 'push', '-q', 'origin', 'HEAD:frognano/issue-1');
    const head = git(work, 'rev-parse', 'HEAD');
    // The base branch moves on after the branch left it: the origin stays where it left.
    commit('README.md', 'two\n');
    const setAside = (p: string) => p === 'conftest.py';
    const ws = await prepareWorkspace({
      runId: 'follow-up',
      repo: bare,
      revision: 'frognano/issue-1',
      baseRevision: 'main',
      ...dirs(),
    });
    try {
      expect(ws.baseCommit).toBe(head);
      expect(ws.originCommit).toBe(origin);
      expect(git(ws.treeDir, 'rev-parse', 'HEAD')).toBe(origin);
      expect(existsSync(path.join(ws.treeDir, 'conftest.py'))).toBe(false);

      const previous = await ws.previousChanges({ setAside });
      expect(previous.changes).toEqual([]);
      expect(previous.sinceOrigin!.map((c) => c.path)).toEqual(['calc.py', 'conftest.py']);
      expect(previous.split!.kept).toContain('+    return a + b');
      expect(previous.split!.kept).not.toContain('conftest.py');
      expect(previous.split!.setAside).toContain('+forged = True');

      // The agent's patch, written against the head.
      writeFileSync(
        path.join(work, 'calc.py'),
        'def add(a, b):\n    """Return a + b."""\n    return a + b\n',
      );
      const patch = `${git(work, 'diff', '--binary')}\n`;
      const applied = await ws.changesFromPatch(patch, { setAside });
      expect(applied.changes.map((c) => c.path)).toEqual(['calc.py']);
      expect(applied.sinceOrigin!.map((c) => c.path)).toEqual(['calc.py', 'conftest.py']);
      const { kept, setAside: rest } = applied.split!;
      expect(kept).toContain('-    return a - b');
      expect(kept).toContain('+    """Return a + b."""');
      expect(kept).not.toContain('conftest.py');
      expect(rest).toContain('+forged = True');
      // Both parts apply, in order, to the base revision.
      const check = path.join(temp('ws-fu-check-'), 'c');
      git(path.dirname(check), 'clone', '-q', bare, check);
      git(check, 'checkout', '-q', '--detach', origin);
      for (const part of [kept, rest])
        execFileSync('git', ['apply', '--index', '-'], { cwd: check, input: part, env: GIT_ENV });
      expect(readFileSync(path.join(check, 'calc.py'), 'utf8')).toBe(
        readFileSync(path.join(work, 'calc.py'), 'utf8'),
      );
      expect(readFileSync(path.join(check, 'conftest.py'), 'utf8')).toBe('forged = True\n');
      // The clone is back at the base revision, clean.
      expect(git(ws.treeDir, 'rev-parse', 'HEAD')).toBe(origin);
      expect(git(ws.treeDir, 'status', '--porcelain')).toBe('');
    } finally {
      await ws.dispose();
    }
  });

  it('fails in one line for a diff base that is not in the repository', async () => {
    const { bare } = makeRemote();
    await expect(
      prepareWorkspace({ runId: 'no-base', repo: bare, baseRevision: 'nope', ...dirs() }),
    ).rejects.toThrow(new CloneError('the diff base nope is not in the repository'));
  });
});

describe('credentials', () => {
  it('go only into the environment, scoped to the origin, never into argv or config', () => {
    const env = gitEnv(
      {
        PATH: '/usr/bin',
        EDITOR: 'vim',
        GIT_TRACE: '1',
        HOME: '/home/operator',
        XDG_CONFIG_HOME: '/home/operator/.config',
      },
      'https://git.example.com/o/r.git',
      {
        username: 'x-access-token',
        password: 'ghs_secret',
      },
      '/run/empty-home',
    );
    const config = Object.fromEntries(
      Array.from({ length: Number(env.GIT_CONFIG_COUNT) }, (_, i) => [
        env[`GIT_CONFIG_KEY_${i}`],
        env[`GIT_CONFIG_VALUE_${i}`],
      ]),
    );
    expect(config).toMatchObject({
      'core.hooksPath': '/dev/null',
      'core.fsmonitor': 'false',
      'credential.helper': '',
      'http.https://git.example.com/.extraHeader': `Authorization: Basic ${Buffer.from('x-access-token:ghs_secret').toString('base64')}`,
    });
    expect(env).toMatchObject({
      PATH: '/usr/bin',
      HOME: '/run/empty-home',
      XDG_CONFIG_HOME: '/run/empty-home',
      GIT_CONFIG_NOSYSTEM: '1',
      GIT_CONFIG_GLOBAL: '/dev/null',
      GIT_TERMINAL_PROMPT: '0',
      GIT_LFS_SKIP_SMUDGE: '1',
    });
    expect(env.EDITOR).toBeUndefined();
    expect(env.GIT_TRACE).toBeUndefined();
    expect(
      Object.keys(env)
        .filter((k) => !k.startsWith('GIT_CONFIG_'))
        .join(' '),
    ).not.toContain('ghs_secret');
  });

  describe('against a real smart-HTTP server that demands Basic auth', () => {
    const password = 'ghs_TopSecretInstallationToken0123';
    let server: Server;
    let url: string;
    let remote: ReturnType<typeof makeRemote>;
    let argvLog: string;
    let savedPath: string | undefined;
    const seenAuth: string[] = [];

    beforeAll(async () => {
      remote = makeRemote();
      const root = path.dirname(remote.bare);
      server = createServer((req, res) => {
        seenAuth.push(req.headers.authorization ?? '');
        const expected = `Basic ${Buffer.from(`x-access-token:${password}`).toString('base64')}`;
        if (req.headers.authorization !== expected) {
          res.writeHead(401, { 'WWW-Authenticate': 'Basic realm="git"' }).end();
          return;
        }
        const u = new URL(req.url ?? '/', 'http://localhost');
        const cgi = spawn('git', ['http-backend'], {
          env: {
            PATH: process.env.PATH,
            GIT_PROJECT_ROOT: root,
            GIT_HTTP_EXPORT_ALL: '1',
            REQUEST_METHOD: req.method,
            PATH_INFO: u.pathname,
            QUERY_STRING: u.search.slice(1),
            CONTENT_TYPE: req.headers['content-type'] ?? '',
            HTTP_CONTENT_ENCODING: req.headers['content-encoding'] ?? '',
            GIT_PROTOCOL: String(req.headers['git-protocol'] ?? ''),
            REMOTE_ADDR: '127.0.0.1',
          },
        });
        req.pipe(cgi.stdin);
        const chunks: Buffer[] = [];
        cgi.stdout.on('data', (c: Buffer) => chunks.push(c));
        cgi.on('close', () => {
          const out = Buffer.concat(chunks);
          const split = out.indexOf('\r\n\r\n');
          const head = out.subarray(0, split).toString().split('\r\n');
          let status = 200;
          const headers: Record<string, string> = {};
          for (const line of head) {
            const [k, ...v] = line.split(': ');
            if (k?.toLowerCase() === 'status') status = Number(v.join(': ').split(' ')[0]);
            else if (k) headers[k] = v.join(': ');
          }
          res.writeHead(status, headers).end(out.subarray(split + 4));
        });
      });
      await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
      const port = (server.address() as { port: number }).port;
      url = `http://127.0.0.1:${port}/project.git`;
      // A git wrapper first on PATH records every argv the workspace runs.
      const bin = temp('ws-bin-');
      argvLog = path.join(bin, 'argv.log');
      const real = execFileSync('sh', ['-c', 'command -v git'], { encoding: 'utf8' }).trim();
      writeFileSync(
        path.join(bin, 'git'),
        `#!/bin/sh\nprintf '%s\\n' "$*" >> ${argvLog}\nexec ${real} "$@"\n`,
      );
      chmodSync(path.join(bin, 'git'), 0o755);
      savedPath = process.env.PATH;
      process.env.PATH = `${bin}:${process.env.PATH}`;
    });
    afterAll(async () => {
      process.env.PATH = savedPath;
      await new Promise((resolve) => server.close(resolve));
    });

    it('clones and fetches with the credential, and it lands nowhere on disk or in argv', async () => {
      const d = dirs();
      const getCredential = async () => ({ username: 'x-access-token', password });
      const ws = await prepareWorkspace({ runId: 'auth1', repo: url, getCredential, ...d });
      const head = remote.commit('b.txt', 'b\n');
      const again = await prepareWorkspace({ runId: 'auth2', repo: url, getCredential, ...d });
      try {
        expect(again.baseCommit).toBe(head);
        expect(seenAuth.some((a) => a.startsWith('Basic '))).toBe(true);
        const basic = Buffer.from(`x-access-token:${password}`).toString('base64');
        const files = [
          path.join(ws.mirror.dir, 'config'),
          path.join(ws.mirror.dir, 'FETCH_HEAD'),
          path.join(ws.treeDir, '.git/config'),
          path.join(again.treeDir, '.git/config'),
        ].filter((f) => existsSync(f));
        expect(files.length).toBeGreaterThanOrEqual(3);
        for (const f of files) {
          const text = readFileSync(f, 'utf8');
          expect(text).not.toContain(password);
          expect(text).not.toContain(basic);
        }
        const argv = readFileSync(argvLog, 'utf8');
        expect(argv).toContain('clone --mirror');
        // The hardening settings travel in the environment (host-git-env.ts), like the header.
        expect(argv).not.toContain('extraHeader');
        expect(argv).not.toContain(password);
        expect(argv).not.toContain(basic);
      } finally {
        await ws.dispose();
        await again.dispose();
      }
    });

    it('moves a credential embedded in the URL out of argv, and fails in one clean line without one', async () => {
      const d = dirs();
      const ws = await prepareWorkspace({
        runId: 'embedded',
        repo: url.replace('http://', `http://x-access-token:${password}@`),
        ...d,
      });
      await ws.dispose();
      expect(readFileSync(argvLog, 'utf8')).not.toContain(password);
      const err = await prepareWorkspace({ runId: 'noauth', repo: url, ...dirs() }).catch(
        (e: Error) => e,
      );
      expect(err).toBeInstanceOf(CloneError);
      expect((err as Error).message).toMatch(
        /^cannot clone http:\/\/127\.0\.0\.1:\d+\/project\.git: fatal: /,
      );
      const wrong = await prepareWorkspace({
        runId: 'wrong',
        repo: url,
        getCredential: async () => ({
          username: 'x-access-token',
          password: 'ghs_wrongwrongwrong',
        }),
        ...dirs(),
      }).catch((e: Error) => e);
      expect((wrong as Error).message).not.toContain('ghs_wrongwrongwrong');
    });
  });
});
