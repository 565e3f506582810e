// `frognano action` as a GitHub Actions runner starts it: the real CLI in a child process, with
// the environment a runner gives a step (the event payload in a file, the step's output and
// summary files, a fresh RUNNER_TEMP for every workflow run) and the workflow token. GitHub is
// the strict loopback fake (test/github/helpers/app-harness.ts) that takes only that token (or
// the tokens it minted for the App), the repository is served over smart HTTP behind the same
// tokens, and the model is the scripted server.
import { execFile, execFileSync, type ChildProcess } from 'node:child_process';
import { mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import {
  ALLOW_LOCAL_SANDBOX_VALUE,
  ALLOW_LOCAL_SANDBOX_VARIABLE,
} from '../../../src/action/local-sandbox-guard.js';
import { createPythonRepo } from '../../support/python-repo.js';
import {
  startScriptedModelServer,
  type ScriptedModelServer,
  type ScriptStep,
} from '../../support/scripted-model-server.js';
import {
  newGitHubMock,
  OWNER,
  PYTHON,
  REPO,
  startFakeGitHub,
  type FakeGitHub,
  type GitHubMock,
} from '../../github/helpers/app-harness.js';
import { startGitHttpServer, type GitHttpServer } from '../../github/helpers/git-http-server.js';

const CLI = resolve('bin/frognano.js');

/** The workflow token of every run (`${{ github.token }}`): GitHub takes it like a minted one. */
export const WORKFLOW_TOKEN = 'ghs_workflowtoken000000000000000000000';

export interface ActionRun {
  code: number | null;
  stdout: string;
  stderr: string;
  /** GITHUB_OUTPUT as the runner reads it. */
  outputs: Record<string, string>;
  /** GITHUB_STEP_SUMMARY's content. */
  summary: string;
  /** The run's RUNNER_TEMP (gone with the runner in real life; kept here to look at). */
  runnerTemp: string;
  /** The workflow environment it ran in (GITHUB_RUN_ID, GITHUB_SERVER_URL, …). */
  env: NodeJS.ProcessEnv;
}

export interface ActionHarnessOptions {
  script?: ScriptStep[];
  onExhausted?: ScriptStep;
  sandbox?: 'local' | 'docker';
  /** python for the repository's test command (Docker: python3). */
  python?: string;
  config?: string;
}

export interface ActionHarness {
  root: string;
  bare: string;
  base: string;
  gh: GitHubMock;
  fake: FakeGitHub;
  git: GitHttpServer;
  model: ScriptedModelServer;
  /** One workflow run on a fresh runner: writes the event file, runs `frognano action`. */
  run(event: string, payload: unknown, env?: NodeJS.ProcessEnv): Promise<ActionRun>;
  /** The same, returning the child at once (a cancel test signals it or runs another). */
  start(event: string, payload: unknown, env?: NodeJS.ProcessEnv): StartedRun;
  stop(): Promise<void>;
}

export interface StartedRun {
  child: ChildProcess;
  done: Promise<ActionRun>;
}

export async function startActionHarness(o: ActionHarnessOptions = {}): Promise<ActionHarness> {
  const root = mkdtempSync(join(tmpdir(), 'frognano-action-'));
  const python = o.python ?? PYTHON;
  const repo = createPythonRepo(join(root, 'src'), {
    '.github/frognano.yml': `max_steps: 30\ntest: ${python} -m pytest\n${o.config ?? ''}`,
  });
  const bare = join(root, 'git', OWNER, `${REPO}.git`);
  mkdirSync(join(root, 'git', OWNER), { recursive: true });
  execFileSync('git', ['clone', '-q', '--bare', repo.dir, bare]);
  const base = execFileSync('git', ['rev-parse', 'HEAD'], { cwd: bare, encoding: 'utf8' }).trim();
  const gh = newGitHubMock('fake');
  gh.tokens.add(WORKFLOW_TOKEN);
  const fake = await startFakeGitHub(gh);
  const git = await startGitHttpServer(join(root, 'git'), (token) => gh.tokens.has(token));
  const model = await startScriptedModelServer({
    script: o.script ?? [],
    ...(o.onExhausted ? { onExhausted: o.onExhausted } : {}),
  });
  let runs = 0;
  const start = (event: string, payload: unknown, env: NodeJS.ProcessEnv = {}): StartedRun => {
    const runnerTemp = join(root, `runner-${++runs}`, '_temp');
    const commands = join(runnerTemp, '_runner_file_commands');
    mkdirSync(commands, { recursive: true });
    mkdirSync(join(runnerTemp, '_github_workflow'), { recursive: true });
    const eventPath = join(runnerTemp, '_github_workflow', 'event.json');
    writeFileSync(eventPath, JSON.stringify(payload));
    const output = join(commands, `set_output_${runs}`);
    const summary = join(commands, `step_summary_${runs}`);
    writeFileSync(output, '');
    writeFileSync(summary, '');
    const workspace = join(root, `runner-${runs}`, 'work', REPO, REPO);
    mkdirSync(workspace, { recursive: true });
    const childEnv: NodeJS.ProcessEnv = {
      PATH: process.env.PATH,
      HOME: process.env.HOME,
      CI: 'true',
      GITHUB_ACTIONS: 'true',
      GITHUB_EVENT_NAME: event,
      GITHUB_EVENT_PATH: eventPath,
      GITHUB_REPOSITORY: `${OWNER}/${REPO}`,
      GITHUB_REPOSITORY_OWNER: OWNER,
      GITHUB_API_URL: fake.url,
      GITHUB_GRAPHQL_URL: `${fake.url}/graphql`,
      GITHUB_SERVER_URL: git.url,
      GITHUB_RUN_ID: String(9000 + runs),
      GITHUB_RUN_ATTEMPT: '1',
      GITHUB_WORKFLOW: 'frognano',
      GITHUB_ACTOR: 'Codertocat',
      GITHUB_WORKSPACE: workspace,
      GITHUB_OUTPUT: output,
      GITHUB_STEP_SUMMARY: summary,
      RUNNER_TEMP: runnerTemp,
      RUNNER_OS: 'Linux',
      GITHUB_TOKEN: WORKFLOW_TOKEN,
      FROGNANO_MODEL_URL: model.baseUrl,
      FROGNANO_SANDBOX: o.sandbox ?? 'local',
      // A local sandbox under GITHUB_ACTIONS=true needs the operator's opt-in, by name.
      ...((o.sandbox ?? 'local') === 'local'
        ? { [ALLOW_LOCAL_SANDBOX_VARIABLE]: ALLOW_LOCAL_SANDBOX_VALUE }
        : {}),
      FROGNANO_STATUS_THROTTLE_MS: '0',
      FROGNANO_MODEL_MAX_RETRIES: '0',
      LOG_LEVEL: process.env.FROGNANO_TEST_LOG ? 'debug' : 'warn',
      ...env,
    };
    for (const [k, v] of Object.entries(childEnv)) if (v === undefined) delete childEnv[k];
    let child!: ChildProcess;
    const done = new Promise<ActionRun>((resolveRun) => {
      child = execFile(
        process.execPath,
        [CLI, 'action'],
        { cwd: workspace, env: childEnv, timeout: 300_000, maxBuffer: 64 * 1024 * 1024 },
        (error, stdout, stderr) => {
          if (process.env.FROGNANO_TEST_LOG) process.stderr.write(stderr);
          resolveRun({
            code: error ? (typeof error.code === 'number' ? error.code : null) : 0,
            stdout,
            stderr,
            outputs: parseOutputs(readFileSync(output, 'utf8')),
            summary: readFileSync(summary, 'utf8'),
            runnerTemp,
            env: childEnv,
          });
        },
      );
    });
    return { child, done };
  };
  return {
    root,
    bare,
    base,
    gh,
    fake,
    git,
    model,
    start,
    run: (event, payload, env) => start(event, payload, env).done,
    async stop() {
      await fake.close();
      await git.close();
      await model.close();
      rmSync(root, { recursive: true, force: true });
    },
  };
}

/** GITHUB_OUTPUT's `name<<DELIMITER … DELIMITER` blocks (and `name=value` lines), as the runner reads them. */
export function parseOutputs(text: string): Record<string, string> {
  const outputs: Record<string, string> = {};
  const lines = text.split('\n');
  for (let i = 0; i < lines.length; i++) {
    const line = lines[i] as string;
    const heredoc = /^([^=<]+)<<(.+)$/.exec(line);
    if (heredoc) {
      const [, name, delimiter] = heredoc as unknown as [string, string, string];
      const value: string[] = [];
      for (i++; i < lines.length && lines[i] !== delimiter; i++) value.push(lines[i] as string);
      if (i >= lines.length) throw new Error(`output ${name}: no closing delimiter`);
      outputs[name] = value.join('\n');
    } else if (line.includes('=')) {
      outputs[line.slice(0, line.indexOf('='))] = line.slice(line.indexOf('=') + 1);
    }
  }
  return outputs;
}
