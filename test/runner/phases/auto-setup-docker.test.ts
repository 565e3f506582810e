// Automatic setup against the real Docker engine (issue 25): a repository with no config whose
// tests import a third-party package gets it installed from its requirements file (a local PEP
// 503 index serving a wheel the test builds), the agent's plain `python3 -m pytest` sees it, the
// "after" passes; a new commit reuses the snapshot, a changed requirements file does not.
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import pino from 'pino';
import { afterAll, beforeAll, expect, it } from 'vitest';
import { connectDocker } from '../../../src/sandbox/docker-engine.js';
import { runPipeline, type PipelineDeps } from '../../../src/runner/run.js';
import type { RunRequest } from '../../../src/runner/run-types.js';
import {
  describeDocker,
  ensureSandboxImage,
  labelledContainers,
} from '../../support/docker-engine.js';
import { startPep503Index, type Pep503Index } from '../../support/pep503-index.js';
import {
  CALC_TEST,
  FIXED_CALC,
  ISSUE_TEXT,
  createPythonRepo,
  git,
} from '../../support/python-repo.js';
import { removeSnapshotImages } from '../../support/snapshot-images.js';
import {
  finalAnswer,
  startScriptedModelServer,
  toolCall,
  type ScriptStep,
} from '../../support/scripted-model-server.js';

const docker = connectDocker();
const root = mkdtempSync(path.join(tmpdir(), 'auto-setup-docker-'));
const snapshotRepos: string[] = [];
let index: Pep503Index;

afterAll(async () => {
  await index?.close();
  await removeSnapshotImages(docker, snapshotRepos);
  rmSync(root, { recursive: true, force: true });
});

// The operator's base configuration gives setup an open network (the local index is on this
// host, which `registries` would refuse), or none; the repository has no config file.
const OPEN_SETUP = async () => [{ name: 'operator base', text: 'network: open\n' }];
const NO_NETWORK = async () => [{ name: 'operator base', text: 'network: none\n' }];

function request(repo: string, runId: string, open: boolean): RunRequest {
  return {
    runId,
    instanceId: 'fixture/calc#25',
    repo,
    issueText: ISSUE_TEXT,
    sandbox: 'docker',
    outDir: path.join(root, `out-${runId}`),
    configBase: open ? OPEN_SETUP : NO_NETWORK,
  };
}

async function run(repo: string, name: string, script: ScriptStep[], open = true) {
  const server = await startScriptedModelServer({ script });
  const deps: PipelineDeps = {
    modelConfig: { baseUrl: server.baseUrl, maxRetries: 0 },
    docker,
    dataDir: path.join(root, 'data'),
    logger: pino({ level: 'silent' }),
    sandboxLimits: { memoryBytes: 768 * 1024 * 1024, pidsLimit: 256 },
  };
  const runId = `t-auto-${name}-${Date.now()}`;
  try {
    const result = await runPipeline(request(repo, runId, open), deps);
    expect(await labelledContainers(runId)).toEqual([]);
    return result;
  } finally {
    await server.close();
  }
}

function commit(dir: string, file: string, text: string, message: string): void {
  writeFileSync(path.join(dir, file), text);
  git(dir, 'add', '-A');
  git(dir, '-c', 'user.name=t', '-c', 'user.email=t@x', 'commit', '-qm', message);
}

