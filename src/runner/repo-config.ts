// `.github/frognano.yml`: the repository's own say in how a run goes. The file comes
// from an untrusted tree, so it is read defensively (no symlinks, size cap) and every
// problem becomes one line that names the key, fit for an issue comment.
import { lstat, readFile, realpath } from 'node:fs/promises';
import path from 'node:path';
import { parseDocument } from 'yaml';
import { z } from 'zod';
import { DEFAULT_MAX_STEPS } from '../leaf/protocol.js';

export const REPO_CONFIG_PATH = '.github/frognano.yml';

/**
 * Always blocked. A repository's `blocked_paths` EXTENDS this list rather than
 * replacing it: a config file in the repository must not be able to unblock the
 * workflows directory for a patch written by the agent.
 */
export const DEFAULT_BLOCKED_PATHS: readonly string[] = Object.freeze([
  '.github/**',
  '.gitmodules',
]);

/** Wall-clock budget of the agent loop when the config names none. */
export const DEFAULT_TIMEOUT_MINUTES = 30;

/** The operator's bounds (FROGNANO_MAX_STEPS_CAP, FROGNANO_MAX_TIMEOUT_MINUTES_CAP). */
export interface RepoConfigCaps {
  maxSteps?: number;
  timeoutMinutes?: number;
}

const MAX_CONFIG_BYTES = 64 * 1024;
const MAX_TIMEOUT_MINUTES = 24 * 60;

const nonEmpty = (what: string) =>
  z
    .string({ error: `must be ${what}` })
    .refine((s) => s.trim() !== '', { error: `must be ${what}` });

export const RepoConfig = z
  .strictObject({
    image: nonEmpty('a non-empty image name')
      .refine((s) => !/\s/.test(s), { error: 'must be an image name without spaces' })
      .optional(),
    setup: z
      .union(
        [nonEmpty('a command or a list of commands'), z.array(nonEmpty('a non-empty command'))],
        {
          error: 'must be a command or a list of commands',
        },
      )
      .optional()
      .transform((v): string[] => (v === undefined ? [] : typeof v === 'string' ? [v] : v)),
    test: nonEmpty('a non-empty command').optional(),
    network: z.enum(['none', 'setup'], { error: 'must be "none" or "setup"' }).default('none'),
    instructions: z.string({ error: 'must be text' }).optional(),
    max_steps: z
      .int({ error: 'must be a positive integer' })
      .min(1, { error: 'must be a positive integer' })
      .optional(),
    timeout_minutes: z
      .number({ error: 'must be a positive number of minutes' })
      .positive({ error: 'must be a positive number of minutes' })
      .max(MAX_TIMEOUT_MINUTES, { error: `must be at most ${MAX_TIMEOUT_MINUTES} minutes` })
      .optional(),
    blocked_paths: z
      .array(nonEmpty('a non-empty glob'), { error: 'must be a list of globs' })
      .optional()
      .transform((v): string[] => [...new Set([...DEFAULT_BLOCKED_PATHS, ...(v ?? [])])]),
  })
  .transform((c) => ({
    ...c,
    // An empty or whitespace-only `instructions` adds nothing to the task.
    instructions: c.instructions?.trim() ? c.instructions.trim() : undefined,
  }));
export type RepoConfig = z.infer<typeof RepoConfig>;

export const KNOWN_KEYS = [
  'image',
  'setup',
  'test',
  'network',
  'instructions',
  'max_steps',
  'timeout_minutes',
  'blocked_paths',
] as const;

export class RepoConfigError extends Error {
  constructor(message: string) {
    super(message);
    this.name = 'RepoConfigError';
  }
}

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
  return capRepoConfig(await readRepoConfig(treeDir), caps);
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
  };
}

async function readRepoConfig(treeDir: string): Promise<RepoConfig> {
  const file = path.join(treeDir, REPO_CONFIG_PATH);
  let info;
  try {
    info = await lstat(file);
  } catch (error) {
    if (isNotFound(error)) return defaultRepoConfig();
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
  if (info.size > MAX_CONFIG_BYTES) {
    throw new RepoConfigError(
      `${REPO_CONFIG_PATH}: is ${info.size} bytes, at most ${MAX_CONFIG_BYTES} allowed`,
    );
  }
  return parseRepoConfig(await readFile(file, 'utf8'));
}

/** Parses the text of a config file (exported for callers that already hold it). */
export function parseRepoConfig(text: string): RepoConfig {
  const doc = parseDocument(text, { uniqueKeys: true, prettyErrors: true });
  const yamlError = doc.errors[0];
  if (yamlError) {
    const where = yamlError.linePos?.[0];
    const at = where ? ` at line ${where.line}, column ${where.col}` : '';
    const first = (yamlError.message.split('\n')[0] ?? '').replace(
      / at line \d+, column \d+:?$/,
      '',
    );
    throw new RepoConfigError(`${REPO_CONFIG_PATH}: invalid YAML${at}: ${first}`);
  }
  const data: unknown = doc.toJS({ maxAliasCount: 100 });
  if (data === null || data === undefined) return defaultRepoConfig();
  if (typeof data !== 'object' || Array.isArray(data)) {
    throw new RepoConfigError(
      `${REPO_CONFIG_PATH}: must be a mapping of keys (${KNOWN_KEYS.join(', ')}) to values (got ${describe(data)})`,
    );
  }
  const parsed = RepoConfig.safeParse(data, { reportInput: true });
  if (parsed.success) return parsed.data;
  const issue = deepestIssue(parsed.error.issues[0]);
  if (!issue) throw new RepoConfigError(`${REPO_CONFIG_PATH}: invalid`);
  if (issue.code === 'unrecognized_keys') {
    const key = issue.keys[0] ?? '';
    throw new RepoConfigError(
      `${REPO_CONFIG_PATH}: unknown key "${key}" (expected one of: ${KNOWN_KEYS.join(', ')})`,
    );
  }
  const keyPath = formatPath(issue.path);
  const got = 'input' in issue ? ` (got ${describe(issue.input)})` : '';
  throw new RepoConfigError(`${REPO_CONFIG_PATH}: ${keyPath} ${issue.message}${got}`);
}

type Issue = z.core.$ZodIssue;

/** For `string | string[]` a union error hides the useful one: `setup[2] must be ...`. */
function deepestIssue(issue: Issue | undefined): Issue | undefined {
  if (issue?.code !== 'invalid_union') return issue;
  let best: Issue | undefined;
  for (const option of issue.errors) {
    for (const inner of option) {
      if (inner.path.length > 0 && (!best || inner.path.length > best.path.length)) best = inner;
    }
  }
  return best ? { ...best, path: [...issue.path, ...best.path] } : issue;
}

function formatPath(parts: readonly PropertyKey[]): string {
  let out = '';
  for (const part of parts) {
    if (typeof part === 'number') out += `[${part}]`;
    else out += out === '' ? String(part) : `.${String(part)}`;
  }
  return out || '(top level)';
}

function describe(value: unknown): string {
  if (value === undefined) return 'nothing';
  if (value === null) return 'null';
  if (Array.isArray(value)) return 'a list';
  if (typeof value === 'object') return 'a mapping';
  const text = JSON.stringify(value);
  return text.length > 60 ? `${text.slice(0, 57)}...` : text;
}

function isNotFound(error: unknown): boolean {
  const code = (error as NodeJS.ErrnoException | undefined)?.code;
  return code === 'ENOENT' || code === 'ENOTDIR';
}
