// Leaf over a real DockerSandbox when the sandbox breaks under it (leaf-protocol.md §8, items 6
// and 8): a tool helper killed by the model's own command is upstream's runner exit, seen by the
// model; a container killed or removed from outside is rebuilt from the attempt's starting image,
// the loop's Write/Edit/Bash calls replayed and compared, and the loop goes on unseen.
import { execFileSync } from 'node:child_process';
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { afterAll, afterEach, beforeAll, expect, it } from 'vitest';
import { runLeaf, type LeafRunOptions } from '../../src/leaf/loop.js';
import { createOpenAIModel } from '../../src/leaf/openai-model.js';
import { connectDocker } from '../../src/sandbox/docker-engine.js';
import { LABEL_RUN, type DockerSandbox } from '../../src/sandbox/docker-sandbox.js';
import { dockerSandboxWithTree } from '../support/docker-sandbox-factory.js';
import { describeDocker, removeLabelledContainers, testRunId } from '../support/docker-engine.js';
import {
  finalAnswer,
  startScriptedModelServer,
  toolCall,
  type ScriptStep,
} from '../support/scripted-model-server.js';

const runId = testRunId('recovery');
const docker = connectDocker();
const TASK = 'Fix add() in calc.py';
let repoDir: string;
const cleanups: (() => Promise<void>)[] = [];

beforeAll(async () => {
  repoDir = await mkdtemp(path.join(tmpdir(), 'leaf-recovery-'));
  execFileSync('git', ['init', '-q', '-b', 'main', repoDir]);
  await writeFile(path.join(repoDir, 'calc.py'), 'def add(a, b):\n    return a - b\n');
  await writeFile(
    path.join(repoDir, 'test_calc.py'),
    'from calc import add\n\nassert add(2, 3) == 5, "add is broken"\n',
  );
  const git = (...args: string[]) => execFileSync('git', args, { cwd: repoDir });
  git('add', '-A');
  git('-c', 'user.name=t', '-c', 'user.email=t@example.com', 'commit', '-q', '-m', 'base');
});

afterEach(async () => {
  for (const cleanup of cleanups.splice(0).reverse()) await cleanup();
});

afterAll(async () => {
  await removeLabelledContainers(runId);
  await rm(repoDir, { recursive: true, force: true });
});

/** A sandbox holding the repository, with its starting image committed as an attempt base is. */
async function sandboxWithStartingImage(): Promise<DockerSandbox> {
  const sandbox = await dockerSandboxWithTree(repoDir, { runId, repo: 'test/recovery' });
  cleanups.push(() => sandbox.dispose());
  const tag = `frognano-test/recovery:${runId}-${Math.random().toString(16).slice(2, 8)}`;
  await sandbox.commit(tag, { [LABEL_RUN]: '' });
  cleanups.push(async () => {
    await docker.getImage(tag).remove({ force: true });
  });
  sandbox.rebuildFrom({ image: tag });
  return sandbox;
}

async function run(
  sandbox: DockerSandbox,
  script: ScriptStep[],
  extra: Partial<LeafRunOptions> = {},
) {
  const server = await startScriptedModelServer({ script });
  cleanups.push(() => server.close());
  const result = await runLeaf({
    model: createOpenAIModel({ baseUrl: server.baseUrl, maxRetries: 0 }),
    sandbox,
    task: TASK,
    instanceId: 'acme/calc#9',
    ...extra,
  });
  return { result, server };
}

/** A script step that first does `act` to the sandbox's container, then answers `answer`. */
function after(act: () => Promise<void>, answer: ScriptStep): ScriptStep {
  return async (request) => {
    await act();
    return typeof answer === 'function' ? answer(request) : answer;
  };
}

