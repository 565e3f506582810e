// `.github/frognano.yml`: the repository's own say in how a run goes. The file comes
// from an untrusted tree, so it is read defensively (no symlinks, size cap) and every
// problem becomes one line that names the key, fit for an issue comment.
import { lstat, readFile, realpath } from 'node:fs/promises';
import path from 'node:path';
import { DEFAULT_MAX_STEPS } from '../leaf/protocol.js';
import type { SetupNetworkMode } from '../sandbox/egress-facts.js';
import { checkConfigBytes, checkConfigText } from './config-problems.js';
import { RepoConfig, RepoConfigError } from './repo-config-schema.js';

export {
  DEFAULT_BLOCKED_PATHS,
  DEFAULT_INSTRUCTION_FILES,
  KNOWN_KEYS,
  MAX_ATTEMPTS,
  RepoConfig,
  RepoConfigError,
} from './repo-config-schema.js';

export const REPO_CONFIG_PATH = '.github/frognano.yml';

/** Wall-clock budget of the agent loop when the config names none. */
export const DEFAULT_TIMEOUT_MINUTES = 30;

/** The operator's bounds (FROGNANO_MAX_STEPS_CAP, FROGNANO_MAX_TIMEOUT_MINUTES_CAP, FROGNANO_MAX_ATTEMPTS, FROGNANO_SETUP_NETWORK_CAP). */
export interface RepoConfigCaps {
  maxSteps?: number;
  timeoutMinutes?: number;
  attempts?: number;
  /** The most setup network a repository gets (none < registries < open). */
  network?: SetupNetworkMode;
}

const NETWORK_ORDER: readonly SetupNetworkMode[] = ['none', 'registries', 'open'];

/**
 * The setup network a repository gets: what it asks, or the operator's cap when it asks more.
 * A clamp, not a config error: the run goes on with less network and says so (the repository
 * cannot know the operator's cap, and `registries` is the default everyone asks for).
 */
export function capNetwork(
  asked: SetupNetworkMode,
  cap: SetupNetworkMode | undefined,
): SetupNetworkMode {
  if (cap === undefined) return asked;
  return NETWORK_ORDER.indexOf(asked) > NETWORK_ORDER.indexOf(cap) ? cap : asked;
}

/** Larger config files are refused unread (a config is a few hundred bytes). */
export const MAX_CONFIG_BYTES = 64 * 1024;

/** The defaults a repository without a config file gets. */
export function defaultRepoConfig(): RepoConfig {
  return RepoConfig.parse({});
}

/**
 * Reads and validates `.github/frognano.yml` under `treeDir`. Missing file → defaults.
 * Throws RepoConfigError (one line) for anything else that is wrong.
 */
export async function loadRepoConfig(
  treeDir: string,
  caps: RepoConfigCaps = {},
): Promise<RepoConfig> {
  const text = await readRepoConfigText(treeDir);
  return capRepoConfig(text === undefined ? defaultRepoConfig() : parseRepoConfig(text), caps);
}

/**
 * What a repository asks for, bounded by the operator: a budget above a cap becomes the cap,
 * and so does a default above it (a config without `max_steps` must not outrun the cap).
 */
export function capRepoConfig(config: RepoConfig, caps: RepoConfigCaps): RepoConfig {
  const bound = (asked: number | undefined, fallback: number, cap: number | undefined) =>
    cap === undefined || (asked ?? fallback) <= cap ? asked : cap;
  return {
    ...config,
    max_steps: bound(config.max_steps, DEFAULT_MAX_STEPS, caps.maxSteps),
    timeout_minutes: bound(config.timeout_minutes, DEFAULT_TIMEOUT_MINUTES, caps.timeoutMinutes),
    attempts: bound(config.attempts, 1, caps.attempts),
    network: capNetwork(config.network, caps.network),
  };
}

/**
 * The text of `.github/frognano.yml` under `treeDir` (undefined when there is none), refused
 * with one line when it is not a regular file of the tree, too large, or not text.
 */
export async function readRepoConfigText(treeDir: string): Promise<string | undefined> {
  const file = path.join(treeDir, REPO_CONFIG_PATH);
  let info;
  try {
    info = await lstat(file);
  } catch (error) {
    if (isNotFound(error)) return undefined;
    throw error;
  }
  // A symlink (of the file or of `.github`) could point at a host file and leak it
  // through the error comment; the tree is untrusted.
  const root = await realpath(treeDir);
  const real = await realpath(file);
  if (info.isSymbolicLink() || real !== path.join(root, REPO_CONFIG_PATH)) {
    throw new RepoConfigError(`${REPO_CONFIG_PATH}: must be a regular file, not a symbolic link`);
  }
  if (!info.isFile()) throw new RepoConfigError(`${REPO_CONFIG_PATH}: must be a regular file`);
  if (info.size > MAX_CONFIG_BYTES)
    throw new RepoConfigError(tooLarge(REPO_CONFIG_PATH, info.size));
  const bytes = await readFile(file);
  const binary = checkConfigBytes(bytes).problems[0];
  if (binary && binary.line === undefined && /binary/.test(binary.message)) {
    throw new RepoConfigError(`${REPO_CONFIG_PATH}: ${binary.message}`);
  }
  return bytes.toString('utf8');
}

/** The one line for a file over MAX_CONFIG_BYTES. */
export function tooLarge(name: string, bytes: number): string {
  return `${name}: is ${bytes} bytes, at most ${MAX_CONFIG_BYTES} allowed`;
}

/** Parses the text of a config file (exported for callers that already hold it). */
export function parseRepoConfig(text: string, name = REPO_CONFIG_PATH): RepoConfig {
  const checked = checkConfigText(text);
  const first = checked.problems[0];
  if (first) throw new RepoConfigError(`${name}: ${first.message}`);
  return checked.config ?? defaultRepoConfig();
}

function isNotFound(error: unknown): boolean {
  const code = (error as NodeJS.ErrnoException | undefined)?.code;
  return code === 'ENOENT' || code === 'ENOTDIR';
}
