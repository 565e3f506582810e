// The configuration a run uses, from a stack of files: the App's base (the owner's `.github`
// repository and what `_extends` names, fetched on the GitHub side) beneath the repository's own
// `.github/frognano.yml`. Each file is checked on its own, so a bad one is named with its key;
// then a later file overrides an earlier one key by key, except `blocked_paths`, which add up
// (a repository cannot unblock what its organization blocks).
import type { Logger } from 'pino';
import { checkConfigText } from './config-problems.js';
import {
  MAX_CONFIG_BYTES,
  REPO_CONFIG_PATH,
  RepoConfig,
  RepoConfigError,
  readRepoConfigText,
  tooLarge,
} from './repo-config.js';
import type { ConfigText } from './run-types.js';

export interface ConfigLayer {
  name: string;
  /** The file's keys as written (validated), `_extends` left out. */
  data: Record<string, unknown>;
  /** What its `_extends` names, if anything. */
  extends?: string;
}

/** Where each key's value came from: the files that set it, lowest first. */
export type ConfigOrigins = Partial<Record<string, string[]>>;

/**
 * One file of the stack, checked; throws RepoConfigError (one line naming the file and key).
 * A file other than the repository's own was fetched from another repository, maybe a private
 * one, and the error may be shown in public: it names the line and the known key, never a value.
 */
export function configLayer(source: ConfigText): ConfigLayer {
  const bytes = Buffer.byteLength(source.text);
  if (bytes > MAX_CONFIG_BYTES) throw new RepoConfigError(tooLarge(source.name, bytes));
  const fetched = source.name !== REPO_CONFIG_PATH;
  const checked = checkConfigText(source.text, { quoteValues: !fetched });
  const first = checked.problems[0];
  if (first) {
    const where = fetched && first.line !== undefined && !/ at line \d/.test(first.message);
    throw new RepoConfigError(
      `${source.name}${where ? `, line ${first.line}` : ''}: ${first.message}`,
    );
  }
  const { _extends, ...data } = checked.data ?? {};
  return {
    name: source.name,
    data,
    ...(typeof _extends === 'string' ? { extends: _extends } : {}),
  };
}

/** The layers merged, lowest first, and where each key came from. */
export function mergeConfigLayers(layers: readonly ConfigLayer[]): {
  config: RepoConfig;
  origins: ConfigOrigins;
} {
  const merged: Record<string, unknown> = {};
  const origins: ConfigOrigins = {};
  for (const layer of layers) {
    for (const [key, value] of Object.entries(layer.data)) {
      if (key === 'blocked_paths' && Array.isArray(merged[key])) {
        merged[key] = [...(merged[key] as unknown[]), ...(value as unknown[])];
        origins[key] = [...(origins[key] ?? []), layer.name];
      } else {
        merged[key] = value;
        origins[key] = [layer.name];
      }
    }
  }
  return { config: RepoConfig.parse(merged), origins };
}

/**
 * The repository's own file under `treeDir` on top of what `base` gives for it (nothing without
 * a base: `frognano solve` reads only the local file, and does not follow `_extends`).
 */
export async function resolveRepoConfig(
  treeDir: string,
  base: ((ownFile: string | undefined) => Promise<ConfigText[]>) | undefined,
  log?: Logger,
): Promise<{ config: RepoConfig; origins: ConfigOrigins; files: string[] }> {
  const text = await readRepoConfigText(treeDir);
  const own = text === undefined ? undefined : configLayer({ name: REPO_CONFIG_PATH, text });
  if (own?.extends !== undefined && !base) {
    log?.warn({ extends: own.extends }, '_extends not followed: only the local file is read');
  }
  const below = base ? (await base(text)).map(configLayer) : [];
  const layers = [...below, ...(own ? [own] : [])];
  return { ...mergeConfigLayers(layers), files: layers.map((l) => l.name) };
}
