// `frognano config show [--repo DIR]`: the configuration a run in DIR would use, as YAML, each
// key marked with where its value came from: frognano's defaults, `.github/frognano.yml` (as it
// is in the working tree), the operator's caps (FROGNANO_MAX_*), the detected test command.
import { stat } from 'node:fs/promises';
import path from 'node:path';
import { stringify } from 'yaml';
import { repoConfigCaps } from '../config.js';
import { DEFAULT_MAX_STEPS } from '../leaf/protocol.js';
import { configLayer, mergeConfigLayers } from '../runner/config-layers.js';
import { detectTestCommand } from '../runner/detect-test-command.js';
import {
  DEFAULT_BLOCKED_PATHS,
  DEFAULT_INSTRUCTION_FILES,
  DEFAULT_TIMEOUT_MINUTES,
  MAX_ATTEMPTS,
  REPO_CONFIG_PATH,
  RepoConfigError,
  capRepoConfig,
  readRepoConfigText,
} from '../runner/repo-config.js';
import { DEFAULT_SANDBOX_IMAGE } from '../sandbox/docker-sandbox.js';
import { UsageError } from './solve-options.js';
import { terminalText } from './terminal-text.js';

export interface ConfigShowIo {
  stdout: (line: string) => void;
  stderr: (line: string) => void;
  env: NodeJS.ProcessEnv;
  cwd?: string;
}

type Row = [key: string, value: unknown, from: string];
type Layer = ReturnType<typeof configLayer>;

export async function configShowCommand(
  options: { repo?: string },
  io: ConfigShowIo,
): Promise<number> {
  const dir = path.resolve(io.cwd ?? process.cwd(), options.repo ?? '.');
  if (!(await stat(dir).catch(() => undefined))?.isDirectory()) {
    throw new UsageError(
      `--repo ${options.repo ?? '.'} is not a directory: give a repository's directory`,
    );
  }
  let layer: Layer | undefined;
  try {
    layer = await readLayer(dir);
  } catch (error) {
    if (!(error instanceof RepoConfigError)) throw error;
    io.stderr(`frognano: ${terminalText(error.message)}`);
    return 1;
  }
  printRows(io, dir, layer, await configRows(dir, layer, io.env));
  return 0;
}

/** The working tree's `.github/frognano.yml` as a layer (undefined: there is none). */
async function readLayer(dir: string): Promise<Layer | undefined> {
  const text = await readRepoConfigText(dir);
  return text === undefined ? undefined : configLayer({ name: REPO_CONFIG_PATH, text });
}

/** Each key's value and where it came from, in the order they are shown. */
async function configRows(
  dir: string,
  layer: Layer | undefined,
  env: NodeJS.ProcessEnv,
): Promise<Row[]> {
  const { config: asked, origins } = mergeConfigLayers(layer ? [layer] : []);
  const caps = repoConfigCaps(env);
  const config = capRepoConfig(asked, caps);
  const fromFile = (key: string) => (origins[key] ? REPO_CONFIG_PATH : undefined);
  const detected = config.test ? undefined : await detectTestCommand(dir);
  const imageEnv = env.FROGNANO_SANDBOX_IMAGE?.trim();

  const rows: Row[] = [
    [
      'image',
      config.image ?? imageEnv ?? DEFAULT_SANDBOX_IMAGE,
      fromFile('image') ?? (imageEnv ? 'FROGNANO_SANDBOX_IMAGE' : 'default'),
    ],
    ['setup', config.setup, fromFile('setup') ?? 'default'],
    [
      'network',
      config.network,
      asked.network !== config.network
        ? `FROGNANO_SETUP_NETWORK_CAP (${fromFile('network') ? 'the file asks' : 'the default is'} ${asked.network})`
        : (fromFile('network') ?? 'default'),
    ],
    ['network_allow', config.network_allow ?? [], fromFile('network_allow') ?? 'default (none)'],
    [
      'test',
      config.test ?? detected?.command ?? null,
      fromFile('test') ??
        (detected
          ? terminalText(detected.detail)
          : 'none configured or detected: the run has no tests'),
    ],
    ['instructions', config.instructions ?? null, fromFile('instructions') ?? 'default (none)'],
    [
      'instructions_files',
      config.instructions_files ?? [...DEFAULT_INSTRUCTION_FILES],
      fromFile('instructions_files') ?? 'default',
    ],
    ...cappedRows(asked, config, caps, fromFile),
  ];
  rows.push([
    'blocked_paths',
    config.blocked_paths,
    fromFile('blocked_paths')
      ? `default (${DEFAULT_BLOCKED_PATHS.join(', ')}) + ${REPO_CONFIG_PATH}`
      : 'default',
  ]);
  return rows;
}

type RepoConfig = ReturnType<typeof capRepoConfig>;

/** The keys the operator caps: a capped value says what the file (or default) asked. */
function cappedRows(
  asked: ReturnType<typeof mergeConfigLayers>['config'],
  config: RepoConfig,
  caps: ReturnType<typeof repoConfigCaps>,
  fromFile: (key: string) => string | undefined,
): Row[] {
  const capped = (key: string, cap: string, value: number | undefined, fallback: number) => {
    const shown = value ?? fallback;
    if (asked[key as 'max_steps'] !== config[key as 'max_steps']) {
      const wanted = asked[key as 'max_steps'] ?? fallback;
      return {
        value: shown,
        from: `${cap} (${fromFile(key) ? 'the file asks' : 'the default is'} ${wanted})`,
      };
    }
    return { value: shown, from: fromFile(key) ?? 'default' };
  };
  const rows: Row[] = [];
  for (const [key, cap, fallback] of [
    ['max_steps', 'FROGNANO_MAX_STEPS_CAP', DEFAULT_MAX_STEPS],
    ['timeout_minutes', 'FROGNANO_MAX_TIMEOUT_MINUTES_CAP', DEFAULT_TIMEOUT_MINUTES],
    ['attempts', 'FROGNANO_MAX_ATTEMPTS', 1],
  ] as const) {
    const { value, from } = capped(key, cap, config[key], fallback);
    rows.push([
      key,
      value,
      key === 'attempts' && from === 'default'
        ? `default (at most ${caps.attempts ?? MAX_ATTEMPTS})`
        : from,
    ]);
  }
  return rows;
}

/** The rows as YAML, each key's first line marked with where its value came from. */
function printRows(io: ConfigShowIo, dir: string, layer: Layer | undefined, rows: Row[]): void {
  io.stdout(`# What a run in ${terminalText(dir)} would use. \`frognano solve\` reads only this`);
  io.stdout("# file; the App also applies the owner's .github repository's file beneath it.");
  if (layer?.extends !== undefined) {
    io.stdout(
      `# _extends: ${terminalText(layer.extends)} (followed by the App only: to the owner's .github repository, or to a repository no more private than this one)`,
    );
  }
  for (const [key, value, from] of rows) {
    const [first = '', ...rest] = stringify({ [key]: value }, { lineWidth: 0 })
      .trimEnd()
      .split('\n');
    io.stdout(`${first} # ${from}`);
    for (const line of rest) io.stdout(line);
  }
}
