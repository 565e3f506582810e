// Time and host-memory bounds of the Docker sandbox against a real engine (issue 8, items 2-4):
// a timeout kills everything the command started, wherever it went; Read and Edit never bring
// the file to the host; the process-limit note survives a truncated observation.
import { afterAll, beforeAll, expect, it } from 'vitest';
import { executeTool } from '../../src/leaf/tools.js';
import { createDockerSandbox, type DockerSandbox } from '../../src/sandbox/docker-sandbox.js';
import {
  describeDocker,
  ensureSandboxImage,
  removeLabelledContainers,
  testRunId,
} from '../support/docker-engine.js';

const runId = testRunId('time-memory');
const MiB = 1024 * 1024;

/** Leaf's Read observation of a file of `lines` empty lines named `name`, built arithmetically. */
function emptyLinesObservation(name: string, lines: number): string {
  const parts = [`${name}\n`];
  let shown = parts[0]!.length;
  let total = shown;
  for (let n = 1; n <= lines; n++) {
    const piece = `${n === 1 ? '' : '\n'}${n}. `;
    total += piece.length;
    if (shown < 20_000) {
      parts.push(piece);
      shown += piece.length;
    }
  }
  const text = parts.join('');
  return total <= 20_000 ? text : `${text.slice(0, 20_000)}\n[truncated ${total - 20_000} chars]`;
}

describeDocker('DockerSandbox time and memory bounds (real Docker)', () => {
  let sandbox: DockerSandbox;

  beforeAll(async () => {
    await ensureSandboxImage();
    sandbox = await createDockerSandbox({
      runId,
      repo: 'test/time-memory',
      limits: { memoryBytes: 512 * MiB, pidsLimit: 128, nanoCpus: 1_000_000_000 },
    });
  }, 60_000);

  afterAll(async () => {
    await sandbox?.dispose();
    await removeLabelledContainers(runId);
  });

  const processes = async (): Promise<string> =>
    (await sandbox.exec('ps -eo args=')).stdout.toString();

  it('a timeout kills what the command started wherever it went; init, the container and the helper stay', async () => {
    const result = await sandbox.exec(
      [
        '(setsid sleep 61 > /dev/null 2>&1 &)',
        'setsid sleep 62 > /dev/null 2>&1 &',
        'timeout 1000 sleep 63 > /dev/null 2>&1 &',
        'sleep 0.5; sleep 64',
      ].join('\n'),
      { timeoutMs: 1500 },
    );
    expect(result.timedOut).toBe(true);
    const left = await processes();
    expect(left).not.toMatch(/sleep 6[1-4]/);
    expect(left).toContain('sleep infinity');
    expect((await sandbox.exec('echo alive')).stdout.toString()).toBe('alive\n');
  }, 30_000);

  it('an abort kills the strays too', async () => {
    const controller = new AbortController();
    setTimeout(() => controller.abort(), 1500);
    const result = await sandbox.exec('setsid sleep 66 > /dev/null 2>&1 & sleep 67', {
      signal: controller.signal,
    });
    expect(result.exitCode).toBe(-9);
    expect(await processes()).not.toMatch(/sleep 6[67]/);
  }, 30_000);

  it('a command that ends by itself leaves its background process running', async () => {
    const result = await sandbox.exec('setsid sleep 65 > /dev/null 2>&1 &');
    expect(result.exitCode).toBe(0);
    expect(await processes()).toContain('sleep 65');
    await sandbox.exec('pkill -f "sleep 65"');
  }, 30_000);

  it('an escaped fork bomb is gone after the timeout', async () => {
    const result = await sandbox.exec(
      "setsid bash -c ':(){ :|:& };:' > /dev/null 2>&1 & sleep 30",
      {
        timeoutMs: 3000,
      },
    );
    expect(result.timedOut).toBe(true);
    const count = await sandbox.exec('ps -e --no-headers | wc -l');
    // init, sleep infinity, the tool helper, this shell, ps and wc.
    expect(Number(count.stdout.toString().trim())).toBeLessThan(10);
  }, 60_000);

  it('the process-limit note follows a truncated Bash observation', async () => {
    const observation = await executeTool(
      sandbox,
      'Bash',
      JSON.stringify({
        command: "head -c 100000 /dev/zero | tr '\\0' x >&2; :(){ :|:& };:",
        timeout: 5,
      }),
    );
    expect(observation).toMatch(
      /\n\[truncated \d+ chars\]\n\[frognano sandbox\] process limit reached: fork failed at the limit of 128 processes$/,
    );
  }, 60_000);

  it('reads a file beyond the old 64 MiB transport limit: exact observation, bounded transfer', async () => {
    const lines = 96 * MiB;
    const made = await sandbox.exec(`head -c ${lines} /dev/zero | tr '\\0' '\\n' > huge.txt`);
    expect(made.exitCode).toBe(0);
    const observation = await executeTool(sandbox, 'Read', '{"file_path": "huge.txt"}');
    expect(observation).toBe(emptyLinesObservation('huge.txt', lines));
    const tail = await executeTool(
      sandbox,
      'Read',
      JSON.stringify({ file_path: 'huge.txt', offset: lines - 1, limit: 5 }),
    );
    expect(tail).toBe(`huge.txt\n${lines - 1}. \n${lines}. `);
  }, 120_000);

  it('edits a large file in the sandbox', async () => {
    const made = await sandbox.exec(
      `head -c ${32 * MiB} /dev/zero | tr '\\0' '\\n' > edit.txt; echo marker >> edit.txt`,
    );
    expect(made.exitCode).toBe(0);
    expect(
      await executeTool(
        sandbox,
        'Edit',
        JSON.stringify({
          file_path: 'edit.txt',
          old_string: '\n\n',
          new_string: '',
          replace_all: true,
        }),
      ),
    ).toBe(`Edited edit.txt (${16 * MiB} replacements).`);
    const size = await sandbox.exec('stat -c %s edit.txt; cat edit.txt');
    expect(size.stdout.toString()).toBe('7\nmarker\n');
  }, 120_000);
});
