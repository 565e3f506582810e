import { instanceId } from '../../src/instance-id.js';
// The Sandbox conformance suite, run against LocalSandbox and DockerSandbox alike, plus the
// Docker-only surface (copyIn, network cut, commit, labels, hardening, helper recovery).
import { mkdir, mkdtemp, rm, symlink, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { PythonError, SandboxFailure, type Sandbox } from '../../src/leaf/sandbox.js';
import { executeTool } from '../../src/leaf/tools.js';
import { connectDocker } from '../../src/sandbox/docker-engine.js';
import {
  createDockerSandbox,
  DEFAULT_SANDBOX_IMAGE,
  LABEL_CREATED,
  LABEL_REPO,
  LABEL_RUN,
  type DockerSandbox,
} from '../../src/sandbox/docker-sandbox.js';
import { createLocalSandbox } from '../../src/sandbox/local-sandbox.js';
import {
  LABEL_OWNER,
  LABEL_OWNER_PID,
  LABEL_OWNER_PROCESS,
  sandboxOwner,
} from '../../src/sandbox/owner.js';
import { dockerSandboxWithTree } from '../support/docker-sandbox-factory.js';
import {
  describeDocker,
  dockerReady,
  ensureSandboxImage,
  itDocker,
  labelledContainers,
  removeLabelledContainers,
  testRunId,
} from '../support/docker-engine.js';

const runId = testRunId('sandbox');

/** A small tree with the cases that matter: nesting, a hidden file, links, binary data. */
async function makeFixture(): Promise<string> {
  const dir = await mkdtemp(join(tmpdir(), 'frognano-sbx-fixture-'));
  await mkdir(join(dir, 'pkg', 'deep'), { recursive: true });
  await writeFile(join(dir, 'a.txt'), 'hello\n');
  await writeFile(join(dir, '.hidden.py'), 'x = 1\n');
  await writeFile(join(dir, 'pkg', '__init__.py'), '');
  await writeFile(join(dir, 'pkg', 'mod.py'), 'def f():\n    return 1\n');
  await writeFile(join(dir, 'pkg', 'deep', 'leaf.py'), 'pass\n');
  await writeFile(join(dir, 'bytes.bin'), Buffer.from(Array.from({ length: 256 }, (_, i) => i)));
  await writeFile(join(dir, 'run.sh'), '#!/bin/bash\necho ran\n', { mode: 0o755 });
  await symlink('a.txt', join(dir, 'link-to-a.txt'));
  await symlink('pkg', join(dir, 'pkg-link'));
  await symlink('does-not-exist', join(dir, 'dangling.py'));
  return dir;
}

interface SandboxFactory {
  kind: 'local' | 'docker';
  create(sourceDir: string): Promise<Sandbox>;
}

const factories: SandboxFactory[] = [
  { kind: 'local', create: (sourceDir) => createLocalSandbox({ sourceDir }) },
  {
    kind: 'docker',
    create: (sourceDir) => dockerSandboxWithTree(sourceDir, { runId, repo: 'test/conformance' }),
  },
];

afterAll(async () => {
  if (dockerReady) await removeLabelledContainers(runId);
});

describe.each(factories)('Sandbox conformance: $kind', (factory) => {
  if (factory.kind === 'docker' && !dockerReady) {
    itDocker('runs the conformance suite against DockerSandbox', () => undefined);
    return;
  }
  let fixture: string;
  let sandbox: Sandbox;

  beforeAll(async () => {
    fixture = await makeFixture();
    sandbox = await factory.create(fixture);
  });
  afterAll(async () => {
    await sandbox?.dispose();
    // beforeAll may have failed before the fixture existed; say nothing more than it did.
    if (fixture) await rm(fixture, { recursive: true, force: true });
  });

  describe('exec', () => {
    it('returns stdout, stderr and the exit code', async () => {
      const result = await sandbox.exec('echo out; echo err >&2; exit 3');
      expect(result.exitCode).toBe(3);
      expect(result.stdout.toString()).toBe('out\n');
      expect(result.stderr.toString()).toBe('err\n');
      expect(result.timedOut).toBe(false);
      expect(result.stdoutDroppedChars).toBe(0);
      expect(result.stderrDroppedChars).toBe(0);
    });

    it('runs in the workdir with HOME set and bash -lc semantics', async () => {
      const result = await sandbox.exec(
        'pwd -P; echo "$HOME"; echo "$0"; shopt -q login_shell && echo login',
      );
      expect(result.stdout.toString()).toBe(
        `${sandbox.workdir}\n${sandbox.homeDir}\n/bin/bash\nlogin\n`,
      );
    });

    it('honours cwd and extra env', async () => {
      const result = await sandbox.exec('pwd -P; echo "$FROGNANO_X"', {
        cwd: `${sandbox.workdir}/pkg`,
        env: { FROGNANO_X: 'y z' },
      });
      expect(result.stdout.toString()).toBe(`${sandbox.workdir}/pkg\ny z\n`);
    });

    it('feeds stdin (text and bytes) and gives EOF without it', async () => {
      expect((await sandbox.exec('cat', { stdin: 'line one\nline two\n' })).stdout.toString()).toBe(
        'line one\nline two\n',
      );
      const bytes = Uint8Array.from([0, 255, 10, 128]);
      expect([...(await sandbox.exec('cat', { stdin: bytes })).stdout]).toEqual([...bytes]);
      const big = 'x'.repeat(300_000);
      expect((await sandbox.exec('wc -c', { stdin: big })).stdout.toString().trim()).toBe('300000');
      const none = await sandbox.exec('cat; echo eof');
      expect(none.stdout.toString()).toBe('eof\n');
    });

    it('reports 127 for an unknown command and Python-style negative codes for signals', async () => {
      expect((await sandbox.exec('no-such-command-xyz')).exitCode).toBe(127);
      expect((await sandbox.exec('kill -TERM $$')).exitCode).toBe(-15);
      expect((await sandbox.exec('kill -KILL $$')).exitCode).toBe(-9);
    });

    it('times out, keeps the output so far, and kills the whole process group', async () => {
      const result = await sandbox.exec(
        'sleep 300 & echo $! > bg.pid; echo before; echo err >&2; sleep 300; echo never',
        { timeoutMs: 1000 },
      );
      expect(result.timedOut).toBe(true);
      expect(result.exitCode).toBe(-9);
      expect(result.stdout.toString()).toBe('before\n');
      expect(result.stderr.toString()).toBe('err\n');
      const check = await sandbox.exec(
        'for i in $(seq 1 40); do s=$(ps -o stat= -p "$(cat bg.pid)"); case "$s" in ""|Z*) echo dead; exit 0;; esac; sleep 0.05; done; echo alive',
      );
      expect(check.stdout.toString()).toBe('dead\n');
      // The sandbox keeps working after a timeout.
      expect((await sandbox.exec('echo ok')).stdout.toString()).toBe('ok\n');
    });

    it('stops a command when its AbortSignal fires', async () => {
      const controller = new AbortController();
      setTimeout(() => controller.abort(), 300);
      const result = await sandbox.exec('sleep 30', { signal: controller.signal });
      expect(result.exitCode).toBe(-9);
      expect(result.timedOut).toBe(false);
    });

    it('caps output per stream, draining and counting dropped code points', async () => {
      const result = await sandbox.exec(
        "head -c 5000 /dev/zero | tr '\\0' a; for i in $(seq 1 100); do printf 'é'; done >&2",
        { maxOutputBytes: 1000 },
      );
      expect(result.exitCode).toBe(0);
      expect(result.stdout.length).toBe(1000);
      expect(result.stdoutDroppedChars).toBe(4000);
      expect(result.stderr.length).toBe(200);
      expect(result.stderrDroppedChars).toBe(0);
      const split = await sandbox.exec("for i in $(seq 1 100); do printf 'é'; done", {
        maxOutputBytes: 11,
      });
      // 11 bytes keep 5 characters and the lead byte of the 6th; 94 more characters drain.
      expect(split.stdout.length).toBe(11);
      expect(split.stdoutDroppedChars).toBe(94);
    });

    it('refuses a NUL byte in a command as Python does', async () => {
      await expect(sandbox.exec('echo a\0b')).rejects.toMatchObject({
        pythonType: 'ValueError',
        message: 'embedded null byte',
      });
      await expect(sandbox.readFile('a\0b')).rejects.toMatchObject({
        pythonType: 'ValueError',
        message: 'embedded null byte',
      });
    });

    it('runs concurrent commands independently', async () => {
      const [slow, fast] = await Promise.all([
        sandbox.exec('sleep 0.5; echo slow'),
        sandbox.exec('echo fast'),
      ]);
      expect(slow.stdout.toString()).toBe('slow\n');
      expect(fast.stdout.toString()).toBe('fast\n');
    });
  });

  describe('files', () => {
    it('reads relative and absolute paths, resolving symlinks for display', async () => {
      const rel = await sandbox.readFile('a.txt');
      expect(rel.data.toString()).toBe('hello\n');
      expect(rel.realPath).toBe(`${sandbox.workdir}/a.txt`);
      const viaLink = await sandbox.readFile(`${sandbox.workdir}/link-to-a.txt`);
      expect(viaLink.data.toString()).toBe('hello\n');
      expect(viaLink.realPath).toBe(`${sandbox.workdir}/a.txt`);
      const bin = await sandbox.readFile('bytes.bin');
      expect([...bin.data]).toEqual(Array.from({ length: 256 }, (_, i) => i));
    });

    it('raises Python errors in Python words', async () => {
      await expect(sandbox.readFile('missing.txt')).rejects.toMatchObject({
        name: 'PythonError',
        pythonType: 'FileNotFoundError',
        message: "[Errno 2] No such file or directory: 'missing.txt'",
      });
      await expect(sandbox.readFile(`${sandbox.workdir}/pkg`)).rejects.toMatchObject({
        pythonType: 'IsADirectoryError',
        message: `[Errno 21] Is a directory: '${sandbox.workdir}/pkg'`,
      });
      await expect(sandbox.readFile('dangling.py')).rejects.toMatchObject({
        pythonType: 'FileNotFoundError',
        message: "[Errno 2] No such file or directory: 'dangling.py'",
      });
      const error = await sandbox
        .writeFile(`${sandbox.workdir}/a.txt/inner.txt`, Buffer.from('x'))
        .catch((e: unknown) => e);
      expect(error).toBeInstanceOf(PythonError);
      expect((error as PythonError).toObservation()).toBe(
        `FileExistsError: [Errno 17] File exists: '${sandbox.workdir}/a.txt'`,
      );
    });

    it('writes files, creating parents, and reads them back', async () => {
      const written = await sandbox.writeFile('new/dir/file.py', Buffer.from('print("hi")\n'));
      expect(written.realPath).toBe(`${sandbox.workdir}/new/dir/file.py`);
      expect((await sandbox.readFile('new/dir/file.py')).data.toString()).toBe('print("hi")\n');
      const viaLink = await sandbox.writeFile('pkg-link/through-link.py', Buffer.from(''));
      expect(viaLink.realPath).toBe(`${sandbox.workdir}/pkg/through-link.py`);
      const check = await sandbox.exec('cat new/dir/file.py; stat -c %s pkg/through-link.py');
      expect(check.stdout.toString()).toBe('print("hi")\n0\n');
    });

    it('globs like Python: recursive, files only, no hidden files, links kept', async () => {
      const py = await sandbox.glob('**/*.py');
      const paths = py.map((m) => m.path).sort();
      expect(paths).toEqual(
        expect.arrayContaining([
          'pkg/__init__.py',
          'pkg/deep/leaf.py',
          'pkg/mod.py',
          'pkg-link/mod.py',
        ]),
      );
      expect(paths).not.toContain('.hidden.py');
      expect(paths).not.toContain('dangling.py');
      const viaLink = py.find((m) => m.path === 'pkg-link/mod.py');
      expect(viaLink?.realPath).toBe(`${sandbox.workdir}/pkg/mod.py`);
      const txt = await sandbox.glob(`${sandbox.workdir}/*.txt`);
      expect(txt.map((m) => m.path).sort()).toEqual([
        `${sandbox.workdir}/a.txt`,
        `${sandbox.workdir}/link-to-a.txt`,
      ]);
      expect(await sandbox.glob('nothing/**/*.zz')).toEqual([]);
      expect((await sandbox.glob('pkg')).length).toBe(0);
    });

    it('keeps executable bits of copied files', async () => {
      expect((await sandbox.exec('./run.sh')).stdout.toString()).toBe('ran\n');
    });
  });

  it('dispose is idempotent and ends the sandbox', async () => {
    const extra = await factory.create(fixture);
    await extra.dispose();
    await extra.dispose();
    await expect(extra.exec('true')).rejects.toBeInstanceOf(SandboxFailure);
  });
});

describeDocker('DockerSandbox', () => {
  const docker = connectDocker();
  let fixture: string;
  let sandbox: DockerSandbox;

  beforeAll(async () => {
    await ensureSandboxImage();
    fixture = await makeFixture();
    sandbox = await createDockerSandbox({
      runId,
      repo: 'octo/widgets',
      network: 'bridge',
      labels: { 'frognano.test': 'yes', [LABEL_RUN]: 'cannot-override' },
      limits: {
        memoryBytes: 512 * 1024 * 1024,
        nanoCpus: 1_000_000_000,
        pidsLimit: 256,
        tmpfsBytes: 64 * 1024 * 1024,
      },
    });
    await sandbox.copyIn(fixture);
  });
  afterAll(async () => {
    await sandbox?.dispose();
    // beforeAll may have failed before the fixture existed; say nothing more than it did.
    if (fixture) await rm(fixture, { recursive: true, force: true });
  });

  it('labels the container for cleanup', async () => {
    const info = await docker.getContainer(sandbox.containerId).inspect();
    expect(info.Config.Labels[LABEL_RUN]).toBe(runId);
    expect(info.Config.Labels[LABEL_REPO]).toBe('octo/widgets');
    expect(Date.parse(info.Config.Labels[LABEL_CREATED] ?? '')).not.toBeNaN();
    expect(info.Config.Labels['frognano.test']).toBe('yes');
    expect(await labelledContainers(runId)).toContain(sandbox.containerId);
  });

  it("makes Glob's observation next to the files: only the shown matches cross to the host", async () => {
    // 3,000 long names, a link out of the workdir, a name that sorts by code point: the
    // observation is Leaf's, as the host makes it from the full list, but the reply is bounded.
    const made = await sandbox.exec(
      'mkdir -p many && cd many && for i in $(seq 1 3000); do : > "file-$(printf %0200d $i).txt"; done && ln -s /etc/hostname out.txt && : > "z\u00e9.txt" && : > "\u{1F600}.txt"',
    );
    expect(made.exitCode).toBe(0);
    const bounded = await sandbox.globShown('many/*.txt', { root: sandbox.workdir, limit: 1000 });
    expect(bounded.total).toBe(3003);
    expect(bounded.shown).toHaveLength(1000);
    const fromFullList = Object.assign(Object.create(sandbox) as Sandbox, { globShown: undefined });
    for (const args of [
      { pattern: 'many/*.txt' },
      { pattern: '*.txt', path: 'many' },
      { pattern: 'many/out.txt' },
      { pattern: 'none/*' },
    ]) {
      const raw = JSON.stringify(args);
      expect(await executeTool(sandbox, 'Glob', raw), raw).toBe(
        await executeTool(fromFullList, 'Glob', raw),
      );
    }
    await sandbox.exec('rm -rf many');
  });

  it('creates the container hardened, with the configured limits', async () => {
    const info = await docker.getContainer(sandbox.containerId).inspect();
    const host = info.HostConfig;
    expect(host.CapDrop).toEqual(['ALL']);
    expect(host.CapAdd ?? []).toEqual([]);
    expect(host.SecurityOpt).toEqual(['no-new-privileges']);
    expect(host.Privileged).toBe(false);
    expect(host.Init).toBe(true);
    expect(host.Memory).toBe(512 * 1024 * 1024);
    expect(host.MemorySwap).toBe(512 * 1024 * 1024);
    expect(host.NanoCpus).toBe(1_000_000_000);
    expect(host.PidsLimit).toBe(256);
    expect(host.Tmpfs?.['/tmp']).toContain(`size=${64 * 1024 * 1024}`);
    expect(host.Binds ?? []).toEqual([]);
    expect(info.Mounts.filter((m) => m.Type === 'bind')).toEqual([]);
    expect(info.Config.User).toBe('1000:1000');
    const env = info.Config.Env.map((e) => e.split('=')[0]).sort();
    expect(env).toEqual(['HOME', 'LANG', 'PATH']);
    const df = await sandbox.exec("df -k /tmp | tail -n 1 | awk '{print $2}'");
    expect(Number(df.stdout.toString().trim())).toBe(64 * 1024);
  });

  it('copies the tree in owned by uid 1000, symlinks kept as symlinks', async () => {
    const result = await sandbox.exec(
      'stat -c "%u:%g %F %n" a.txt pkg pkg/deep/leaf.py link-to-a.txt dangling.py; readlink link-to-a.txt dangling.py',
    );
    expect(result.stdout.toString()).toBe(
      [
        '1000:1000 regular file a.txt',
        '1000:1000 directory pkg',
        '1000:1000 regular file pkg/deep/leaf.py',
        '1000:1000 symbolic link link-to-a.txt',
        '1000:1000 symbolic link dangling.py',
        'a.txt',
        'does-not-exist',
        '',
      ].join('\n'),
    );
  });

  it('never follows a symlink that points outside the tree when copying', async () => {
    const outside = await mkdtemp(join(tmpdir(), 'frognano-outside-'));
    const tree = await mkdtemp(join(tmpdir(), 'frognano-escape-'));
    try {
      await writeFile(join(outside, 'secret.txt'), 'host secret\n');
      await symlink(join(outside, 'secret.txt'), join(tree, 'escape.txt'));
      await symlink(outside, join(tree, 'escape-dir'));
      await mkdir(join(tree, 'long'.repeat(10), 'nested'.repeat(20)), { recursive: true });
      await writeFile(
        join(tree, 'long'.repeat(10), 'nested'.repeat(20), 'file-with-a-long-name.txt'),
        'deep\n',
      );
      const { entries } = await sandbox.copyIn(tree, '/home/frognano/escape-test');
      expect(entries).toBe(5);
      const result = await sandbox.exec(
        `cd /home/frognano/escape-test && readlink escape.txt && (cat escape.txt 2>&1 || true) && ls escape-dir/ 2>&1 | head -1; cat ${'long'.repeat(10)}/${'nested'.repeat(20)}/file-with-a-long-name.txt`,
      );
      const out = result.stdout.toString();
      expect(out).toContain(join(outside, 'secret.txt'));
      expect(out).not.toContain('host secret');
      expect(out).toContain('No such file or directory');
      expect(out).toMatch(/deep\n$/);
    } finally {
      await rm(outside, { recursive: true, force: true });
      await rm(tree, { recursive: true, force: true });
    }
  });

  it('cuts the network, idempotently: loopback only afterwards', async () => {
    const before = await sandbox.exec('ls /sys/class/net | sort | tr "\\n" " "');
    expect(before.stdout.toString()).toMatch(/eth0/);
    await sandbox.disconnectNetwork();
    await sandbox.disconnectNetwork();
    const after = await sandbox.exec('ls /sys/class/net; tail -n +2 /proc/net/route | wc -l');
    expect(after.stdout.toString()).toBe('lo\n0\n');
    const info = await docker.getContainer(sandbox.containerId).inspect();
    expect(Object.keys(info.NetworkSettings.Networks)).toEqual([]);
  });

  it('commits the container to an image (setup snapshot) with extra labels', async () => {
    await sandbox.exec('echo snapshot > snapshot-marker.txt');
    const tag = `frognano-test/snapshot:${runId}`;
    const imageId = await sandbox.commit(tag, { 'frognano.snapshot': 'test', [LABEL_RUN]: '' });
    try {
      const image = await docker.getImage(tag).inspect();
      expect(image.Id).toBe(imageId);
      expect(image.Config.Labels['frognano.snapshot']).toBe('test');
      expect(image.Config.User).toBe('1000:1000');
      const child = await createDockerSandbox({ runId, image: tag });
      try {
        expect((await child.readFile('snapshot-marker.txt')).data.toString()).toBe('snapshot\n');
      } finally {
        await child.dispose();
      }
    } finally {
      await docker.getImage(tag).remove({ force: true });
    }
  });

  it('survives a command that kills the tool helper, and rejects a hostile frame', async () => {
    const killed = await sandbox.exec(
      'pkill -KILL -f frognano-tool-[h]elper; sleep 1; echo unreachable',
    );
    expect(killed.exitCode).toBe(-9);
    expect(killed.stderr.toString()).toContain('tool helper died');
    expect((await sandbox.readFile('a.txt')).data.toString()).toBe('hello\n');
    // A command writes garbage into the helper's channel: the host must not trust it.
    const hostile = await sandbox.exec(
      'printf "\\377\\377\\377\\377garbage" > /proc/$(pgrep -f frognano-tool-[h]elper | head -n 1)/fd/1; sleep 1',
    );
    expect(hostile.exitCode).toBe(-9);
    expect((await sandbox.exec('echo fine')).stdout.toString()).toBe('fine\n');
    // A well-framed message of the wrong shape is refused too.
    const forged = await sandbox.exec(
      `python3 -c 'import struct, subprocess; pid = subprocess.check_output(["pgrep", "-f", "frognano-tool-[h]elper"]).split()[0].decode(); body = b"{\\"id\\": \\"x\\", \\"ok\\": true}"; open("/proc/%s/fd/1" % pid, "wb").write(struct.pack(">I", len(body)) + body)'; sleep 1`,
    );
    expect(forged.exitCode).toBe(-9);
    expect(forged.stderr.toString()).toContain('tool helper died');
    expect((await sandbox.exec('echo fine')).stdout.toString()).toBe('fine\n');
  });

  it('recovers from a hung helper: kills the command from the host and replaces the helper', async () => {
    const extra = await createDockerSandbox({ runId, execGraceMs: 1000 });
    try {
      const result = await extra.exec('pkill -STOP -f frognano-tool-[h]elper; sleep 30', {
        timeoutMs: 1000,
      });
      expect(result.exitCode).toBe(-9);
      expect(result.stderr.toString()).toContain('tool helper died');
      const left = await extra.exec("ps -eo args= | grep -c '^sleep 30$' || true");
      expect(left.stdout.toString().trim()).toBe('0');
      expect((await extra.readFile('/etc/hostname')).data.length).toBeGreaterThan(0);
    } finally {
      await extra.dispose();
    }
  });

  it('lets a command with a timeout near the 2^31-1 ms timer limit finish (no early watchdog)', async () => {
    // timeout + grace exceeds what setTimeout accepts; Node would fire such a timer at once.
    const extra = await createDockerSandbox({ runId, execGraceMs: 500 });
    try {
      const result = await extra.exec('sleep 2; echo done', { timeoutMs: 2_147_483_600 });
      expect(result.stderr.toString()).toBe('');
      expect(result.stdout.toString()).toBe('done\n');
      expect(result.exitCode).toBe(0);
    } finally {
      await extra.dispose();
    }
  });

  it('reports OOM and pids-limit hits on the exec result', async () => {
    const hog = await sandbox.exec('python3 -c "b = bytearray(2 * 1024 ** 3)"', {
      timeoutMs: 20_000,
    });
    expect(hog.exitCode).toBe(-9);
    expect(hog.oomKilled).toBe(true);
    expect(hog.stderr.toString()).toContain('out of memory');
    const ok = await sandbox.exec('echo fine');
    expect(ok.oomKilled).toBe(false);
    expect(ok.pidsLimitHit).toBe(false);
  });

  it('fails in one clear line for a missing image or an image without python3, leaving nothing behind', async () => {
    await expect(
      createDockerSandbox({ runId, image: 'frognano-test/no-such-image:none' }),
    ).rejects.toThrow(/sandbox image frognano-test\/no-such-image:none not found/);
    const tag = `frognano-test/no-python:${runId}`;
    const builder = await docker.createContainer({
      Image: DEFAULT_SANDBOX_IMAGE,
      User: '0:0',
      Cmd: ['sh', '-c', 'rm -f /usr/bin/python3 /usr/bin/python3.*'],
      Labels: { [LABEL_RUN]: runId },
    });
    try {
      await builder.start();
      await builder.wait();
      await builder.commit({ repo: tag.split(':')[0], tag: runId });
    } finally {
      await builder.remove({ force: true });
    }
    try {
      const before = (await labelledContainers(runId)).length;
      const error = await createDockerSandbox({ runId, image: tag }).catch((e: unknown) => e);
      expect(error).toBeInstanceOf(SandboxFailure);
      expect((error as Error).message).toBe(
        `image ${tag} has no python3; the sandbox tool helper needs it; use an image with python3`,
      );
      expect((await labelledContainers(runId)).length).toBe(before);
    } finally {
      await docker.getImage(tag).remove({ force: true });
    }
  });

  it('validates options in one line', async () => {
    await expect(createDockerSandbox({ runId: 'bad id!' })).rejects.toThrow(
      /^invalid DockerSandbox option runId/,
    );
    await expect(createDockerSandbox({ runId, network: 'host' as 'none' })).rejects.toThrow(
      /^invalid DockerSandbox option network/,
    );
  });

  it('dispose removes the container', async () => {
    const extra = await createDockerSandbox({ runId });
    const id = extra.containerId;
    await extra.dispose();
    await expect(docker.getContainer(id).inspect()).rejects.toMatchObject({ statusCode: 404 });
    await expect(extra.readFile('a.txt')).rejects.toBeInstanceOf(SandboxFailure);
  });

  it('labels the container with its owner; a snapshot of it carries no owner to pass on', async () => {
    const dataDir = await mkdtemp(join(tmpdir(), 'frognano-owner-'));
    const owner = sandboxOwner(dataDir);
    const owned = await createDockerSandbox({ runId, owner });
    const tag = `frognano-test/owner-snapshot:${runId}`;
    try {
      expect(owned.labels).toMatchObject({
        [LABEL_OWNER]: instanceId(dataDir),
        [LABEL_OWNER_PROCESS]: owner.process,
        [LABEL_OWNER_PID]: String(process.pid),
      });
      const info = await docker.getContainer(owned.containerId).inspect();
      expect(info.Config.Labels[LABEL_OWNER]).toBe(owner.instance);
      await owned.commit(tag, { [LABEL_RUN]: '' });
      const image = await docker.getImage(tag).inspect();
      expect(image.Config.Labels[LABEL_OWNER]).toBe('');
      expect(image.Config.Labels[LABEL_OWNER_PROCESS]).toBe('');
      const child = await createDockerSandbox({ runId, image: tag });
      try {
        const childInfo = await docker.getContainer(child.containerId).inspect();
        expect(childInfo.Config.Labels[LABEL_OWNER]).toBe('');
      } finally {
        await child.dispose();
      }
    } finally {
      await owned.dispose();
      await docker
        .getImage(tag)
        .remove({ force: true })
        .catch(() => undefined);
      await rm(dataDir, { recursive: true, force: true });
    }
  });
});
