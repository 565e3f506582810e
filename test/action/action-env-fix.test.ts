// `frognano action` from the outside, on an event that is not for the bot (no GitHub call, no
// model): an environment it cannot work in is exit 2 and one line that names the variable and
// says how to set it right, before any run could start.
import { mkdtempSync, readdirSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import pino from 'pino';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { runAction } from '../../src/action/run-action.js';

let dir: string;
beforeEach(() => {
  dir = mkdtempSync(join(tmpdir(), 'frognano-action-env-'));
});
afterEach(() => rmSync(dir, { recursive: true, force: true }));

/** A runner's environment for an `issues` `labeled` event with another label. */
function runnerEnv(extra: NodeJS.ProcessEnv = {}): NodeJS.ProcessEnv {
  const eventPath = join(dir, 'event.json');
  writeFileSync(
    eventPath,
    JSON.stringify({
      action: 'labeled',
      label: { name: 'bug' },
      issue: { number: 1, title: 't', body: 'b', user: { login: 'octocat', type: 'User' } },
      repository: { name: 'Hello-World', owner: { login: 'Codertocat' } },
      sender: { login: 'octocat', type: 'User' },
    }),
  );
  return {
    GITHUB_EVENT_NAME: 'issues',
    GITHUB_EVENT_PATH: eventPath,
    GITHUB_REPOSITORY: 'Codertocat/Hello-World',
    GITHUB_TOKEN: 'ghs_x',
    RUNNER_TEMP: join(dir, 'temp'),
    ...extra,
  };
}

async function act(env: NodeJS.ProcessEnv): Promise<{ code: number; stderr: string[] }> {
  const stderr: string[] = [];
  const code = await runAction({
    env,
    cwd: dir,
    log: pino({ level: 'silent' }),
    stderr: (line) => stderr.push(line),
  });
  return { code, stderr };
}

describe('frognano action: the environment', () => {
  it('handles the event with a good environment, and writes nothing but the step files', async () => {
    const env = runnerEnv({ GITHUB_OUTPUT: join(dir, 'out') });
    writeFileSync(join(dir, 'out'), '');
    expect(await act(env)).toEqual({ code: 0, stderr: [] });
    expect(readdirSync(dir).sort()).toEqual(['event.json', 'out']);
  });

  it('says how to pass the workflow token, which a workflow does not set by itself', async () => {
    expect(await act(runnerEnv({ GITHUB_TOKEN: undefined }))).toEqual({
      code: 2,
      stderr: [
        'frognano: GITHUB_TOKEN (or APP_ID and PRIVATE_KEY) is not set: pass the workflow token to the step (env: GITHUB_TOKEN: ${{ github.token }}), or use the action, whose github-token input does',
      ],
    });
  });

  it.each(['GITHUB_OUTPUT', 'GITHUB_STEP_SUMMARY'])(
    'refuses a %s it cannot write, naming it, before anything runs',
    async (name) => {
      const file = join(dir, 'missing-dir', 'file');
      expect(await act(runnerEnv({ [name]: file }))).toEqual({
        code: 2,
        stderr: [`frognano: ${name} names "${file}", which cannot be written (ENOENT)`],
      });
    },
  );
});
