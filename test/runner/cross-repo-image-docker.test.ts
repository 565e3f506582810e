// One repository's `image:` against what the bot made for another, on the real Docker engine
// and the real pipeline: repository B's run is held in flight (its attempt base exists), and
// repository A names that image by id prefix, by id, and by its tag. Every way is refused
// before A's model is asked. And a base image's own /testbed never mixes with A's tree.
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import pino from 'pino';
import tar from 'tar-stream';
import { afterAll, beforeAll, expect, it } from 'vitest';
import { connectDocker } from '../../src/sandbox/docker-engine.js';
import { DEFAULT_SANDBOX_IMAGE } from '../../src/sandbox/docker-sandbox.js';
import { runPipeline } from '../../src/runner/run.js';
import type { RunResult } from '../../src/runner/run-types.js';
import {
  describeDocker,
  ensureSandboxImage,
  labelledContainers,
} from '../support/docker-engine.js';
import { ISSUE_TEXT, createPythonRepo } from '../support/python-repo.js';
import {
  finalAnswer,
  startScriptedModelServer,
  toolCall,
  type ScriptStep,
} from '../support/scripted-model-server.js';

const docker = connectDocker();
const root = mkdtempSync(path.join(tmpdir(), 'cross-repo-image-'));
const images: string[] = [];
afterAll(async () => {
  for (const image of images) {
    await docker
      .getImage(image)
      .remove({ force: true })
      .catch(() => undefined);
  }
  rmSync(root, { recursive: true, force: true });
});

/** One run of repository `name` whose `.github/frognano.yml` is `config`. */
async function run(
  name: string,
  config: string,
  script: ScriptStep[],
  onExhausted?: ScriptStep,
): Promise<{ result: Promise<RunResult>; runId: string; chats: () => number }> {
  const server = await startScriptedModelServer({
    script,
    ...(onExhausted ? { onExhausted } : {}),
  });
  const repo = createPythonRepo(mkdtempSync(path.join(root, `${name}-`)), {
    '.github/frognano.yml': config,
  });
  const runId = `t-xrepo-${name}-${Date.now()}`;
  const result = runPipeline(
    {
      runId,
      instanceId: `acme/${name}#1`,
      repo: repo.dir,
      issueText: ISSUE_TEXT,
      sandbox: 'docker',
      outDir: path.join(root, `out-${runId}`),
    },
    {
      modelConfig: { baseUrl: server.baseUrl, maxRetries: 0 },
      docker,
      dataDir: path.join(root, 'data'),
      logger: pino({ level: 'silent' }),
      sandboxLimits: { memoryBytes: 512 * 1024 * 1024, pidsLimit: 256 },
      snapshots: { enabled: false },
    },
  ).finally(() => server.close());
  return { result, runId, chats: () => server.chatRequests.length };
}

/** A model step that waits until released, and says when it is reached. */
function held(): { step: ScriptStep; release: () => void; reached: Promise<void> } {
  let release!: () => void;
  let reach!: () => void;
  const released = new Promise<void>((r) => (release = r));
  const reached = new Promise<void>((r) => (reach = r));
  return {
    step: async () => {
      reach();
      await released;
      return { content: 'Nothing to change.' };
    },
    release,
    reached,
  };
}

/** An image of our own making with `files` in /testbed, tagged `tag`: no frognano label. */
async function imageWithTestbed(
  tag: string,
  files: { name: string; uid: number; type?: 'directory' }[],
): Promise<void> {
  const container = await docker.createContainer({
    Image: DEFAULT_SANDBOX_IMAGE,
    Cmd: ['true'],
  });
  try {
    const pack = tar.pack();
    for (const f of files) {
      if (f.type === 'directory') {
        pack.entry({ name: f.name, type: 'directory', uid: f.uid, gid: f.uid, mode: 0o755 });
      } else {
        pack.entry({ name: f.name, uid: f.uid, gid: f.uid, mode: 0o644 }, 'B repository file\n');
      }
    }
    pack.finalize();
    await container.putArchive(pack as unknown as NodeJS.ReadableStream, { path: '/' });
    const [repo, version] = tag.split(':') as [string, string];
    await container.commit({ repo, tag: version });
    images.push(tag);
  } finally {
    await container.remove({ force: true });
  }
}

