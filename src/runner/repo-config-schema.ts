// The schema of `.github/frognano.yml` (zod): what the run validates every file with, and what
// schema/frognano.schema.json is generated from (`npm run schema`) for editors.
import { z } from 'zod';
import { AllowEntryError, parseAllowEntry } from '../sandbox/egress-allow.js';
import type { SetupNetworkMode } from '../sandbox/egress-facts.js';

/**
 * Always blocked. A repository's `blocked_paths` EXTENDS this list rather than
 * replacing it: a config file in the repository must not be able to unblock the
 * workflows directory for a patch written by the agent.
 */
export const DEFAULT_BLOCKED_PATHS: readonly string[] = Object.freeze([
  '.github/**',
  '.gitmodules',
]);

/** Read into the task when the config names no `instructions_files`. */
export const DEFAULT_INSTRUCTION_FILES: readonly string[] = Object.freeze(['AGENTS.md']);

/** Parallel attempts of one run: at most this many, whatever is asked. */
export const MAX_ATTEMPTS = 8;

const MAX_TIMEOUT_MINUTES = 24 * 60;
const MAX_INSTRUCTION_FILES = 10;

const nonEmpty = (what: string) =>
  z
    .string({ error: `must be ${what}` })
    .min(1, { error: `must be ${what}`, abort: true })
    .refine((s) => s.trim() !== '', { error: `must be ${what}` });

/**
 * A file of the repository, named from its root: no way out of it (`..`, an absolute path), no
 * empty or `.` segment, nothing in `.git`, no backslash or control character. A pattern rather
 * than a function, so the JSON Schema carries it to editors.
 */
const REPO_PATH_RE =
  // eslint-disable-next-line no-control-regex -- control characters, on purpose
  /^(?!\/)(?!.*\/\/)(?!.*\/$)(?!(?:.*\/)?\.\.?(?:\/|$))(?!\.git(?:\/|$))[^\\\u0000-\u001f\u007f]+$/;
const repoPath = nonEmpty('a path in the repository, like AGENTS.md or docs/AGENTS.md').regex(
  REPO_PATH_RE,
  { error: 'must be a path inside the repository, like AGENTS.md or docs/AGENTS.md' },
);

/** `repo`, `owner/repo` or `owner/repo:path.yml`, as Probot's config plugin reads `_extends`. */
const EXTENDS_RE =
  /^(?:[a-zA-Z\d](?:[a-zA-Z\d]|-(?=[a-zA-Z\d])){0,38}\/)?[-_.\w]+(?::[-_./\w]+\.[yY][aA]?[mM][lL])?$/;

/**
 * An image by name, as Docker's reference grammar has it: `[registry[:port]/]path`, then `:tag`
 * and/or `@sha256:<64 hex>` (the path is lowercase). Never an image id: Docker also resolves
 * any unique hex prefix of an id (`b` will do) and `sha256:<hex>`, which would let one
 * repository start from an image another repository's run made (only its id is known). A
 * pattern rather than a function, so the JSON Schema carries it to editors.
 */
const IMAGE_NAME_RE =
  /^(?![a-f\d]+$)(?!sha(?:256|384|512):)(?:[a-zA-Z\d](?:[a-zA-Z\d-]*[a-zA-Z\d])?(?:\.[a-zA-Z\d](?:[a-zA-Z\d-]*[a-zA-Z\d])?)*(?::\d+)?\/)?[a-z\d]+(?:(?:[._]|__|-+)[a-z\d]+)*(?:\/[a-z\d]+(?:(?:[._]|__|-+)[a-z\d]+)*)*(?::\w[\w.-]{0,127})?(?:@sha256:[a-f\d]{64})?$/;
const IMAGE_NAME_ERROR =
  'must name an image (name, name:tag, registry/name:tag or name@sha256:<64 hex digits>), not an image id or id prefix';