describeDocker('Leaf over a Docker sandbox that breaks', () => {
  // Item 6: a dead tool helper is not a lost sandbox.
  it("a Bash call that kills the tool helper gets upstream's runner-exit text; the next call gets a fresh helper", async () => {
    const sandbox = await sandboxWithStartingImage();
    const { result } = await run(sandbox, [
      toolCall('Bash', { command: 'kill -9 $PPID; sleep 5' }),
      toolCall('Bash', { command: 'echo after' }),
      finalAnswer('done'),
    ]);
    expect(result.exitReason).toBe('agent');
    expect(result.trajectory.steps.map((s) => s.observations[0]?.observation)).toEqual([
      'Tool runner exited with code 137.\n',
      'Exit code: 0\nSTDOUT:\nafter\n\nSTDERR:\n',
      undefined,
    ]);
    expect(result.trajectory.sandbox_recoveries).toEqual([]);
  });

  // Item 8: a container killed or removed mid-loop.
  for (const how of ['docker kill', 'docker rm -f'] as const) {
    it(`a container gone by \`${how}\` while the model waits is rebuilt, replayed, and the loop goes on unseen`, async () => {
      const sandbox = await sandboxWithStartingImage();
      const lostId = sandbox.containerId;
      const lose = async (): Promise<void> => {
        const container = docker.getContainer(lostId);
        if (how === 'docker kill') await container.kill({ signal: 'SIGKILL' });
        else await container.remove({ force: true });
      };
      const { result, server } = await run(sandbox, [
        toolCall('Edit', { file_path: 'calc.py', old_string: 'a - b', new_string: 'a + b' }),
        toolCall('Write', { file_path: 'notes.txt', content: 'fixed\n' }),
        after(lose, toolCall('Bash', { command: 'python3 test_calc.py && echo ok' })),
        finalAnswer('Fixed.'),
      ]);
      expect(result.exitReason).toBe('agent');
      expect(result.error).toBeNull();
      expect(sandbox.containerId).not.toBe(lostId);
      // The model saw the call's own observation, nothing of the loss.
      expect(result.trajectory.steps[2]!.observations).toEqual([
        { tool: 'Bash', observation: 'Exit code: 0\nSTDOUT:\nok\n\nSTDERR:\n' },
      ]);
      const last = server.chatRequests[3]!.body!.messages!;
      expect(last).toHaveLength(2 + 3 * 2);
      expect(JSON.stringify(last)).not.toMatch(/sandbox|replay|rebuil/i);
      // The patch is the replayed work, whole.
      expect(result.patch).toContain('-    return a - b\n+    return a + b\n');
      expect(result.patch).toContain('+++ b/notes.txt');
      const [recovery, ...more] = result.trajectory.sandbox_recoveries ?? [];
      expect(more).toEqual([]);
      expect(recovery).toMatchObject({ step: 2, tool: 'Bash', replayed_calls: 2, rebuilt: true });
      expect(recovery!.reason).toMatch(how === 'docker kill' ? /exited|not running/ : /removed/);
      expect(recovery!.duration_sec).toBeGreaterThan(0);
      expect(result.sandboxRecoveries).toHaveLength(1);
    });
  }

  it('a replayed Bash call whose exit status differs stops the attempt with tool_error', async () => {
    const sandbox = await sandboxWithStartingImage();
    const lostId = sandbox.containerId;
    const until = Math.floor(Date.now() / 1000) + 3;
    const waitPast = async (): Promise<void> => {
      while (Date.now() / 1000 <= until + 1) await new Promise((r) => setTimeout(r, 200));
      await docker.getContainer(lostId).kill({ signal: 'SIGKILL' });
    };
    const { result, server } = await run(sandbox, [
      toolCall('Bash', { command: `[ $(date +%s) -lt ${until} ] && echo early > early.txt` }),
      after(waitPast, toolCall('Bash', { command: 'cat early.txt' })),
      finalAnswer('never'),
    ]);
    expect(result.trajectory.steps[0]!.observations[0]!.observation).toMatch(/^Exit code: 0\n/);
    expect(result.exitReason).toBe('tool_error');
    expect(result.error).toMatch(
      /^the sandbox was lost and could not be rebuilt: replayed Bash call 1 of 1 returned a different outcome \(Exit code: 0 before, Exit code: 1 now\)/,
    );
    expect(server.chatRequests).toHaveLength(2);
    expect(result.trajectory.sandbox_recoveries).toMatchObject([{ step: 1, rebuilt: false }]);
  });

  it('a sandbox lost a third time stops the attempt with tool_error', async () => {
    const sandbox = await sandboxWithStartingImage();
    const kill = async (): Promise<void> => {
      await docker.getContainer(sandbox.containerId).kill({ signal: 'SIGKILL' });
    };
    const { result } = await run(sandbox, [
      toolCall('Write', { file_path: 'a.txt', content: 'a\n' }),
      after(kill, toolCall('Bash', { command: 'true' })),
      after(kill, toolCall('Bash', { command: 'true' })),
      after(kill, toolCall('Bash', { command: 'true' })),
      finalAnswer('never'),
    ]);
    expect(result.exitReason).toBe('tool_error');
    expect(result.error).toMatch(
      /^the sandbox was lost and could not be rebuilt: lost 3 times \(at most 2 rebuilds per attempt\)/,
    );
    expect(result.sandboxRecoveries.map((r) => [r.tool, r.rebuilt])).toEqual([
      ['Bash', true],
      ['Bash', true],
      ['Bash', false],
      // The capture after the stop finds it gone too: no rebuild left, no patch.
      ['patch capture', false],
    ]);
    expect(result.patchError).toMatch(/is not running.*lost 4 times/);
  });
});