describeDocker("a repository naming an image the bot made for another's run", () => {
  beforeAll(async () => {
    await ensureSandboxImage();
  });

  it("refuses B's in-flight attempt base named by A by id prefix, id or tag; A's model is never asked", async () => {
    const gate = held();
    const b = await run(
      'b',
      'attempts: 2\ntest: python3 -m pytest -q\n',
      [gate.step],
      finalAnswer('Nothing to change.'),
    );
    let bResult: RunResult | undefined;
    try {
      await gate.reached;
      const [base] = await docker.listImages({
        filters: JSON.stringify({ label: [`frognano.attempt-base=${b.runId}`] }),
      });
      expect(base, "B's attempt base exists while B runs").toBeDefined();
      const id = base!.Id.replace(/^sha256:/, '');
      const tag = base!.RepoTags?.[0];
      expect(tag).toMatch(/^frognano-attempt-base:/);

      for (const image of [id.slice(0, 12), id, `sha256:${id}`]) {
        const a = await run('a', `image: "${image}"\n`, [finalAnswer('read B')]);
        const result = await a.result;
        expect(result.outcome).toBe('config_error');
        expect(result.error).toMatch(
          /^\.github\/frognano\.yml: image must name an image .*, not an image id or id prefix/,
        );
        expect(a.chats()).toBe(0);
        expect(await labelledContainers(a.runId)).toEqual([]);
      }

      const a = await run('a', `image: ${tag}\n`, [finalAnswer('read B')]);
      const result = await a.result;
      expect(result.outcome).toBe('sandbox_failed');
      expect(result.error).toBe(
        `sandbox image ${tag} was made by frognano (it carries the label frognano.attempt-base): a repository may name only base images, never an image a run made`,
      );
      expect(a.chats()).toBe(0);
      expect(await labelledContainers(a.runId)).toEqual([]);
    } finally {
      gate.release();
      bResult = await b.result;
    }
    expect(bResult.outcome).not.toBe('sandbox_failed');
  });

  it("starts /testbed empty: a base image's own /testbed content never mixes with the tree", async () => {
    const tag = `frognano-test-testbed:${Date.now()}`;
    await imageWithTestbed(tag, [
      { name: 'testbed/', uid: 1000, type: 'directory' },
      { name: 'testbed/b-secret.txt', uid: 1000 },
      { name: 'testbed/calc.py', uid: 1000 },
    ]);
    const a = await run('a', `image: ${tag}\ntest: python3 -m pytest -q\n`, [
      toolCall('Bash', { command: 'ls -A /testbed; cat /testbed/calc.py' }),
      finalAnswer('Looked.'),
    ]);
    const result = await a.result;
    expect(result.error).toBeUndefined();
    const trajectory = readFileSync(result.trajectoryPath!, 'utf8');
    expect(trajectory).toContain('test_calc.py');
    expect(trajectory).not.toContain('b-secret.txt');
    expect(trajectory).not.toContain('B repository file');
    expect(await labelledContainers(a.runId)).toEqual([]);
  });

  it('refuses a base image whose /testbed the sandbox user cannot empty, in one line', async () => {
    const tag = `frognano-test-testbed-root:${Date.now()}`;
    await imageWithTestbed(tag, [
      { name: 'testbed/', uid: 1000, type: 'directory' },
      { name: 'testbed/vendor/', uid: 0, type: 'directory' },
      { name: 'testbed/vendor/b-secret.txt', uid: 0 },
    ]);
    const a = await run('a', `image: ${tag}\n`, [finalAnswer('read B')]);
    const result = await a.result;
    expect(result.outcome).toBe('sandbox_failed');
    expect(result.error).toBe(
      `sandbox image ${tag} has files in /testbed the sandbox user cannot remove: use an image whose /testbed is empty or absent`,
    );
    expect(a.chats()).toBe(0);
    expect(await labelledContainers(a.runId)).toEqual([]);
  });
});
