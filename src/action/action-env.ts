// What `frognano action` reads of the GitHub Actions environment: the variables the runner sets
// for every step (the event and its payload file, the repository, the API and git hosts, the
// step's summary and output files, RUNNER_TEMP) and the credential the workflow passes (the
// workflow token, or the App's id and key). A missing or bad one is one line naming it.
import { accessSync, constants, readFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { readPrivateKey } from '../github/private-key.js';

export interface ActionEnv {
  eventName: string;
  /** The event's payload, as the runner wrote it to GITHUB_EVENT_PATH. */
  payload: Record<string, unknown>;
  owner: string;
  repo: string;
  apiUrl: string;
  serverUrl: string;
  credential: { kind: 'token'; token: string } | { kind: 'app'; appId: number; privateKey: string };
  /** FROGNANO_DATA_DIR, else `$RUNNER_TEMP/frognano`. */
  dataDir: string;
  stepSummary?: string;
  output?: string;
  /** One id per workflow run attempt (the queue's delivery id). */
  deliveryId: string;
  /** The workflow run's page, when the runner names the run (GITHUB_RUN_ID). */
  workflowRunUrl?: string;
}

/** A variable the runner should have set is missing or bad: exit 2 with this line. */
export class ActionEnvError extends Error {
  constructor(message: string) {
    super(message);
    this.name = 'ActionEnvError';
  }
}

const HTTP_URL = /^https?:\/\/\S+$/;
const WORKFLOW = 'run `frognano action` as a step of a GitHub Actions workflow, which sets it';
// The runner sets the other variables for every step, but the token only where it is passed.
const PASS_TOKEN =
  'pass the workflow token to the step (env: GITHUB_TOKEN: ${{ github.token }}), or use the action, whose github-token input does';

/** Reads and checks the Actions environment; throws ActionEnvError with one line. */
export function readActionEnv(env: NodeJS.ProcessEnv, cwd = process.cwd()): ActionEnv {
  const eventName = required(env, 'GITHUB_EVENT_NAME');
  const payload = readPayload(required(env, 'GITHUB_EVENT_PATH'));
  const repository = required(env, 'GITHUB_REPOSITORY');
  const [owner, repo, ...rest] = repository.split('/');
  if (!owner || !repo || rest.length > 0) {
    throw new ActionEnvError(
      `GITHUB_REPOSITORY must be owner/name (got ${JSON.stringify(repository)})`,
    );
  }
  return {
    eventName,
    payload,
    owner,
    repo,
    apiUrl: url(env, 'GITHUB_API_URL', 'https://api.github.com'),
    serverUrl: url(env, 'GITHUB_SERVER_URL', 'https://github.com'),
    credential: credential(env, cwd),
    dataDir: set(env.FROGNANO_DATA_DIR)
      ? (env.FROGNANO_DATA_DIR as string)
      : join(required(env, 'RUNNER_TEMP', 'or FROGNANO_DATA_DIR'), 'frognano'),
    ...optional('stepSummary', stepFile(env, 'GITHUB_STEP_SUMMARY')),
    ...optional('output', stepFile(env, 'GITHUB_OUTPUT')),
    deliveryId: set(env.GITHUB_RUN_ID)
      ? `actions-${env.GITHUB_RUN_ID}-${env.GITHUB_RUN_ATTEMPT || '1'}`
      : `actions-${process.pid}-${Date.now()}`,
    ...optional(
      'workflowRunUrl',
      set(env.GITHUB_RUN_ID) && /^\d+$/.test(env.GITHUB_RUN_ID!.trim())
        ? `${url(env, 'GITHUB_SERVER_URL', 'https://github.com').replace(/\/+$/, '')}/${owner}/${repo}/actions/runs/${env.GITHUB_RUN_ID!.trim()}`
        : undefined,
    ),
  };
}

function optional<K extends string>(key: K, value: string | undefined): { [P in K]?: string } {
  return (value === undefined ? {} : { [key]: value }) as { [P in K]?: string };
}

function set(value: string | undefined): boolean {
  return value !== undefined && value.trim() !== '';
}

function required(
  env: NodeJS.ProcessEnv,
  name: string,
  alternative?: string,
  fix = WORKFLOW,
): string {
  const value = env[name];
  if (!set(value)) {
    const or = alternative ? ` (${alternative})` : '';
    throw new ActionEnvError(`${name}${or} is not set: ${fix}`);
  }
  return (value as string).trim();
}

/**
 * A step file the runner reads after the step (GITHUB_OUTPUT, GITHUB_STEP_SUMMARY): checked
 * now, without writing, so a bad one stops the step before a run rather than after it.
 */
function stepFile(env: NodeJS.ProcessEnv, name: string): string | undefined {
  const file = env[name];
  if (!set(file)) return undefined;
  try {
    accessSync(file as string, constants.W_OK);
  } catch (error) {
    let code = (error as NodeJS.ErrnoException).code ?? 'unwritable';
    // The runner makes the file; one that is not there yet is fine where it can be made.
    if (code === 'ENOENT') {
      try {
        accessSync(dirname(file as string), constants.W_OK);
        return file;
      } catch (parent) {
        code = (parent as NodeJS.ErrnoException).code ?? code;
      }
    }
    throw new ActionEnvError(
      `${name} names ${JSON.stringify(file)}, which cannot be written (${code})`,
    );
  }
  return file;
}

function url(env: NodeJS.ProcessEnv, name: string, fallback: string): string {
  const value = set(env[name]) ? (env[name] as string).trim() : fallback;
  if (!HTTP_URL.test(value) || !URL.canParse(value)) {
    throw new ActionEnvError(`${name} must be an http(s) URL (got ${JSON.stringify(value)})`);
  }
  return value.replace(/\/+$/, '');
}

function readPayload(path: string): Record<string, unknown> {
  let text: string;
  try {
    text = readFileSync(path, 'utf8');
  } catch (error) {
    const code = (error as NodeJS.ErrnoException).code ?? 'unreadable';
    throw new ActionEnvError(
      `GITHUB_EVENT_PATH names ${JSON.stringify(path)}, which cannot be read (${code})`,
    );
  }
  let parsed: unknown;
  try {
    parsed = JSON.parse(text);
  } catch {
    throw new ActionEnvError(`GITHUB_EVENT_PATH names ${JSON.stringify(path)}, which is not JSON`);
  }
  if (typeof parsed !== 'object' || parsed === null || Array.isArray(parsed)) {
    throw new ActionEnvError(
      `GITHUB_EVENT_PATH names ${JSON.stringify(path)}, which holds no event payload (a JSON object)`,
    );
  }
  return parsed as Record<string, unknown>;
}

/** The App's id and key when both are set (its installation token is minted), else the token. */
function credential(env: NodeJS.ProcessEnv, cwd: string): ActionEnv['credential'] {
  const appId = env.APP_ID?.trim() ?? '';
  const key = env.PRIVATE_KEY ?? '';
  if (set(appId) || set(key)) {
    if (!set(appId))
      throw new ActionEnvError(
        'APP_ID is not set, but PRIVATE_KEY is: set both, or neither to use GITHUB_TOKEN',
      );
    if (!set(key))
      throw new ActionEnvError(
        'PRIVATE_KEY is not set, but APP_ID is: set both, or neither to use GITHUB_TOKEN',
      );
    if (!/^\d+$/.test(appId) || Number(appId) <= 0) {
      throw new ActionEnvError(`APP_ID must be the numeric App ID (got ${JSON.stringify(appId)})`);
    }
    const pem = readPrivateKey(key, cwd);
    if ('problem' in pem) throw new ActionEnvError(`PRIVATE_KEY is not a PEM key: ${pem.problem}`);
    return { kind: 'app', appId: Number(appId), privateKey: pem.pem };
  }
  return {
    kind: 'token',
    token: required(env, 'GITHUB_TOKEN', 'or APP_ID and PRIVATE_KEY', PASS_TOKEN).trim(),
  };
}