describeDocker('automatic setup in the Docker sandbox', () => {
  beforeAll(async () => {
    await ensureSandboxImage();
    index = await startPep503Index([
      {
        name: 'frogdate',
        version: '1.0',
        files: { 'frogdate/__init__.py': 'def parse(text):\n    return text.strip()\n' },
      },
    ]);
  });

  it('installs what the repository declares, with no config; the agent and the verdict see it; snapshots by the requirements', async () => {
    const requirements = `--index-url ${index.url}\n--trusted-host ${index.host}\nfrogdate\n`;
    const repo = createPythonRepo(mkdtempSync(path.join(root, 'repo-')), {
      'requirements.txt': requirements,
      'test_calc.py': `import frogdate\n\n${CALC_TEST}\n\ndef test_frogdate():\n    assert frogdate.parse(' x ') == 'x'\n`,
    });
    snapshotRepos.push(repo.dir);
    const fix: ScriptStep[] = [
      toolCall('Bash', {
        command:
          'python3 -c "import frogdate, sys; print(sys.prefix)"; python3 -m pytest -q 2>&1 | tail -1; bash -c "command -v pip pytest"',
      }),
      toolCall('Edit', {
        file_path: 'calc.py',
        old_string: 'return a - b',
        new_string: 'return a + b',
      }),
      finalAnswer('Fixed.'),
    ];

    const first = await run(repo.dir, 'cold', fix);
    expect(first.error).toBeUndefined();
    expect(first.outcome).toBe('completed');
    expect(first.environment).toMatchObject({
      source: 'auto',
      ecosystems: ['python'],
      commands: [
        { from: 'automatic setup: one venv for the project' },
        { command: "pip install -r 'requirements.txt'", from: 'requirements.txt' },
      ],
      failed: [],
      snapshot: 'miss',
      network: 'open',
      testsCollected: 3,
      importErrors: [],
      runnable: true,
    });
    expect(first.environment!.seconds).toBeGreaterThan(0);
    // The trajectory carries the same facts.
    expect(JSON.parse(readFileSync(first.trajectoryPath!, 'utf8')).environment).toMatchObject({
      source: 'auto',
      commands: [
        { from: 'automatic setup: one venv for the project' },
        { command: "pip install -r 'requirements.txt'", from: 'requirements.txt' },
      ],
      network: 'open',
      tests_collected: 3,
      import_errors: [],
      snapshot: 'miss',
      runnable: true,
      problem: null,
    });
    expect(index.requests).toContain('/files/frogdate-1.0-py3-none-any.whl');
    // The agent's plain python3 is the venv's, with the package; so are pip and pytest.
    const seen = readFileSync(first.trajectoryPath!, 'utf8');
    expect(seen).toContain('/home/frognano/.venv\\nFAILED test_calc.py::test_add');
    expect(seen).toContain('/home/frognano/.venv/bin/pip\\n/home/frognano/.venv/bin/pytest');
    expect(first.verifyBefore!.report).toMatchObject({ tests: 3, failures: 1, errors: 0 });
    expect(first.verifyAfter).toMatchObject({ exitCode: 0 });
    expect(first.filesChanged).toEqual(['calc.py']);

    // A new commit that leaves the requirements alone reuses the environment.
    commit(
      repo.dir,
      'calc.py',
      `# second\n${readFileSync(path.join(repo.dir, 'calc.py'), 'utf8')}`,
      'second',
    );
    const second = await run(repo.dir, 'warm', [
      toolCall('Write', { file_path: 'calc.py', content: FIXED_CALC }),
      finalAnswer('ok'),
    ]);
    expect(second.error).toBeUndefined();
    expect(second.snapshotHit).toBe(true);
    expect(second.environment).toMatchObject({
      snapshot: 'hit',
      testsCollected: 3,
      runnable: true,
    });
    expect(second.environment!.seconds).toBeUndefined();
    expect(second.verifyAfter).toMatchObject({ exitCode: 0 });

    // A changed requirements file makes the environment again.
    commit(repo.dir, 'requirements.txt', `${requirements}# pinned later\n`, 'third');
    const third = await run(repo.dir, 'changed', [finalAnswer('nothing')]);
    expect(third.snapshotHit).toBe(false);
    expect(third.environment).toMatchObject({ snapshot: 'miss', runnable: true });

    // A reused environment is judged by the "before" run of today's tree (no collection of its
    // own): a new test that imports what is not installed makes it one the tests cannot run in.
    commit(
      repo.dir,
      'test_more.py',
      'import nosuchmod\n\n\ndef test_more():\n    pass\n',
      'fourth',
    );
    const fourth = await run(repo.dir, 'hit-broken', [finalAnswer('nothing')]);
    expect(fourth.snapshotHit).toBe(true);
    expect(fourth.environment).toMatchObject({
      snapshot: 'hit',
      testsCollected: 3,
      importErrors: ["No module named 'nosuchmod'"],
      runnable: false,
      problem: "import errors at collection: No module named 'nosuchmod'",
    });
  }, 400_000);

  it('without a network for setup, says the tests cannot run here and why', async () => {
    const repo = createPythonRepo(mkdtempSync(path.join(root, 'offline-')), {
      'requirements.txt': 'frogdate\n',
      'test_calc.py': `import frogdate\n\n${CALC_TEST}`,
    });
    const result = await run(repo.dir, 'offline', [finalAnswer('nothing')], false);
    expect(result.environment).toMatchObject({
      source: 'auto',
      commands: [],
      snapshot: 'none',
      network: 'none',
      testsCollected: 0,
      importErrors: ["No module named 'frogdate'"],
      runnable: false,
      problem: "import errors at collection: No module named 'frogdate'",
    });
    expect(result.environment!.notes.join('\n')).toContain('automatic setup did not run');
    expect(JSON.parse(readFileSync(result.trajectoryPath!, 'utf8')).environment).toMatchObject({
      network: 'none',
      tests_collected: 0,
      import_errors: ["No module named 'frogdate'"],
      runnable: false,
      problem: "import errors at collection: No module named 'frogdate'",
    });
  });
});
