// The configuration beneath a repository's own `.github/frognano.yml`, as Probot's
// `context.config` finds it (its config plugin does the finding): the owner's `.github`
// repository's file, and any file `_extends` names, from either. The repository's own file is
// the one the run cloned, at its base revision: the plugin is answered with that text instead of
// fetching the file from the default branch. Every file fetched is checked (size, binary, YAML
// bombs, keys) before the plugin parses it, and a bad one is one line naming it and its key.
// An `_extends` target is checked before it is fetched (extends-guard.ts: no more private than
// the running repository, or the owner's `.github` repository).
import { composeConfigGet } from '@probot/octokit-plugin-config';
import { configLayer } from '../runner/config-layers.js';
import {
  MAX_CONFIG_BYTES,
  REPO_CONFIG_PATH,
  RepoConfigError,
  tooLarge,
} from '../runner/repo-config.js';
import type { ConfigText } from '../runner/run-types.js';
import { extendsGuard, type ExtendsGuard } from './extends-guard.js';
import type { RepoVisibility } from './job.js';
import type { GitHubClient, RepoRef } from './octokit.js';

type PluginOctokit = Parameters<typeof composeConfigGet>[0];
type ConfigFile = Awaited<ReturnType<typeof composeConfigGet>>['files'][number];

interface ContentRoute {
  owner: string;
  repo: string;
  path: string;
  ref?: string;
}

/**
 * For RunRequest.configBase: the files beneath the repository's own, lowest first. `visibility`
 * is the running repository's, from the webhook (asked of GitHub when absent).
 */
export function ownerConfigBase(
  octokit: GitHubClient,
  repo: RepoRef,
  visibility?: RepoVisibility,
): (ownFile: string | undefined) => Promise<ConfigText[]> {
  return async (ownFile) => {
    const texts = new Map<string, string>();
    const names = new Map<string, string>();
    const guard = extendsGuard(octokit, repo, visibility);
    const client = checkingClient(octokit, repo, ownFile, { texts, names, guard });
    const get = (target: RepoRef) =>
      composeConfigGet(client, { ...target, path: REPO_CONFIG_PATH }).catch((error: unknown) => {
        throw asConfigError(error, names);
      });
    // Probot's order: the repository's file, or when it has none the owner's; then `_extends`.
    const own = await get(repo);
    // The owner's file applies beneath the repository's own file too, key by key.
    const ownerFile = { owner: repo.owner, repo: '.github' };
    const owner =
      ownFile !== undefined && !own.files.some((f) => sameFile(f, ownerFile))
        ? await get(ownerFile)
        : undefined;
    const files = [...(owner?.files ?? []).reverse(), ...own.files.slice(1).reverse()];
    return files
      .filter((f) => f.config !== null)
      .map((f) => ({ name: fileName(f), text: texts.get(fileName(f)) ?? '' }));
  };
}

function sameFile(file: Pick<ConfigFile, 'owner' | 'repo' | 'path'>, target: RepoRef): boolean {
  return (
    file.owner.toLowerCase() === target.owner.toLowerCase() &&
    file.repo.toLowerCase() === target.repo.toLowerCase() &&
    file.path === REPO_CONFIG_PATH
  );
}

function fileName(file: Pick<ConfigFile, 'owner' | 'repo' | 'path'>): string {
  return `${file.owner}/${file.repo}:${file.path}`;
}

/**
 * The client the plugin asks: the repository's own file is the clone's text; every other file is
 * fetched through the App's client and refused here, before the plugin parses it, when bad.
 */
function checkingClient(
  octokit: GitHubClient,
  repo: RepoRef,
  ownFile: string | undefined,
  seen: { texts: Map<string, string>; names: Map<string, string>; guard: ExtendsGuard },
): PluginOctokit {
  const { texts, names, guard } = seen;
  const isOwn = (route: ContentRoute) => sameFile(route, repo) && route.ref === undefined;
  const ownerFile = { owner: repo.owner, repo: '.github' };
  // The plugin reads a chain one file at a time: each file after the first is what the one
  // before it named in `_extends`.
  let previous: string | undefined;
  const request = async (route: ContentRoute & Record<string, unknown>) => {
    const name = fileName(route);
    names.set(octokit.request.endpoint(route as never).url, name);
    const namedBy = previous;
    previous = isOwn(route) ? REPO_CONFIG_PATH : name;
    if (isOwn(route)) {
      if (ownFile === undefined) throw Object.assign(new Error('Not Found'), { status: 404 });
      return { status: 200, headers: {}, data: ownFile };
    }
    // The owner's file is read for every repository; anything else was named by `_extends`.
    if (!sameFile(route, ownerFile)) await guard(route, namedBy ?? REPO_CONFIG_PATH);
    let response;
    try {
      response = await octokit.request(route as never);
    } catch (error) {
      if ((error as { status?: number }).status === 404) throw error;
      throw new RepoConfigError(`${name}: cannot be read from GitHub (${errorWords(error)})`);
    }
    const data: unknown = response.data;
    // JSON is a directory listing or a submodule: the plugin refuses those itself.
    if (typeof data !== 'string' && !(data instanceof ArrayBuffer)) return response;
    const text = checkedText(name, data);
    texts.set(name, text);
    return { ...response, data: text };
  };
  return {
    request: Object.assign(request, { endpoint: octokit.request.endpoint }),
  } as unknown as PluginOctokit;
}

function checkedText(name: string, data: string | ArrayBuffer): string {
  const bytes = typeof data === 'string' ? Buffer.from(data) : Buffer.from(data);
  if (bytes.length > MAX_CONFIG_BYTES) throw new RepoConfigError(tooLarge(name, bytes.length));
  let text: string;
  try {
    text = new TextDecoder('utf-8', { fatal: true }).decode(bytes);
  } catch {
    throw new RepoConfigError(`${name}: is a binary file, not YAML text`);
  }
  configLayer({ name, text });
  return text;
}

/** The plugin's own refusals (a loop of `_extends`, a directory) in one line naming files. */
function asConfigError(error: unknown, names: Map<string, string>): RepoConfigError {
  if (error instanceof RepoConfigError) return error;
  let message = error instanceof Error ? error.message : String(error);
  message = message.replace(/^\[@probot\/octokit-plugin-config\]\s*/, '').replace(/\s+/g, ' ');
  for (const [url, name] of names) message = message.split(url).join(name);
  // The plugin's own words name the `_extends` value after it has dropped it ("undefined").
  const loop = /Recursion detected.* from (\S+) because (\S+) was already loaded/.exec(message);
  if (loop) {
    return new RepoConfigError(
      `${loop[1]}: _extends leads back to ${loop[2]}, which is already read: remove the loop`,
    );
  }
  if (/directory or a submodule/.test(message)) {
    const name = [...names.values()].find((n) => message.includes(n)) ?? 'a configuration file';
    return new RepoConfigError(`${name}: must be a file, not a directory or a submodule`);
  }
  return new RepoConfigError(`the configuration cannot be read: ${message.trim()}`);
}

function errorWords(error: unknown): string {
  const status = (error as { status?: number }).status;
  const message = (error instanceof Error ? error.message : String(error)).split('\n')[0] ?? '';
  return status === undefined ? message : `HTTP ${status}: ${message}`;
}
