// The run pipeline against the real Docker engine: the default sandbox image, setup with
// snapshots (cold, then warm), and nothing of ours left behind.
import {
  mkdtempSync,
  readFileSync,
  rmSync,
  unlinkSync,
  writeFileSync,
  readdirSync,
  existsSync,
} from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import pino from 'pino';
import tar from 'tar-stream';
import { afterAll, beforeAll, expect, it } from 'vitest';
import { connectDocker } from '../../src/sandbox/docker-engine.js';
import { DEFAULT_SANDBOX_IMAGE, LABEL_RUN } from '../../src/sandbox/docker-sandbox.js';
import { runPipeline, type PipelineDeps } from '../../src/runner/run.js';
import type { RunRequest } from '../../src/runner/run-types.js';
import { testPassed } from '../../src/runner/test-report.js';
import { renderSummary } from '../../src/github/publishing/render-summary.js';
import {
  SNAPSHOT_KEY_LABEL,
  SNAPSHOT_LABEL,
  SNAPSHOT_REPOSITORY,
  SNAPSHOT_REPO_LABEL,
  findSnapshot,
  hashDependencyManifests,
  setupInputs,
  snapshotKey,
} from '../../src/sandbox/snapshot-cache.js';
import {
  describeDocker,
  ensureSandboxImage,
  labelledContainers,
} from '../support/docker-engine.js';
import {
  BUGGY_CALC,
  FIXED_CALC,
  ISSUE_TEXT,
  createPythonRepo,
  git,
} from '../support/python-repo.js';
import { removeSnapshotImages } from '../support/snapshot-images.js';
import {
  finalAnswer,
  startScriptedModelServer,
  toolCall,
  toolCalls,
  type ScriptStep,
} from '../support/scripted-model-server.js';

const docker = connectDocker();
const root = mkdtempSync(path.join(tmpdir(), 'run-docker-'));
const snapshotRepos: string[] = [];

afterAll(async () => {
  // Snapshot images these tests made (their repo label is a path under `root`).
  await removeSnapshotImages(docker, snapshotRepos);
  rmSync(root, { recursive: true, force: true });
});

function request(repo: string, runId: string, outDir: string): RunRequest {
  return {
    runId,
    instanceId: 'fixture/calc#7',
    repo,
    issueText: ISSUE_TEXT,
    sandbox: 'docker',
    outDir,
  };
}

async function deps(
  script: ScriptStep[],
): Promise<{ deps: PipelineDeps; close: () => Promise<void>; chats: () => number }> {
  const server = await startScriptedModelServer({ script });
  return {
    deps: {
      modelConfig: { baseUrl: server.baseUrl, maxRetries: 0 },
      docker,
      dataDir: path.join(root, 'data'),
      logger: pino({ level: 'silent' }),
      sandboxLimits: { memoryBytes: 512 * 1024 * 1024, pidsLimit: 256 },
    },
    close: () => server.close(),
    chats: () => server.chatRequests.length,
  };
}

function runsLeft(): string[] {
  const runs = path.join(root, 'data', 'runs');
  return existsSync(runs) ? readdirSync(runs) : [];
}

