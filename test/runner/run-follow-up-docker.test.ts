// A follow-up run on the real Docker engine: it starts from the previous attempt's branch head
// (verify-before runs there), reuses the first run's setup snapshot, and the model's task text
// is built around the previous attempt's diff against the base.
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import pino from 'pino';
import { afterAll, beforeAll, expect, it } from 'vitest';
import { runPipeline } from '../../src/runner/run.js';
import { followUpTask } from '../../src/runner/follow-up-task.js';
import { connectDocker } from '../../src/sandbox/docker-engine.js';
import { describeDocker, ensureSandboxImage } from '../support/docker-engine.js';
import { FIXED_CALC, ISSUE_TEXT, createPythonRepo, git } from '../support/python-repo.js';
import { removeSnapshotImages } from '../support/snapshot-images.js';
import {
  finalAnswer,
  startScriptedModelServer,
  toolCall,
} from '../support/scripted-model-server.js';

const docker = connectDocker();
const root = mkdtempSync(path.join(tmpdir(), 'run-follow-up-docker-'));
const snapshotRepos: string[] = [];

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
});