export const RepoConfig = z
  .strictObject({
    image: nonEmpty('a non-empty image name')
      .refine((s) => !/\s/.test(s), { error: 'must be an image name without spaces', abort: true })
      .max(255, { error: IMAGE_NAME_ERROR, abort: true })
      .regex(IMAGE_NAME_RE, { error: IMAGE_NAME_ERROR })
      .optional()
      .meta({
        description:
          'Sandbox image by name (name, name:tag, registry/name:tag or name@sha256:...), never an image id; needs python3 and bash.',
      }),
    setup: z
      .union(
        [nonEmpty('a command or a list of commands'), z.array(nonEmpty('a non-empty command'))],
        {
          error: 'must be a command or a list of commands',
        },
      )
      .optional()
      // Absent or `auto`: automatic setup from the project's own files; `[]`: no setup at all.
      .transform((v): string[] | 'auto' =>
        v === undefined || v === 'auto' ? 'auto' : typeof v === 'string' ? [v] : v,
      )
      .meta({
        description:
          'Commands run in the sandbox before the agent; auto (the default) installs what the project declares; [] for none.',
      }),
    test: nonEmpty('a non-empty command')
      .optional()
      .meta({ description: 'The command that proves the fix; detected when absent.' }),
    network: z
      .enum(['none', 'registries', 'open', 'setup'], {
        error: 'must be "none", "registries" or "open"',
      })
      .default('registries')
      // `setup` is the old name of `open`: setup with the whole network.
      .transform((v): SetupNetworkMode => (v === 'setup' ? 'open' : v))
      .meta({
        description:
          "Setup's network: registries (default: only the package registries, the operator's mirrors and network_allow, through the bot's egress proxy), open (any host; `setup` is the old name), or none. The agent and the tests never have one.",
      }),
    network_allow: z
      .array(
        nonEmpty('a host, host:port or *.suffix').superRefine((entry, ctx) => {
          try {
            parseAllowEntry(entry);
          } catch (error) {
            if (!(error instanceof AllowEntryError)) throw error;
            ctx.addIssue({ code: 'custom', message: error.message });
          }
        }),
        { error: 'must be a list of hosts (host, host:port or *.suffix)' },
      )
      .optional()
      .meta({
        description:
          'Hosts setup may reach besides the package registries in `network: registries` mode: host (ports 80 and 443), host:port, or *.suffix. Never a loopback, link-local, private, shared (100.64.0.0/10) or other non-public address, nor an address of the host the bot runs on (docs/configuration.md lists them).',
      }),
    instructions: z
      .string({ error: 'must be text' })
      .optional()
      .meta({ description: 'Extra guidance appended to the task.' }),
    instructions_files: z
      .array(repoPath, { error: 'must be a list of paths in the repository' })
      .max(MAX_INSTRUCTION_FILES, {
        error: `must name at most ${MAX_INSTRUCTION_FILES} files`,
      })
      .optional()
      .meta({
        description:
          'Files of the repository read into the task after `instructions` (default [AGENTS.md]; [] for none).',
      }),
    max_steps: z
      .int({ error: 'must be a positive integer' })
      .min(1, { error: 'must be a positive integer' })
      .optional()
      .meta({ description: 'Step budget of each attempt (default 150).' }),
    timeout_minutes: z
      .number({ error: 'must be a positive number of minutes' })
      .positive({ error: 'must be a positive number of minutes' })
      .max(MAX_TIMEOUT_MINUTES, { error: `must be at most ${MAX_TIMEOUT_MINUTES} minutes` })
      .optional()
      .meta({ description: 'Wall-clock budget of the agent loop in minutes (default 30).' }),
    attempts: z
      .int({ error: `must be an integer from 1 to ${MAX_ATTEMPTS}` })
      .min(1, { error: `must be an integer from 1 to ${MAX_ATTEMPTS}` })
      .max(MAX_ATTEMPTS, { error: `must be an integer from 1 to ${MAX_ATTEMPTS}` })
      .optional()
      .meta({ description: `Parallel attempts, 1-${MAX_ATTEMPTS} (default 1).` }),
    blocked_paths: z
      .array(nonEmpty('a non-empty glob'), { error: 'must be a list of globs' })
      .optional()
      .transform((v): string[] => [...new Set([...DEFAULT_BLOCKED_PATHS, ...(v ?? [])])])
      .meta({
        description:
          'Globs the patch may not touch, added to the defaults (.github/**, .gitmodules).',
      }),
    _extends: z
      .string({ error: 'must name a repository: repo, owner/repo or owner/repo:path.yml' })
      .regex(EXTENDS_RE, {
        error: 'must name a repository: repo, owner/repo or owner/repo:path.yml',
      })
      .optional()
      .meta({
        description:
          "Inherit another repository's file (repo, owner/repo or owner/repo:path.yml), as Probot's config does.",
      }),
  })
  .transform(({ _extends, ...c }) => ({
    ...c,
    // An empty or whitespace-only `instructions` adds nothing to the task.
    instructions: c.instructions?.trim() ? c.instructions.trim() : undefined,
  }));
export type RepoConfig = z.infer<typeof RepoConfig>;

/** Every key a file may have, in the order the schema lists them. */
export const KNOWN_KEYS = [
  'image',
  'setup',
  'test',
  'network',
  'network_allow',
  'instructions',
  'instructions_files',
  'max_steps',
  'timeout_minutes',
  'attempts',
  'blocked_paths',
  '_extends',
] as const;

export class RepoConfigError extends Error {
  constructor(message: string) {
    super(message);
    this.name = 'RepoConfigError';
  }
}