describeDocker('runPipeline with the Docker sandbox', () => {
  beforeAll(async () => {
    await ensureSandboxImage();
  });

  it('fixes the failing test in a container: verify-before fails, verify-after passes, container removed', async () => {
    const repo = createPythonRepo(mkdtempSync(path.join(root, 'fix-')));
    const m = await deps([
      toolCall('Bash', { command: 'id -u && python3 -m pytest -q 2>&1 | tail -1' }),
      toolCall('Edit', {
        file_path: 'calc.py',
        old_string: 'return a - b',
        new_string: 'return a + b',
      }),
      finalAnswer('Fixed.'),
    ]);
    const runId = `t-docker-fix-${Date.now()}`;
    try {
      const result = await runPipeline(
        request(repo.dir, runId, path.join(root, 'out-fix')),
        m.deps,
      );
      expect(result.error).toBeUndefined();
      expect(result.outcome).toBe('completed');
      expect(result.exitReason).toBe('agent');
      expect(result.testCommand).toEqual({
        command: 'python3 -m pytest',
        source: 'detected',
        detail: 'detected pytest: found pytest.ini',
      });
      expect(result.verifyBefore).toMatchObject({ exitCode: 1, timedOut: false });
      expect(result.verifyBefore!.outputTail).toContain('1 failed, 1 passed');
      expect(result.verifyAfter).toMatchObject({ exitCode: 0 });
      expect(result.filesChanged).toEqual(['calc.py']);
      expect(result.baseCommit).toBe(repo.head);
      const trajectory = readFileSync(result.trajectoryPath!, 'utf8');
      expect(trajectory).toContain('STDOUT:\\n1000\\n');
      expect(result.snapshotHit).toBe(false);
    } finally {
      await m.close();
    }
    expect(await labelledContainers(runId)).toEqual([]);
    expect(runsLeft()).toEqual([]);
  });

  it('a container killed mid-loop is started again from the base image, the loop replayed, and the run completes (issue 26)', async () => {
    const repo = createPythonRepo(mkdtempSync(path.join(root, 'lost-')));
    const runId = `t-docker-lost-${Date.now()}`;
    const killed: string[] = [];
    const kill = async (): Promise<void> => {
      for (const id of await labelledContainers(runId)) {
        await docker.getContainer(id).kill({ signal: 'SIGKILL' });
        killed.push(id);
      }
    };
    const m = await deps([
      toolCall('Edit', {
        file_path: 'calc.py',
        old_string: 'return a - b',
        new_string: 'return a + b',
      }),
      async () => {
        await kill();
        return toolCall('Bash', { command: 'python3 -m pytest -q 2>&1 | tail -1' });
      },
      finalAnswer('Fixed.'),
    ]);
    try {
      const result = await runPipeline(
        request(repo.dir, runId, path.join(root, 'out-lost')),
        m.deps,
      );
      expect(killed).toHaveLength(1);
      expect(result.error).toBeUndefined();
      expect(result.outcome).toBe('completed');
      expect(result.exitReason).toBe('agent');
      expect(result.verifyAfter).toMatchObject({ exitCode: 0 });
      expect(result.filesChanged).toEqual(['calc.py']);
      expect(result.sandboxRecoveries).toMatchObject([
        { step: 1, tool: 'Bash', replayed_calls: 1, rebuilt: true },
      ]);
      const trajectory = JSON.parse(readFileSync(result.trajectoryPath!, 'utf8')) as {
        steps: { observations: { observation: string }[] }[];
      };
      // The call that found the sandbox gone ran again on the rebuilt one, with the fix replayed.
      const observation = trajectory.steps[1]!.observations[0]!.observation;
      // (The fixture's pytest is quiet: its last line is the two passing dots.)
      expect(observation).toMatch(/^Exit code: 0\nSTDOUT:\n\.\. +\[100%\]\n/);
    } finally {
      await m.close();
    }
    expect(await labelledContainers(runId)).toEqual([]);
  });

  it('hooks and core.fsmonitor planted in the sandbox .git never run on the host', async () => {
    const repo = createPythonRepo(mkdtempSync(path.join(root, 'hooks-')));
    // A directory only the host has: a hook run inside the container cannot create the marker.
    const marker = path.join(mkdtempSync(path.join(root, 'host-only-')), 'pwned');
    const hooks = [
      'pre-commit',
      'post-commit',
      'post-checkout',
      'post-merge',
      'pre-push',
      'pre-applypatch',
      'post-applypatch',
      'applypatch-msg',
      'commit-msg',
      'prepare-commit-msg',
      'reference-transaction',
      'post-index-change',
    ];
    const plant = [
      `for h in ${hooks.join(' ')}; do printf '#!/bin/sh\\ntouch ${marker}\\n' > .git/hooks/$h; chmod +x .git/hooks/$h; done`,
      `git config core.fsmonitor 'touch ${marker}; true'`,
      'git config core.hooksPath .git/hooks',
      `git config diff.external 'touch ${marker}'`,
      `git config core.pager 'touch ${marker}; cat'`,
      'ls .git/hooks | wc -l',
    ].join(' && ');
    const m = await deps([
      toolCall('Bash', { command: plant }),
      toolCall('Edit', {
        file_path: 'calc.py',
        old_string: 'return a - b',
        new_string: 'return a + b',
      }),
      finalAnswer('Fixed.'),
    ]);
    const runId = `t-docker-hooks-${Date.now()}`;
    try {
      const result = await runPipeline(
        request(repo.dir, runId, path.join(root, 'out-hooks')),
        m.deps,
      );
      expect(result.outcome).toBe('completed');
      // The planting really happened inside the sandbox (our hooks plus git's samples).
      const trajectory = JSON.parse(readFileSync(result.trajectoryPath!, 'utf8'));
      const planted = String(trajectory.steps[0].observations[0].observation);
      expect(planted).toMatch(/^Exit code: 0\nSTDOUT:\n\d+\n/);
      expect(Number(planted.split('\n')[2])).toBeGreaterThanOrEqual(hooks.length);
      expect(result.filesChanged).toEqual(['calc.py']);
      expect(result.verifyAfter).toMatchObject({ exitCode: 0 });
      expect(result.violations).toEqual([]);
    } finally {
      await m.close();
    }
    expect(existsSync(marker)).toBe(false);
    expect(await labelledContainers(runId)).toEqual([]);
  });

  it('a conftest.py forcing exit status 0 yields "after: fail": the verdict runs the repository\'s own harness', async () => {
    const repo = createPythonRepo(mkdtempSync(path.join(root, 'forged-')));
    const m = await deps([
      toolCall('Write', {
        file_path: 'conftest.py',
        content: 'def pytest_sessionfinish(session, exitstatus):\n    session.exitstatus = 0\n',
      }),
      toolCall('Bash', { command: 'python3 -m pytest -q 2>&1 | tail -1; echo "exit $?"' }),
      finalAnswer('Fixed: Before: fail / After: pass.'),
    ]);
    const runId = `t-docker-forged-${Date.now()}`;
    try {
      const result = await runPipeline(
        request(repo.dir, runId, path.join(root, 'out-forged')),
        m.deps,
      );
      expect(result.outcome).toBe('completed');
      expect(result.verifyBefore).toMatchObject({ exitCode: 1 });
      expect(result.verifyAfter).toMatchObject({ exitCode: 1, timedOut: false });
      expect(result.verifyAfter!.outputTail).toContain('1 failed, 1 passed');
      // The forgery works on its own terms, and is reported as the agent's, not as the verdict.
      expect(result.agentTests).toMatchObject({ exitCode: 0 });
      expect(result.patchFacts!.harnessFiles).toEqual(['conftest.py']);
    } finally {
      await m.close();
    }
    expect(await labelledContainers(runId)).toEqual([]);
  });

  it('a huge file cannot hold the patch capture past the run deadline; the run fails as capture_failed', async () => {
    const repo = createPythonRepo(mkdtempSync(path.join(root, 'huge-')));
    const m = await deps([
      toolCall('Bash', { command: 'truncate -s 50G /testbed/sparse && echo made' }),
      finalAnswer('Done.'),
    ]);
    const runId = `t-docker-huge-${Date.now()}`;
    const started = Date.now();
    try {
      const result = await runPipeline(
        {
          ...request(repo.dir, runId, path.join(root, 'out-huge')),
          overrides: { timeoutMinutes: 0.1 },
        },
        m.deps,
      );
      expect(result.outcome).toBe('capture_failed');
      expect(result.error).toMatch(
        /^the patch could not be captured: patch capture: `git add` did not finish before the run's deadline$/,
      );
      expect(result.verifyAfter).toBeUndefined();
      // 6 s of budget and 20 s of grace, not 120 s per git command
      expect(Date.now() - started).toBeLessThan(100_000);
    } finally {
      await m.close();
    }
    expect(await labelledContainers(runId)).toEqual([]);
  });

  it('source code that exits 0 once pytest imports it yields "after: fail": no test report', async () => {
    const repo = createPythonRepo(mkdtempSync(path.join(root, 'exit0-')));
    const m = await deps([
      toolCall('Edit', {
        file_path: 'calc.py',
        old_string: 'return a - b',
        new_string: 'return a - b\n\n\nimport os, sys\nif "pytest" in sys.modules: os._exit(0)',
      }),
      finalAnswer('Fixed.'),
    ]);
    const runId = `t-docker-exit0-${Date.now()}`;
    try {
      const result = await runPipeline(
        request(repo.dir, runId, path.join(root, 'out-exit0')),
        m.deps,
      );
      expect(result.outcome).toBe('completed');
      expect(result.verifyBefore).toMatchObject({
        exitCode: 1,
        report: { present: true, tests: 2, failures: 1, errors: 0 },
      });
      expect(result.verifyAfter).toMatchObject({
        exitCode: 0,
        report: {
          present: false,
          problem: 'no test report: the test process exited before pytest wrote its report',
        },
      });
      expect(testPassed(result.verifyAfter!)).toBe(false);
      expect(renderSummary(result)).toContain(
        '- After: fail (exit 0, no test report: the test process exited before pytest wrote its report',
      );
    } finally {
      await m.close();
    }
    expect(await labelledContainers(runId)).toEqual([]);
  });

  it('a new pytest.py or dataclasses.py at the root shadowing the runner yields "after: fail"', async () => {
    // `python3 -m pytest` puts the repository root first on sys.path: a new module there
    // replaces pytest itself, or a module pytest imports, before any test runs.
    const repo = createPythonRepo(mkdtempSync(path.join(root, 'shadow-')));
    const m = await deps([
      toolCalls([
        {
          name: 'Write',
          arguments: {
            file_path: 'pytest.py',
            content: "print('===== 1 passed in 0.01s =====')\nraise SystemExit(0)\n",
          },
        },
        {
          name: 'Write',
          arguments: { file_path: 'dataclasses.py', content: 'import os\nos._exit(0)\n' },
        },
      ]),
      finalAnswer('Fixed.'),
    ]);
    const runId = `t-docker-shadow-${Date.now()}`;
    try {
      const result = await runPipeline(
        request(repo.dir, runId, path.join(root, 'out-shadow')),
        m.deps,
      );
      expect(result.outcome).toBe('completed');
      expect(result.verifyBefore).toMatchObject({ exitCode: 1 });
      expect(result.verifyAfter).toMatchObject({ exitCode: 1, timedOut: false });
      expect(result.patchFacts!.harnessFiles).toEqual(['dataclasses.py', 'pytest.py']);
    } finally {
      await m.close();
    }
    expect(await labelledContainers(runId)).toEqual([]);
  });

  it('a pytest plugin registered by a new .dist-info entry point yields "after: fail"', async () => {
    // pytest loads every [pytest11] entry point of the distributions on sys.path, and
    // `python3 -m pytest` puts the repository root there: metadata is harness.
    const repo = createPythonRepo(mkdtempSync(path.join(root, 'plugin-')));
    const m = await deps([
      toolCalls([
        {
          name: 'Write',
          arguments: {
            file_path: 'frog.dist-info/METADATA',
            content: 'Metadata-Version: 2.1\nName: frog\nVersion: 1.0\n',
          },
        },
        {
          name: 'Write',
          arguments: {
            file_path: 'frog.dist-info/entry_points.txt',
            content: '[pytest11]\nfrog = calc\n',
          },
        },
        {
          // The plugin is the source file itself: it cannot be set aside.
          name: 'Write',
          arguments: {
            file_path: 'calc.py',
            content: `${BUGGY_CALC}\n\ndef pytest_sessionfinish(session, exitstatus):\n    session.exitstatus = 0\n`,
          },
        },
      ]),
      finalAnswer('Fixed.'),
    ]);
    const runId = `t-docker-plugin-${Date.now()}`;
    try {
      const result = await runPipeline(
        request(repo.dir, runId, path.join(root, 'out-plugin')),
        m.deps,
      );
      expect(result.outcome).toBe('completed');
      expect(result.verifyBefore).toMatchObject({ exitCode: 1 });
      expect(result.verifyAfter).toMatchObject({ exitCode: 1, timedOut: false });
      expect(result.patchFacts!.harnessFiles).toEqual([
        'frog.dist-info/METADATA',
        'frog.dist-info/entry_points.txt',
      ]);
    } finally {
      await m.close();
    }
    expect(await labelledContainers(runId)).toEqual([]);
  });

  it('snapshots a successful setup and starts the next run from it with the current tree', async () => {
    const parent = mkdtempSync(path.join(root, 'snap-'));
    const repo = createPythonRepo(parent, {
      '.github/frognano.yml': [
        'setup:',
        '  - mkdir -p ~/deps && date +%s%N > ~/deps/stamp && echo built > generated.txt',
        'test: python3 -m pytest -q',
      ].join('\n'),
      'requirements.txt': 'nothing==1\n',
      'old.txt': 'tracked at setup time\n',
    });
    snapshotRepos.push(repo.dir);
    const probe: ScriptStep[] = [
      toolCall('Bash', { command: 'cat ~/deps/stamp generated.txt; ls; head -2 calc.py' }),
      toolCall('Write', { file_path: 'calc.py', content: FIXED_CALC }),
      finalAnswer('ok'),
    ];

    const cold = await deps(probe);
    const first = await runPipeline(
      request(repo.dir, `t-snap-1-${Date.now()}`, path.join(parent, 'o1')),
      cold.deps,
    );
    await cold.close();
    expect(first.error).toBeUndefined();
    expect(first.snapshotHit).toBe(false);
    expect(first.timings.setup).toBeGreaterThan(0);
    // Setup's own output is not part of the agent's patch.
    expect(first.filesChanged).toEqual(['calc.py']);
    const coldSeen = readFileSync(first.trajectoryPath!, 'utf8');
    const stamp = /STDOUT:\\n(\d+)\\n/.exec(coldSeen)?.[1];
    expect(stamp).toBeDefined();

    const images = await docker.listImages({
      filters: JSON.stringify({ label: [`${SNAPSHOT_REPO_LABEL}=${repo.dir}`] }),
    });
    expect(images).toHaveLength(1);
    expect(images[0]!.RepoTags?.[0]).toBe(
      `frognano-snapshot:${images[0]!.Labels![SNAPSHOT_KEY_LABEL]}`,
    );
    expect(images[0]!.Labels![LABEL_RUN]).toBe('');

    // A new commit that changes sources (not manifests) and deletes a tracked file: a hit.
    writeFileSync(
      path.join(repo.dir, 'calc.py'),
      `# second commit\n${readFileSync(path.join(repo.dir, 'calc.py'), 'utf8')}`,
    );
    unlinkSync(path.join(repo.dir, 'old.txt'));
    git(repo.dir, 'add', '-A');
    git(repo.dir, '-c', 'user.name=t', '-c', 'user.email=t@x', 'commit', '-qm', 'second');
    const warm = await deps(probe);
    const second = await runPipeline(
      request(repo.dir, `t-snap-2-${Date.now()}`, path.join(parent, 'o2')),
      warm.deps,
    );
    await warm.close();
    expect(second.error).toBeUndefined();
    expect(second.snapshotHit).toBe(true);
    expect(second.timings.setup).toBeUndefined();
    const warmSeen = readFileSync(second.trajectoryPath!, 'utf8');
    // Setup's outputs, in and outside /testbed, are the snapshot's; the tree is today's.
    expect(warmSeen).toContain(`STDOUT:\\n${stamp}\\nbuilt\\n`);
    expect(warmSeen).toContain('# second commit');
    expect(warmSeen).not.toContain('old.txt');
    expect(second.verifyBefore!.exitCode).toBe(1);
    expect(second.verifyAfter!.exitCode).toBe(0);
    expect(second.filesChanged).toEqual(['calc.py']);
    expect(second.patch).toContain('# second commit');

    // A manifest change misses.
    writeFileSync(path.join(repo.dir, 'requirements.txt'), 'nothing==2\n');
    git(repo.dir, 'add', '-A');
    git(repo.dir, '-c', 'user.name=t', '-c', 'user.email=t@x', 'commit', '-qm', 'third');
    const again = await deps([finalAnswer('nothing')]);
    const third = await runPipeline(
      request(repo.dir, `t-snap-3-${Date.now()}`, path.join(parent, 'o3')),
      again.deps,
    );
    await again.close();
    expect(third.snapshotHit).toBe(false);
    expect(third.timings.setup).toBeGreaterThan(0);
    expect(runsLeft()).toEqual([]);
  });

  it('falls back to a cold start when the snapshot it found cannot start', async () => {
    const repo = createPythonRepo(mkdtempSync(path.join(root, 'broken-')), {
      '.github/frognano.yml': 'setup: echo set-up > marker.txt\n',
    });
    snapshotRepos.push(repo.dir);
    // A "snapshot" under the right key that is no usable image (no shell, no python).
    const baseImageId = (await docker.getImage(DEFAULT_SANDBOX_IMAGE).inspect()).Id;
    const manifests = await hashDependencyManifests(
      repo.dir,
      setupInputs(['echo set-up > marker.txt']),
    );
    const key = snapshotKey({
      repo: repo.dir,
      baseImageId,
      setup: ['echo set-up > marker.txt'],
      network: 'registries',
      manifestsHash: manifests.hash,
    });
    const pack = tar.pack();
    pack.entry({ name: 'testbed/', type: 'directory' });
    pack.finalize();
    const stream = await docker.importImage(
      pack as unknown as NodeJS.ReadableStream,
      {
        repo: SNAPSHOT_REPOSITORY,
        tag: key,
        changes: [`LABEL ${SNAPSHOT_LABEL}=1`, `LABEL ${SNAPSHOT_REPO_LABEL}=${repo.dir}`],
      } as unknown as Record<string, unknown>,
    );
    await new Promise((resolve, reject) =>
      docker.modem.followProgress(stream, (err) => (err ? reject(err) : resolve(undefined))),
    );
    expect(await findSnapshot(docker, key)).toMatch(/^sha256:/);
    const m = await deps([toolCall('Bash', { command: 'cat marker.txt' }), finalAnswer('ok')]);
    try {
      const result = await runPipeline(
        request(repo.dir, `t-broken-${Date.now()}`, path.join(root, 'out-broken')),
        m.deps,
      );
      expect(result.error).toBeUndefined();
      expect(result.snapshotHit).toBe(false);
      expect(result.timings.setup).toBeGreaterThan(0);
      expect(readFileSync(result.trajectoryPath!, 'utf8')).toContain('STDOUT:\\nset-up\\n');
      // The broken image was replaced by a real snapshot of this setup.
      const now = await docker.getImage(`${SNAPSHOT_REPOSITORY}:${key}`).inspect();
      expect(now.Config?.User).toBe('1000:1000');
    } finally {
      await m.close();
    }
  });

  it('gives setup the network only with `network: setup`, and cuts it before the agent', async () => {
    const repo = createPythonRepo(mkdtempSync(path.join(root, 'net-')), {
      '.github/frognano.yml': [
        'network: setup',
        'setup: cat /sys/class/net/eth0/operstate > net-during-setup.txt',
      ].join('\n'),
    });
    snapshotRepos.push(repo.dir);
    const m = await deps([
      toolCall('Bash', { command: 'cat net-during-setup.txt; ls /sys/class/net' }),
      finalAnswer('ok'),
    ]);
    try {
      const result = await runPipeline(
        request(repo.dir, `t-net-${Date.now()}`, path.join(root, 'out-net')),
        { ...m.deps, snapshots: { enabled: false } },
      );
      expect(result.error).toBeUndefined();
      const seen = readFileSync(result.trajectoryPath!, 'utf8');
      expect(seen).toMatch(/STDOUT:\\n(up|unknown)\\nlo\\n/);
    } finally {
      await m.close();
    }
  });

  it('runs setup with a network under the default runtime, then the agent from its image under FROGNANO_SANDBOX_RUNTIME=runsc', async () => {
    const runtimes = Object.keys(((await docker.info()) as { Runtimes?: object }).Runtimes ?? {});
    if (!runtimes.includes('runsc')) {
      // .ci/run registers it; elsewhere say so loudly instead of passing quietly.
      if (process.env.CI === 'true') throw new Error('CI must register runsc (see .ci/run)');
      console.warn('!! SKIPPED: the Docker engine has no runsc runtime (see .ci/run)');
      return;
    }
    const repo = createPythonRepo(mkdtempSync(path.join(root, 'gvisor-')), {
      '.github/frognano.yml': [
        'network: setup',
        'setup: (cat /sys/class/net/eth0/operstate; uname -r) > during-setup.txt',
      ].join('\n'),
    });
    snapshotRepos.push(repo.dir);
    const m = await deps([
      toolCall('Bash', { command: 'cat during-setup.txt; echo agent; uname -r' }),
      toolCall('Edit', {
        file_path: 'calc.py',
        old_string: 'return a - b',
        new_string: 'return a + b',
      }),
      finalAnswer('ok'),
    ]);
    const runId = `t-gvisor-${Date.now()}`;
    try {
      const result = await runPipeline(request(repo.dir, runId, path.join(root, 'out-gvisor')), {
        ...m.deps,
        env: { ...process.env, FROGNANO_SANDBOX_RUNTIME: 'runsc' },
        snapshots: { enabled: false },
      });
      expect(result.error).toBeUndefined();
      expect(result.sandboxRuntime).toMatchObject({ name: 'runsc' });
      expect(result.sandboxRuntime!.reason).toMatch(/^FROGNANO_SANDBOX_RUNTIME=runsc/);
      // Setup had the network under runc (the host's kernel); the agent, in its image, gVisor's.
      const host = readFileSync('/proc/sys/kernel/osrelease', 'utf8').trim();
      const seen = readFileSync(result.trajectoryPath!, 'utf8');
      expect(seen).toContain(`STDOUT:\\n${['up', host, 'agent', '4.4.0'].join('\\n')}\\n`);
      expect(result.verifyAfter).toMatchObject({ exitCode: 0 });
      expect(renderSummary(result, {})).toContain('- Sandbox runtime: `runsc` (gVisor): ');
    } finally {
      await m.close();
    }
    expect(await labelledContainers(runId)).toEqual([]);
    const images = await docker.listImages({
      filters: JSON.stringify({ label: [`frognano.attempt-base=${runId}`] }),
    });
    expect(images).toEqual([]);
  }, 300_000);

  it("refuses another repository's setup snapshot named as the image", async () => {
    // A working image carrying the snapshot label of some other repository.
    const source = await docker.createContainer({ Image: DEFAULT_SANDBOX_IMAGE, Cmd: ['true'] });
    const tag = `other-${Date.now()}`;
    try {
      await source.commit({
        repo: SNAPSHOT_REPOSITORY,
        tag,
        changes: [
          `LABEL ${SNAPSHOT_LABEL}=1`,
          `LABEL ${SNAPSHOT_REPO_LABEL}=https://example.com/private.git`,
        ],
      });
    } finally {
      await source.remove({ force: true });
    }
    const repo = createPythonRepo(mkdtempSync(path.join(root, 'steal-')), {
      '.github/frognano.yml': `image: ${SNAPSHOT_REPOSITORY}:${tag}\n`,
    });
    const m = await deps([toolCall('Bash', { command: 'ls /' }), finalAnswer('ok')]);
    const runId = `t-steal-${Date.now()}`;
    try {
      const result = await runPipeline(
        request(repo.dir, runId, path.join(root, 'out-steal')),
        m.deps,
      );
      expect(result.outcome).toBe('sandbox_failed');
      expect(result.error).toContain('is a frognano setup snapshot');
      expect(m.chats()).toBe(0);
    } finally {
      await m.close();
      await docker
        .getImage(`${SNAPSHOT_REPOSITORY}:${tag}`)
        .remove({ force: true })
        .catch(() => undefined);
    }
    expect(await labelledContainers(runId)).toEqual([]);
  });

  it('fails with sandbox_failed in one line for a missing image, leaving nothing behind', async () => {
    const repo = createPythonRepo(mkdtempSync(path.join(root, 'img-')));
    const m = await deps([]);
    const runId = `t-noimage-${Date.now()}`;
    try {
      const result = await runPipeline(
        {
          ...request(repo.dir, runId, path.join(root, 'out-img')),
          overrides: { image: 'frognano/does-not-exist:1' },
        },
        m.deps,
      );
      expect(result.outcome).toBe('sandbox_failed');
      expect(result.error).toBe(
        'sandbox image frognano/does-not-exist:1 is not on the Docker engine: build it (see sandbox/README.md) or pass another --image',
      );
      expect(m.chats()).toBe(0);
    } finally {
      await m.close();
    }
    expect(await labelledContainers(runId)).toEqual([]);
    expect(runsLeft()).toEqual([]);
  });
});
