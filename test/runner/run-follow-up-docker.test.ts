// A follow-up run on the real Docker engine: it starts from the previous attempt's branch head
// (verify-before runs there), reuses the first run's setup snapshot, and the model's task text
// is built around the previous attempt's diff against the base.
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import pino from 'pino';
import { afterAll, beforeAll, expect, it } from 'vitest';
import { runPipeline } from '../../src/runner/run.js';
import { followUpTask } from '../../src/runner/follow-up-task.js';
import { connectDocker } from '../../src/sandbox/docker-engine.js';
import { describeDocker, ensureSandboxImage } from '../support/docker-engine.js';
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
  type RecordedRequest,
  type ResponseSpec,
} from '../support/scripted-model-server.js';
import { ATTEMPT_HEADER } from '../../src/runner/phases/connect-model.js';

const docker = connectDocker();
const root = mkdtempSync(path.join(tmpdir(), 'run-follow-up-docker-'));
const snapshotRepos: string[] = [];

/** Commits `files` on a new branch `frognano/issue-1` (the App's revision 1), back on main after. */
function commitRevision1(repoDir: string, files: Record<string, string>): string {
  git(repoDir, 'checkout', '-q', '-b', 'frognano/issue-1');
  for (const [name, content] of Object.entries(files))
    writeFileSync(path.join(repoDir, name), content);
  git(repoDir, 'add', '-A');
  git(repoDir, '-c', 'user.name=b', '-c', 'user.email=b@x', 'commit', '-qm', 'revision 1');
  const head = git(repoDir, 'rev-parse', 'HEAD').trim();
  git(repoDir, 'checkout', '-q', 'main');
  return head;
}

function followUpRequest(runId: string, repoDir: string, out: string, attempts = 1) {
  return {
    runId,
    instanceId: 'fixture/calc#7',
    repo: repoDir,
    revision: 'frognano/issue-1',
    issueText: ISSUE_TEXT,
    followUp: {
      diffBase: 'main',
      task: (previousDiff: string) =>
        followUpTask({
          issueText: ISSUE_TEXT,
          branch: 'frognano/issue-1',
          previousDiff,
          request: 'Document add().',
          threads: [],
        }),
    },
    sandbox: 'docker' as const,
    outDir: path.join(root, out),
    ...(attempts > 1 ? { overrides: { attempts } } : {}),
  };
}

function observations(trajectoryPath: string): string[] {
  const t = JSON.parse(readFileSync(trajectoryPath, 'utf8')) as {
    steps: { observations: { observation: string }[] }[];
  };
  return t.steps.flatMap((s) => s.observations.map((o) => o.observation));
}

// A hook in the user's site-packages that fixes add() once calc.py carries a harmless marker:
// "before: fail → after: pass" for a change that fixes nothing, if it ever reaches a snapshot.
const PLANTED_HOOK = [
  'import builtins',
  '_real = builtins.__import__',
  'def _imp(name, *args, **kwargs):',
  '    module = _real(name, *args, **kwargs)',
  "    if name == 'calc' and '# touched' in open(module.__file__).read():",
  '        module.add = lambda a, b: a + b',
  '    return module',
  'builtins.__import__ = _imp',
  '',
].join('\n');

const DOCSTRING_EDIT = toolCall('Edit', {
  file_path: 'calc.py',
  old_string: 'def add(a, b):\n',
  new_string: 'def add(a, b):\n    """Return a + b."""\n',
});

const deps = (baseUrl: string) => ({
  modelConfig: { baseUrl, maxRetries: 0 },
  docker,
  dataDir: path.join(root, 'data'),
  logger: pino({ level: 'silent' }),
  sandboxLimits: { memoryBytes: 512 * 1024 * 1024, pidsLimit: 256 },
});

afterAll(async () => {
  await removeSnapshotImages(docker, snapshotRepos);
  rmSync(root, { recursive: true, force: true });
});

