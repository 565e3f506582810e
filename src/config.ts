// Process configuration: read from the environment once, validated with zod, and every
// bad key reported on its own line saying what is expected.
import { z } from 'zod';
import { DEFAULT_MAX_CONTEXT_TOKENS, DEFAULT_REQUEST } from './leaf/protocol.js';
import { modelUrlListProblem, splitModelUrls } from './model-fleet/endpoint-url.js';
import { DEFAULT_MODEL_MAX_LOOPS } from './model-fleet/fleet-types.js';
import { ConfigError, LOG_LEVELS, parseEnv } from './parse-env.js';
import { AllowEntryError, parseAllowEntry, splitAllowList } from './sandbox/egress-allow.js';
import type { SetupNetworkMode } from './sandbox/egress-facts.js';

// Its loaders throw ConfigError: the commands catch it from here.
export { ConfigError };

const number = (what: string, check: (n: number) => boolean) =>
  z
    .string()
    .trim()
    .refine((raw) => raw !== '' && Number.isFinite(Number(raw)) && check(Number(raw)), {
      message: `must be ${what}`,
    })
    .transform(Number);

const positiveInt = number('a positive integer', (n) => Number.isInteger(n) && n > 0);

/** Sizes like `4g`, `512m`, `256MiB`, `1048576`: a number, then an optional binary unit. */
const BYTE_SIZE = /^(\d+(?:\.\d+)?)\s*([kmg]?)i?b?$/i;

const byteSize = z
  .string()
  .trim()
  .regex(BYTE_SIZE, { message: 'must be a size such as 4g, 512m or 1048576' })
  .transform(parseByteSize);

/** One model URL, or several separated by commas (one endpoint per GPU server). */
const httpUrlList = z
  .string()
  .trim()
  .superRefine((raw, ctx) => {
    const problem = modelUrlListProblem(raw);
    if (problem) ctx.addIssue({ code: 'custom', message: problem });
  })
  .transform((raw) =>
    splitModelUrls(raw)
      .map((url) => url.replace(/\/+$/, ''))
      .join(','),
  );

/** The operator's bounds on what `.github/frognano.yml` may ask for (unset: no bound). */
const RepoConfigCapsEnv = z.object({
  FROGNANO_MAX_STEPS_CAP: positiveInt.optional(),
  FROGNANO_MAX_TIMEOUT_MINUTES_CAP: number('a positive number of minutes', (n) => n > 0).optional(),
  FROGNANO_MAX_ATTEMPTS: number(
    'an integer from 1 to 8',
    (n) => Number.isInteger(n) && n >= 1 && n <= 8,
  ).optional(),
});

const SETUP_NETWORK_MODES = ['none', 'registries', 'open'] as const;

const mirrorUrl = z
  .string()
  .trim()
  .refine((raw) => URL.canParse(raw) && /^https?:$/.test(new URL(raw).protocol), {
    message: 'must be an http:// or https:// URL',
  });

/** Setup's network and what setup gets from the operator (issue 25; README, "Setup's network"). */
const SetupNetworkEnv = z.object({
  FROGNANO_SETUP_NETWORK_CAP: z
    .enum(SETUP_NETWORK_MODES, { message: 'must be none, registries or open' })
    .optional(),
  /** A PyPI mirror (PEP 503 simple index): setup's PIP_INDEX_URL, and allowed through the proxy. */
  FROGNANO_PIP_INDEX_URL: mirrorUrl.optional(),
  /** An npm registry mirror: setup's npm_config_registry, and allowed through the proxy. */
  FROGNANO_NPM_REGISTRY: mirrorUrl.optional(),
  FROGNANO_SETUP_ALLOW_HOSTS: z
    .string()
    .superRefine((raw, ctx) => {
      for (const entry of splitAllowList(raw)) {
        try {
          parseAllowEntry(entry);
        } catch (error) {
          if (!(error instanceof AllowEntryError)) throw error;
          ctx.addIssue({ code: 'custom', message: `has an entry ${error.message}` });
          return;
        }
      }
    })
    .transform(splitAllowList)
    .optional(),
  /** A PEM bundle setup's tools trust (a TLS-inspecting company proxy). */
  FROGNANO_SETUP_CA_FILE: z.string().trim().min(1).optional(),
  /** Names of variables passed to setup commands only. */
  FROGNANO_SETUP_SECRETS: z
    .string()
    .refine((raw) => raw.split(',').every((n) => /^[A-Za-z_][A-Za-z0-9_]*$/.test(n.trim())), {
      message: 'must be variable names separated by commas, like NPM_TOKEN,PIP_EXTRA_INDEX_URL',
    })
    .transform((raw) => raw.split(',').map((n) => n.trim()))
    .optional(),
});
export type SetupNetworkEnv = z.output<typeof SetupNetworkEnv>;

