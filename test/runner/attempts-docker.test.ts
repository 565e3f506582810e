// Several attempts against the real Docker engine: one setup, one hardened container per
// attempt started from the same prepared image, and a cancel that stops every attempt and
// leaves no container and no image of the run behind.
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import pino from 'pino';
import { afterAll, beforeAll, expect, it } from 'vitest';
import { connectDocker } from '../../src/sandbox/docker-engine.js';
import { LABEL_RUN } from '../../src/sandbox/docker-sandbox.js';
import { runPipeline } from '../../src/runner/run.js';
import { ATTEMPT_HEADER } from '../../src/runner/phases/connect-model.js';
import { ATTEMPT_IMAGE_REPOSITORY } from '../../src/sandbox/attempt-base-image.js';
import {
  describeDocker,
  ensureSandboxImage,
  labelledContainers,
} from '../support/docker-engine.js';
import { FIXED_CALC, ISSUE_TEXT, createPythonRepo } from '../support/python-repo.js';
import {
  finalAnswer,
  startScriptedModelServer,
  toolCall,
  type RecordedRequest,
  type ResponseSpec,
} from '../support/scripted-model-server.js';

const docker = connectDocker();
const root = mkdtempSync(path.join(tmpdir(), 'attempts-docker-'));
afterAll(() => rmSync(root, { recursive: true, force: true }));

async function attemptImages(runId: string): Promise<unknown[]> {
  const images = await docker.listImages({
    filters: JSON.stringify({ label: [`frognano.attempt-base=${runId}`] }),
  });
  return images;
}

/** One run of the pipeline in Docker, as these tests make it: a scripted model at `baseUrl`. */
function run(
  runId: string,
  repoDir: string,
  out: string,
  baseUrl: string,
  more: { signal?: AbortSignal; snapshots?: boolean } = {},
) {
  return runPipeline(
    {
      runId,
      instanceId: 'fixture/calc#9',
      repo: repoDir,
      issueText: ISSUE_TEXT,
      sandbox: 'docker',
      outDir: path.join(root, out),
      ...(more.signal ? { signal: more.signal } : {}),
    },
    {
      modelConfig: { baseUrl, maxRetries: 0 },
      docker,
      dataDir: path.join(root, 'data'),
      logger: pino({ level: 'silent' }),
      sandboxLimits: { memoryBytes: 512 * 1024 * 1024, pidsLimit: 256 },
      snapshots: { enabled: more.snapshots ?? false },
      ...(more.signal ? { handleSignals: false } : {}),
    },
  );
}

describeDocker('several attempts in Docker', () => {
  beforeAll(async () => {
    await ensureSandboxImage();
  });

  it('runs each attempt in its own container from one setup, then removes them all', async () => {
    const seen = new Map<string, number>();
    const server = await startScriptedModelServer({
      onExhausted: (r: RecordedRequest): ResponseSpec => {
        const k = String(r.headers[ATTEMPT_HEADER]);
        const n = seen.get(k) ?? 0;
        seen.set(k, n + 1);
        if (n === 0) return toolCall('Bash', { command: 'wc -l < /home/frognano/setup-count' });
        if (n === 1 && k === '2')
          return toolCall('Write', { file_path: 'calc.py', content: FIXED_CALC });
        return finalAnswer(`attempt ${k} done`);
      },
    });
    const repo = createPythonRepo(mkdtempSync(path.join(root, 'ok-')), {
      '.github/frognano.yml':
        'attempts: 3\nsetup: echo once >> /home/frognano/setup-count\ntest: python3 -m pytest -q\n',
    });
    const runId = `t-attempts-docker-${Date.now()}`;
    try {
      const result = await run(runId, repo.dir, 'out-ok', server.baseUrl);
      expect(result.outcome).toBe('completed');
      expect(result.selectedAttempt).toBe(2);
      expect(result.attempts!.map((a) => a.reason.split(':')[0])).toEqual(['lost', 'won', 'lost']);
      expect(result.verifyAfter).toMatchObject({ exitCode: 0 });
      expect(result.attempts!.map((a) => a.finalMessage)).toEqual([
        'attempt 1 done',
        'attempt 2 done',
        'attempt 3 done',
      ]);
      // Setup ran once, and every attempt started from what it made.
      for (const a of result.attempts!) {
        const t = JSON.parse(readFileSync(a.trajectoryPath!, 'utf8')) as {
          steps: { observations: { observation: string }[] }[];
        };
        expect(t.steps[0]!.observations[0]!.observation).toBe(
          'Exit code: 0\nSTDOUT:\n1\n\nSTDERR:\n',
        );
      }
      expect(await labelledContainers(runId)).toEqual([]);
      expect(await attemptImages(runId)).toEqual([]);
    } finally {
      await server.close();
    }
  }, 300_000);

  it('a run stopped before the attempts start no sandbox for verifying them', async () => {
    const repo = createPythonRepo(mkdtempSync(path.join(root, 'no-test-')), {
      '.github/frognano.yml': 'attempts: 3\ntest: no-such-test-runner\n',
    });
    const runId = `t-attempts-docker-stopped-${Date.now()}`;
    const created: string[] = [];
    const events = await docker.getEvents({
      filters: JSON.stringify({
        type: ['container'],
        event: ['create'],
        label: [`${LABEL_RUN}=${runId}`],
      }),
    });
    events.on('data', (chunk: Buffer) => created.push(chunk.toString()));
    try {
      const result = await run(runId, repo.dir, 'out-no-test', 'http://127.0.0.1:9');
      expect(result.outcome).toBe('setup_failed');
      await new Promise((resolve) => setTimeout(resolve, 500));
      // Attempt 1's sandbox and the two copies started beside verify-before; none after it.
      expect(created).toHaveLength(3);
      expect(await labelledContainers(runId)).toEqual([]);
    } finally {
      (events as unknown as { destroy(): void }).destroy();
    }
  }, 120_000);

  it('cancel stops every attempt and leaves no container and no image', async () => {
    const server = await startScriptedModelServer({
      onExhausted: (r: RecordedRequest): ResponseSpec =>
        r.body?.messages?.length === 2
          ? toolCall('Bash', { command: 'sleep 1' })
          : { kind: 'hang' },
    });
    const repo = createPythonRepo(mkdtempSync(path.join(root, 'cancel-')), {
      '.github/frognano.yml': 'attempts: 3\n',
    });
    const runId = `t-attempts-cancel-${Date.now()}`;
    const controller = new AbortController();
    const hanging = new Set<string>();
    const watch = setInterval(() => {
      for (const r of server.chatRequests)
        if ((r.body?.messages?.length ?? 0) > 2) hanging.add(String(r.headers[ATTEMPT_HEADER]));
      if (hanging.size === 3) controller.abort();
    }, 100);
    try {
      const result = await run(runId, repo.dir, 'out-cancel', server.baseUrl, {
        signal: controller.signal,
        snapshots: true,
      });
      expect(hanging).toEqual(new Set(['1', '2', '3']));
      expect(result.outcome).toBe('cancelled');
      expect(await labelledContainers(runId)).toEqual([]);
      expect(await attemptImages(runId)).toEqual([]);
      expect(ATTEMPT_IMAGE_REPOSITORY).toBe('frognano-attempt-base');
    } finally {
      clearInterval(watch);
      await server.close();
    }
  }, 300_000);
});
