// The workflow environment `frognano action` reads: one line for what is missing or bad.
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { readActionEnv } from '../../src/action/action-env.js';

let dir: string;
afterEach(() => rmSync(dir, { recursive: true, force: true }));

function runnerEnv(payload: string | undefined, extra: NodeJS.ProcessEnv = {}): NodeJS.ProcessEnv {
  dir = mkdtempSync(join(tmpdir(), 'frognano-env-'));
  const eventPath = join(dir, 'event.json');
  if (payload !== undefined) writeFileSync(eventPath, payload);
  return {
    GITHUB_EVENT_NAME: 'issues',
    GITHUB_EVENT_PATH: eventPath,
    GITHUB_REPOSITORY: 'Codertocat/Hello-World',
    GITHUB_TOKEN: 'ghs_x',
    RUNNER_TEMP: dir,
    ...extra,
  };
}

describe('readActionEnv', () => {
  it('reads a runner environment, with the defaults of github.com', () => {
    const env = readActionEnv(runnerEnv('{"action":"labeled"}', { GITHUB_RUN_ID: '42' }));
    expect(env).toMatchObject({
      eventName: 'issues',
      payload: { action: 'labeled' },
      owner: 'Codertocat',
      repo: 'Hello-World',
      apiUrl: 'https://api.github.com',
      serverUrl: 'https://github.com',
      credential: { kind: 'token', token: 'ghs_x' },
      dataDir: join(dir, 'frognano'),
      deliveryId: 'actions-42-1',
      workflowRunUrl: 'https://github.com/Codertocat/Hello-World/actions/runs/42',
    });
  });

  it('links the workflow run on the server it runs on, and none without a run id', () => {
    const ghes = readActionEnv(
      runnerEnv('{}', { GITHUB_RUN_ID: '7', GITHUB_SERVER_URL: 'https://ghe.example.com/' }),
    );
    expect(ghes.workflowRunUrl).toBe(
      'https://ghe.example.com/Codertocat/Hello-World/actions/runs/7',
    );
    expect(readActionEnv(runnerEnv('{}')).workflowRunUrl).toBeUndefined();
  });

  it.each([
    [undefined, /^GITHUB_EVENT_PATH names ".*", which cannot be read \(ENOENT\)$/],
    ['not json', /^GITHUB_EVENT_PATH names ".*", which is not JSON$/],
    ['[1]', /which holds no event payload/],
  ])('refuses the event file %o in one line', (payload, line) => {
    expect(() => readActionEnv(runnerEnv(payload))).toThrow(line);
  });

  it('takes FROGNANO_DATA_DIR over RUNNER_TEMP, and needs one of them', () => {
    expect(readActionEnv(runnerEnv('{}', { FROGNANO_DATA_DIR: '/d' })).dataDir).toBe('/d');
    expect(() => readActionEnv(runnerEnv('{}', { RUNNER_TEMP: '' }))).toThrow(
      'RUNNER_TEMP (or FROGNANO_DATA_DIR) is not set',
    );
  });

  it('refuses a private key that is not one, naming PRIVATE_KEY', () => {
    expect(() => readActionEnv(runnerEnv('{}', { APP_ID: '1', PRIVATE_KEY: 'not a key' }))).toThrow(
      /^PRIVATE_KEY is not a PEM key: /,
    );
  });
});
