// What a Docker sandbox is made of: its image, the labels that find it again, the user and
// paths inside it, and the options (limits included) createDockerSandbox accepts.
import Docker from 'dockerode';
import { z } from 'zod';
import type { Logger } from '../log.js';
import type { SandboxOwner } from './owner.js';

/**
 * Built by sandbox/Dockerfile, or offline by sandbox/build-offline.sh: the same recipe
 * (sandbox/setup-image.sh). The tag carries the recipe version: change the recipe, bump it, and
 * every start builds the new image instead of using a stale one.
 */
export const DEFAULT_SANDBOX_IMAGE = 'frognano/sandbox:py3-r2';
export const LABEL_RUN = 'frognano.run';
export const LABEL_REPO = 'frognano.repo';
export const LABEL_CREATED = 'frognano.created';
export const SANDBOX_WORKDIR = '/testbed';
export const SANDBOX_HOME = '/home/frognano';
export const SANDBOX_UID = 1000;
export const SANDBOX_GID = 1000;
export const SANDBOX_USER = `${SANDBOX_UID}:${SANDBOX_GID}`;
const SANDBOX_PATH = '/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin';
/** The only variables the container gets: never a credential. */
export const SANDBOX_ENV = [`PATH=${SANDBOX_PATH}`, `HOME=${SANDBOX_HOME}`, 'LANG=C.UTF-8'];

export const MiB = 1024 * 1024;

const Limits = z.object({
  memoryBytes: z
    .number()
    .int()
    .min(16 * MiB)
    .default(4096 * MiB),
  nanoCpus: z.number().int().min(10_000_000).default(2_000_000_000),
  pidsLimit: z.number().int().min(16).default(1024),
  tmpfsBytes: z
    .number()
    .int()
    .min(MiB)
    .default(1024 * MiB),
  /** Bytes the sandbox may write (writable layer, volumes, /tmp) before the run stops. */
  diskBytes: z
    .number()
    .int()
    .min(MiB)
    .default(10 * 1024 * MiB),
  /** The run stops when the engine's disk has less than this free (0: never). */
  diskFloorBytes: z
    .number()
    .int()
    .min(0)
    .default(2 * 1024 * MiB),
});

export const DockerSandboxOptions = z.object({
  docker: z
    .custom<Docker>((value) => value instanceof Docker, {
      message: 'docker must be a Dockerode instance',
    })
    .optional(),
  image: z.string().min(1).default(DEFAULT_SANDBOX_IMAGE),
  runId: z
    .string()
    .regex(
      /^[A-Za-z0-9][A-Za-z0-9_.-]{0,99}$/,
      'runId must be 1-100 of [A-Za-z0-9_.-], starting alphanumeric',
    ),
  repo: z.string().max(512).default(''),
  /** `none`; `bridge` (setup in `open` mode); or a setup network (setup-network.ts). */
  network: z
    .union([
      z.enum(['none', 'bridge']),
      z
        .string()
        .regex(/^frognano-setup-[A-Za-z0-9_.-]+$/, 'must be none, bridge or a setup network'),
    ])
    .default('none'),
  /**
   * The engine's OCI runtime for the container (`runsc` for gVisor, `runc`); unset: the
   * engine's default. sandbox-runtime.ts chooses it for the agent and verification.
   */
  runtime: z
    .string()
    .regex(/^[A-Za-z0-9][A-Za-z0-9_.-]{0,63}$/, 'runtime must name an engine runtime')
    .optional(),
  limits: Limits.prefault({}),
  labels: z.record(z.string().min(1), z.string()).default({}),
  /**
   * Who may reap the container (owner.ts: `sandboxOwner(dataDir)`). Without one the
   * container carries no owner and no reaper touches it; its creator must remove it.
   */
  owner: z
    .custom<SandboxOwner>(
      (value) =>
        typeof value === 'object' &&
        value !== null &&
        typeof (value as SandboxOwner).instance === 'string' &&
        typeof (value as SandboxOwner).process === 'string',
      { message: 'owner must come from sandboxOwner(dataDir)' },
    )
    .optional(),
  /** Upper bound for one Read/Write/Glob round trip before the helper counts as hung. */
  fileOpTimeoutMs: z.number().int().positive().default(60_000),
  /**
   * How long the helper gets past a command's timeout (or abort) before the host kills the
   * command's group itself; after as long again the helper counts as hung and is replaced.
   */
  execGraceMs: z.number().int().positive().default(10_000),
  /** Longest pause between two disk measurements (disk-guard.ts). */
  diskCheckMs: z.number().int().positive().default(2000),
  logger: z.custom<Logger>((value) => typeof value === 'object' && value !== null).optional(),
});
export type DockerSandboxOptions = z.input<typeof DockerSandboxOptions>;
export type ResolvedDockerSandboxOptions = z.output<typeof DockerSandboxOptions>;
export type DockerSandboxLimits = z.output<typeof Limits>;