export const ProcessConfig = z.object({
  FROGNANO_MODEL_URL: httpUrlList.prefault('http://localhost:8000/v1'),
  FROGNANO_MODEL: z
    .string()
    .trim()
    .min(1, 'must name the served model')
    .prefault(DEFAULT_REQUEST.model),
  FROGNANO_API_KEY: z.string().optional(),
  FROGNANO_TEMPERATURE: number('a number from 0 to 2', (n) => n >= 0 && n <= 2).prefault(
    String(DEFAULT_REQUEST.temperature),
  ),
  FROGNANO_MAX_COMPLETION_TOKENS: positiveInt.prefault(String(DEFAULT_REQUEST.maxCompletionTokens)),
  FROGNANO_MAX_CONTEXT_TOKENS: positiveInt.prefault(String(DEFAULT_MAX_CONTEXT_TOKENS)),
  FROGNANO_MODEL_TIMEOUT_SECONDS: positiveInt.prefault('600'),
  FROGNANO_MODEL_MAX_RETRIES: number(
    'a whole number from 0 to 10',
    (n) => Number.isInteger(n) && n >= 0 && n <= 10,
  ).prefault('4'),
  FROGNANO_MODEL_MAX_LOOPS: positiveInt.prefault(String(DEFAULT_MODEL_MAX_LOOPS)),
  FROGNANO_SANDBOX: z
    .enum(['docker', 'local'], { message: 'must be docker or local' })
    .prefault('docker'),
  FROGNANO_SANDBOX_IMAGE: z.string().trim().min(1).optional(),
  /** The agent's runtime: unset picks gVisor (runsc) when it works; `runc` opts out. */
  FROGNANO_SANDBOX_RUNTIME: z
    .string()
    .trim()
    .regex(/^[A-Za-z0-9][A-Za-z0-9_.-]{0,63}$/, {
      message:
        'must name a Docker runtime registered with the engine (runsc for gVisor), or runc to opt out',
    })
    .optional(),
  FROGNANO_SANDBOX_MEMORY: byteSize.prefault('4g'),
  FROGNANO_SANDBOX_CPUS: number('a number of CPUs above 0', (n) => n > 0).prefault('2'),
  FROGNANO_SANDBOX_PIDS: positiveInt.prefault('512'),
  /** Most a run's sandbox may write to disk; the engine's quota or the disk guard enforces it. */
  FROGNANO_SANDBOX_DISK: byteSize.prefault('10g'),
  /** A run stops when the Docker engine's disk has less than this free (0 turns it off). */
  FROGNANO_DISK_FLOOR: byteSize.prefault('2g'),
  FROGNANO_DATA_DIR: z.string().trim().min(1).prefault('./data'),
  ...RepoConfigCapsEnv.shape,
  ...SetupNetworkEnv.shape,
  /** `frognano worker`'s own `/metrics` server; 0 turns it off (serve and all use the App's port). */
  FROGNANO_METRICS_PORT: number(
    'a TCP port (1-65535), or 0 for no metrics server',
    (n) => Number.isInteger(n) && n >= 0 && n <= 65535,
  ).prefault('9464'),
  LOG_LEVEL: z
    .enum(LOG_LEVELS, { message: `must be one of ${LOG_LEVELS.join(', ')}` })
    .prefault('info'),
});
export type ProcessConfig = z.infer<typeof ProcessConfig>;

/** Parses the environment; throws ConfigError with one line per bad variable. */
export function loadProcessConfig(env: NodeJS.ProcessEnv = process.env): ProcessConfig {
  const parsed = parseEnv(ProcessConfig, env);
  if ('problems' in parsed) throw new ConfigError(parsed.problems);
  return parsed.data;
}

/** Setup's network settings from the environment (ConfigError when bad). */
export function setupNetworkEnv(env: NodeJS.ProcessEnv = process.env): SetupNetworkEnv {
  const parsed = parseEnv(SetupNetworkEnv, env);
  if ('problems' in parsed) throw new ConfigError(parsed.problems);
  return parsed.data;
}

/** The operator's caps for repository configs, from the environment (ConfigError when bad). */
export function repoConfigCaps(env: NodeJS.ProcessEnv = process.env): {
  maxSteps?: number;
  timeoutMinutes?: number;
  attempts?: number;
  network?: SetupNetworkMode;
} {
  const parsed = parseEnv(RepoConfigCapsEnv, env);
  if ('problems' in parsed) throw new ConfigError(parsed.problems);
  // Unset: no cap (`open`, the most there is).
  const network = parseEnv(SetupNetworkEnv, env);
  if ('problems' in network) throw new ConfigError(network.problems);
  return {
    ...(network.data.FROGNANO_SETUP_NETWORK_CAP !== undefined && {
      network: network.data.FROGNANO_SETUP_NETWORK_CAP,
    }),
    ...(parsed.data.FROGNANO_MAX_STEPS_CAP !== undefined && {
      maxSteps: parsed.data.FROGNANO_MAX_STEPS_CAP,
    }),
    ...(parsed.data.FROGNANO_MAX_TIMEOUT_MINUTES_CAP !== undefined && {
      timeoutMinutes: parsed.data.FROGNANO_MAX_TIMEOUT_MINUTES_CAP,
    }),
    ...(parsed.data.FROGNANO_MAX_ATTEMPTS !== undefined && {
      attempts: parsed.data.FROGNANO_MAX_ATTEMPTS,
    }),
  };
}

export function parseByteSize(raw: string): number {
  const match = BYTE_SIZE.exec(raw.trim());
  if (!match) throw new Error(`${JSON.stringify(raw)} is not a size such as 4g, 512m or 1048576`);
  const unit = (match[2] ?? '').toLowerCase();
  const scale = unit === 'g' ? 1024 ** 3 : unit === 'm' ? 1024 ** 2 : unit === 'k' ? 1024 : 1;
  return Math.round(Number(match[1]) * scale);
}
