// The one environment every git command on the host runs with: the mirror and the run's clone
// (workspace.ts), the policy step's `git apply` (workspace.ts), publishing (github/publish.ts).
// The patch is the model's, and with it its .gitattributes: an attribute naming a filter or
// diff driver runs whatever the operator's ~/.gitconfig or /etc/gitconfig defines for that name
// (a git-lfs-style `filter.lfs.process`). So host git reads no system or global config, no
// system attributes, and a HOME that holds nothing; the hardening settings travel as
// GIT_CONFIG_COUNT entries, which outrank every config file. The credential, if any, is an
// `http.<origin>/.extraHeader` there too: never argv, never a config file.
import { gitAuthHeader, type GitCredential } from './git-auth-header.js';

/** Settings no repository or config file can turn back on. */
export const HOST_GIT_HARDENING: readonly (readonly [string, string])[] = Object.freeze([
  ['core.hooksPath', '/dev/null'],
  ['core.fsmonitor', 'false'],
  ['credential.helper', ''],
  ['protocol.ext.allow', 'never'],
  ['core.attributesFile', '/dev/null'],
  ['advice.detachedHead', 'false'],
  ['init.defaultBranch', 'main'],
] as const);

// What git may see of the host's environment; everything else (EDITOR, PAGER, GIT_SSH_COMMAND,
// GIT_TRACE which would print headers, XDG_CONFIG_HOME, tokens of other tools) stays out.
const PASSED_ENV = [
  'PATH',
  'LANG',
  'LC_ALL',
  'TMPDIR',
  'SSH_AUTH_SOCK',
  'http_proxy',
  'https_proxy',
  'no_proxy',
  'HTTP_PROXY',
  'HTTPS_PROXY',
  'NO_PROXY',
];

export interface HostGitEnvOptions {
  /** An empty directory owned by this run: git's HOME (and XDG_CONFIG_HOME). */
  home: string;
  /** Where PATH, locale and proxies come from (default process.env). */
  base?: NodeJS.ProcessEnv;
  /** The remote, so a credential is sent to its origin only. */
  url?: string;
  credential?: GitCredential;
}

/** The complete environment for a host git child process (pass it whole, not merged). */
export function hostGitEnv(options: HostGitEnvOptions): Record<string, string> {
  const base = options.base ?? process.env;
  const env: Record<string, string> = {
    PATH: '/usr/local/bin:/usr/bin:/bin',
    LANG: 'C.UTF-8',
  };
  for (const key of PASSED_ENV) {
    const value = base[key];
    if (value !== undefined) env[key] = value;
  }
  Object.assign(env, {
    HOME: options.home,
    XDG_CONFIG_HOME: options.home,
    GIT_CONFIG_NOSYSTEM: '1',
    GIT_CONFIG_GLOBAL: '/dev/null',
    GIT_ATTR_NOSYSTEM: '1',
    GIT_TERMINAL_PROMPT: '0',
    GIT_LFS_SKIP_SMUDGE: '1',
  });
  const config: (readonly [string, string])[] = [...HOST_GIT_HARDENING];
  const header = options.url ? gitAuthHeader(options.url, options.credential) : undefined;
  if (header) config.push(header);
  env.GIT_CONFIG_COUNT = String(config.length);
  config.forEach(([key, value], i) => {
    env[`GIT_CONFIG_KEY_${i}`] = key;
    env[`GIT_CONFIG_VALUE_${i}`] = value;
  });
  return env;
}
