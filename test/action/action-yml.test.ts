// action.yml and the README's workflow: what a repository copies must be what `frognano action`
// reads. The action's inputs become the App's own variables, its outputs are the step's, and the
// workflow listens to the four events with the permissions and the concurrency group it needs.
import { readFileSync } from 'node:fs';
import { parse } from 'yaml';
import { describe, expect, it } from 'vitest';
import { ProcessConfig } from '../../src/config.js';
import { AppEnv } from '../../src/github/app-config.js';

interface Step {
  id?: string;
  uses?: string;
  run?: string;
  env?: Record<string, string>;
  with?: Record<string, unknown>;
}
interface ActionYml {
  inputs: Record<string, { required?: boolean; default?: string; description: string }>;
  outputs: Record<string, { value: string }>;
  runs: { using: string; steps: Step[] };
}

const action = parse(readFileSync('action.yml', 'utf8')) as ActionYml;
const frognanoStep = action.runs.steps.find((s) => s.id === 'frognano') as Step;

describe('action.yml', () => {
  it('takes the inputs the README lists; only model-url is required', () => {
    expect(Object.keys(action.inputs)).toEqual([
      'model-url',
      'model',
      'api-key',
      'label',
      'attempts',
      'sandbox',
      'github-token',
      'app-id',
      'private-key',
    ]);
    const required = Object.entries(action.inputs).filter(([, i]) => i.required);
    expect(required.map(([name]) => name)).toEqual(['model-url']);
    expect(action.inputs['github-token']?.default).toBe('${{ github.token }}');
  });

  it('runs `frognano action` with every input as the variable the CLI reads', () => {
    expect(action.runs.using).toBe('composite');
    expect(frognanoStep.run).toBe('node "$GITHUB_ACTION_PATH/bin/frognano.js" action');
    const env = frognanoStep.env ?? {};
    const known = new Set([
      ...Object.keys(ProcessConfig.shape),
      ...Object.keys(AppEnv.shape),
      'GITHUB_TOKEN',
    ]);
    for (const name of Object.keys(env)) expect(known, name).toContain(name);
    const inputs = Object.values(env).map((v) => /^\$\{\{ inputs\.([a-z-]+) \}\}$/.exec(v)?.[1]);
    expect(inputs.sort()).toEqual(Object.keys(action.inputs).sort());
  });

  it("has the four outputs, the frognano step's", () => {
    expect(action.outputs).toEqual({
      outcome: { description: expect.any(String), value: '${{ steps.frognano.outputs.outcome }}' },
      'run-id': { description: expect.any(String), value: '${{ steps.frognano.outputs.run-id }}' },
      'pr-number': {
        description: expect.any(String),
        value: '${{ steps.frognano.outputs.pr-number }}',
      },
      'pr-url': { description: expect.any(String), value: '${{ steps.frognano.outputs.pr-url }}' },
    });
  });

  it("installs only the action's own production dependencies, and only on a cache miss", () => {
    const install = action.runs.steps.find((s) => s.run?.startsWith('npm '));
    expect(install?.run).toBe('npm ci --omit=dev --no-audit --no-fund');
    const cache = action.runs.steps.find((s) => s.uses?.startsWith('actions/cache@'));
    expect(cache?.with?.path).toBe('${{ github.action_path }}/node_modules');
  });
});

describe('the documented workflow (docs/actions.md)', () => {
  const readme = readFileSync('docs/actions.md', 'utf8');
  const section = readme.slice(readme.indexOf('## Run it as a GitHub Actions workflow'));
  const block = /```yaml\n([\s\S]*?)```/.exec(section)?.[1] ?? '';
  const workflow = parse(block) as {
    on: Record<string, { types: string[] }>;
    permissions: Record<string, string>;
    jobs: Record<
      string,
      { if: string; concurrency: { group: string; 'cancel-in-progress': boolean }; steps: Step[] }
    >;
  };
  const job = Object.values(workflow.jobs)[0]!;

  it('listens to the four events the bot handles', () => {
    expect(workflow.on).toEqual({
      issues: { types: ['labeled'] },
      issue_comment: { types: ['created'] },
      pull_request_review: { types: ['submitted'] },
      pull_request_review_comment: { types: ['created'] },
    });
  });

  it('asks for contents, issues and pull-requests write, and nothing else', () => {
    expect(workflow.permissions).toEqual({
      contents: 'write',
      issues: 'write',
      'pull-requests': 'write',
    });
  });

  it('runs one event per issue or pull request at a time; a cancel does not wait', () => {
    expect(job.concurrency['cancel-in-progress']).toBe(false);
    expect(job.concurrency.group).toContain('github.event.issue.number');
    expect(job.concurrency.group).toContain('github.event.pull_request.number');
    expect(job.concurrency.group).toContain("'/frognano cancel'");
  });

  it("leaves bots out before a runner is taken (the App's own comments start workflows)", () => {
    expect(job.if).toMatch(/^github\.event\.sender\.type != 'Bot' && \(/);
    for (const event of Object.keys(workflow.on)) expect(job.if).toContain(`'${event}'`);
  });

  it('uses the action with the required input', () => {
    const step = job.steps.find((s) => s.uses?.includes('frognano-bot@'));
    expect(step?.with?.['model-url']).toMatch(/^http/);
  });
});