describeDocker('a follow-up run in the Docker sandbox', () => {
  beforeAll(async () => {
    await ensureSandboxImage();
  });

  it('starts at the branch head, reuses the setup snapshot and briefs the model with the previous diff', async () => {
    const repo = createPythonRepo(root, {
      '.github/frognano.yml': [
        'setup:',
        '  - echo built > ~/setup-ran',
        'test: python3 -m pytest -q',
      ].join('\n'),
    });
    snapshotRepos.push(repo.dir);
    const model = await startScriptedModelServer({
      script: [
        // The first attempt, on main.
        toolCall('Write', { file_path: 'calc.py', content: FIXED_CALC }),
        finalAnswer('Fixed add().'),
        // The follow-up, on the attempt's branch.
        toolCall('Edit', {
          file_path: 'calc.py',
          old_string: 'def add(a, b):\n',
          new_string: 'def add(a, b):\n    """Return a + b."""\n',
        }),
        finalAnswer('Documented add().'),
      ],
    });
    const deps = {
      modelConfig: { baseUrl: model.baseUrl, maxRetries: 0 },
      docker,
      dataDir: path.join(root, 'data'),
      logger: pino({ level: 'silent' }),
      sandboxLimits: { memoryBytes: 512 * 1024 * 1024, pidsLimit: 256 },
    };
    try {
      const first = await runPipeline(
        {
          runId: `t-fu-1-${Date.now()}`,
          instanceId: 'fixture/calc#1',
          repo: repo.dir,
          issueText: ISSUE_TEXT,
          sandbox: 'docker',
          outDir: path.join(root, 'o1'),
        },
        deps,
      );
      expect(first.error).toBeUndefined();
      expect(first.snapshotHit).toBe(false);

      // The App's commit of that attempt, on its branch.
      git(repo.dir, 'checkout', '-q', '-b', 'frognano/issue-1');
      writeFileSync(path.join(repo.dir, 'calc.py'), FIXED_CALC);
      git(repo.dir, '-c', 'user.name=b', '-c', 'user.email=b@x', 'commit', '-qam', 'attempt 1');
      const head = git(repo.dir, 'rev-parse', 'HEAD').trim();
      git(repo.dir, 'checkout', '-q', 'main');

      const second = await runPipeline(
        {
          runId: `t-fu-2-${Date.now()}`,
          instanceId: 'fixture/calc#7',
          repo: repo.dir,
          revision: 'frognano/issue-1',
          issueText: ISSUE_TEXT,
          followUp: {
            diffBase: 'main',
            task: (previousDiff) =>
              followUpTask({
                issueText: ISSUE_TEXT,
                branch: 'frognano/issue-1',
                previousDiff,
                request: 'Document add().',
                threads: [],
              }),
          },
          sandbox: 'docker',
          outDir: path.join(root, 'o2'),
        },
        deps,
      );
      expect(second.error).toBeUndefined();
      expect(second.baseCommit).toBe(head);
      expect(second.snapshotHit).toBe(true);
      // verify-before ran on the head, where the first attempt's fix already passes.
      expect(second.verifyBefore?.exitCode).toBe(0);
      expect(second.verifyAfter?.exitCode).toBe(0);
      expect(second.patch).toContain('+    """Return a + b."""');
      expect(second.patch).not.toContain('return a - b');
      const task = String(model.chatRequests[2]?.body?.messages?.[1]?.content);
      expect(
        task.startsWith(`${ISSUE_TEXT}\n\nThe repository is already at a previous attempt`),
      ).toBe(true);
      expect(task).toContain('-    return a - b\n+    return a + b');
      expect(task).toContain("The reviewer's feedback:\n\nDocument add().");
    } finally {
      await model.close();
    }
  }, 300_000);

  // The model's revision 1 edits a file setup.py imports to plant a hook in ~/.local. Setup
  // with a network must run the base revision's code, the snapshot it leaves must be the base
  // tree's, and a later run on main that starts from that snapshot gets an honest verdict.
  it("runs setup (with its network) on the base revision's code, and snapshots only that", async () => {
    const repo = createPythonRepo(mkdtempSync(path.join(root, 'setup-')), {
      '.github/frognano.yml': [
        'setup:',
        '  - python3 setup.py',
        'network: setup',
        'test: python3 -m pytest -q',
      ].join('\n'),
      'setup.py': 'import helper\n\nhelper.build()\n',
      'helper.py': "def build():\n    print('setup imported helper: base')\n",
    });
    snapshotRepos.push(repo.dir);
    const head = commitRevision1(repo.dir, {
      'calc.py': FIXED_CALC,
      'helper.py': [
        'import pathlib',
        'import site',
        '',
        `HOOK = ${JSON.stringify(PLANTED_HOOK)}`,
        '',
        '',
        'def build():',
        "    print('setup imported helper: revision-1')",
        '    target = pathlib.Path(site.getusersitepackages())',
        '    target.mkdir(parents=True, exist_ok=True)',
        "    (target / 'usercustomize.py').write_text(HOOK)",
        '',
      ].join('\n'),
    });
    const model = await startScriptedModelServer({
      script: [
        // The follow-up: what the agent's sandbox holds.
        toolCall('Bash', {
          command:
            'grep -c revision-1 helper.py; if [ -e ~/.local/lib/python3.11/site-packages/usercustomize.py ]; then echo HOOK-PLANTED; else echo NO-HOOK; fi',
        }),
        DOCSTRING_EDIT,
        finalAnswer('Documented add().'),
        // A later, unrelated run on main: a change that fixes nothing.
        toolCall('Write', { file_path: 'calc.py', content: `${BUGGY_CALC}# touched\n` }),
        finalAnswer('Touched calc.py.'),
      ],
    });
    try {
      const second = await runPipeline(
        followUpRequest(`t-fu-setup-${Date.now()}`, repo.dir, 'setup-2'),
        deps(model.baseUrl),
      );
      expect(second.error).toBeUndefined();
      expect(second.baseCommit).toBe(head);
      expect(second.snapshotHit).toBe(false);
      expect(second.setupNetwork).toBe(true);
      expect(second.setupTail).toContain('setup imported helper: base');
      expect(second.setupTail).not.toContain('revision-1');
      // The agent works on the head (its helper.py), offline, with no hook planted.
      expect(observations(second.trajectoryPath!)[0]).toContain('STDOUT:\n1\nNO-HOOK\n');
      // verify-before judged the head's source (add() fixed there); the patch is on the head.
      expect(second.verifyBefore?.exitCode).toBe(0);
      expect(second.verifyAfter?.exitCode).toBe(0);
      expect(second.patch).toContain('+    """Return a + b."""');
      expect(second.patch).not.toContain('helper.py');

      const third = await runPipeline(
        {
          runId: `t-fu-setup-main-${Date.now()}`,
          instanceId: 'fixture/calc#8',
          repo: repo.dir,
          issueText: ISSUE_TEXT,
          sandbox: 'docker',
          outDir: path.join(root, 'setup-3'),
        },
        deps(model.baseUrl),
      );
      expect(third.error).toBeUndefined();
      // It started from the follow-up's snapshot, which holds the base's setup only.
      expect(third.snapshotHit).toBe(true);
      expect(third.patch).toContain('+# touched');
      expect(third.verifyBefore?.exitCode).not.toBe(0);
      expect(third.verifyAfter?.exitCode).not.toBe(0);
    } finally {
      await model.close();
    }
  }, 300_000);

  // Revision 1 adds a conftest.py that turns every failure into a pass. Revision 2's "after"
  // (and its "before") run the base revision's harness; the conftest.py is reported, and runs
  // only with the agent's own tests.
  it("judges a revision with the base revision's harness, never one a revision added", async () => {
    const repo = createPythonRepo(mkdtempSync(path.join(root, 'harness-')), {
      '.github/frognano.yml': 'test: python3 -m pytest -q\n',
    });
    const head = commitRevision1(repo.dir, {
      'conftest.py': [
        'import pytest',
        '',
        '',
        '@pytest.hookimpl(hookwrapper=True)',
        'def pytest_runtest_makereport(item, call):',
        '    outcome = yield',
        "    outcome.get_result().outcome = 'passed'",
        '',
      ].join('\n'),
    });
    const seen = new Map<string, number>();
    const model = await startScriptedModelServer({
      onExhausted: (r: RecordedRequest): ResponseSpec => {
        const k = String(r.headers[ATTEMPT_HEADER]);
        const n = seen.get(k) ?? 0;
        seen.set(k, n + 1);
        if (n === 0) return toolCall('Bash', { command: 'grep -c passed conftest.py' });
        if (n === 1) return DOCSTRING_EDIT;
        return finalAnswer(`attempt ${k}: documented add().`);
      },
    });
    try {
      const second = await runPipeline(
        followUpRequest(`t-fu-harness-${Date.now()}`, repo.dir, 'harness-2', 2),
        { ...deps(model.baseUrl), snapshots: { enabled: false } },
      );
      expect(second.error).toBeUndefined();
      expect(second.baseCommit).toBe(head);
      expect(second.attempts).toHaveLength(2);
      for (const a of second.attempts!) {
        // Each attempt's sandbox is at the head (its conftest.py); its patch is on top of it.
        expect(observations(a.trajectoryPath!)[0]).toContain('STDOUT:\n1\n');
        expect(a.patch).toContain('+    """Return a + b."""');
        expect(a.patch).not.toContain('conftest.py');
        expect(a.verifyAfter?.exitCode).not.toBe(0);
        // The whole change, revision 1's conftest.py included, is the agent's own evidence.
        expect(a.agentTests?.exitCode).toBe(0);
      }
      expect(second.verifyBefore?.exitCode).not.toBe(0);
      expect(second.verifyAfter?.exitCode).not.toBe(0);
      expect(second.followUpBase).toEqual({
        commit: repo.head,
        harnessFiles: ['conftest.py'],
      });
    } finally {
      await model.close();
    }
  }, 300_000);
});
