// Configuration of the GitHub App half of the process (src/config.ts holds the model and sandbox
// half). APP_ID, PRIVATE_KEY(_PATH) and WEBHOOK_SECRET follow Probot's own conventions so its
// manifest registration flow writes exactly the variables read here.
import { readFileSync } from 'node:fs';
import { isAbsolute, resolve } from 'node:path';
import { z } from 'zod';
import { parseEnv } from '../parse-env.js';
import { checkPem, readPrivateKey } from './private-key.js';

const positiveInt = (what: string) =>
  z
    .string()
    .trim()
    .refine((raw) => /^\d+$/.test(raw) && Number(raw) > 0, { message: `must be ${what}` })
    .transform(Number);

const httpUrl = z
  .string()
  .trim()
  .refine((raw) => /^https?:\/\/\S+$/.test(raw) && URL.canParse(raw), {
    message: 'must be an http(s) URL',
  })
  .transform((raw) => raw.replace(/\/+$/, ''));

// file:// is accepted for the git host so tests and air-gapped mirrors can stand in for GitHub.
const gitUrl = z
  .string()
  .trim()
  .refine((raw) => /^(https?|file):\/\/\S+$/.test(raw) && URL.canParse(raw), {
    message: 'must be an http(s) or file:// URL such as https://github.com',
  })
  .transform((raw) => raw.replace(/\/+$/, ''));

const hostName = z
  .string()
  .trim()
  .regex(/^[A-Za-z0-9.-]+(:\d+)?$/, { message: 'must be a host name such as github.example.com' });

export const AppEnv = z.object({
  APP_ID: positiveInt('the numeric App ID').optional(),
  PRIVATE_KEY: z.string().optional(),
  PRIVATE_KEY_PATH: z.string().trim().min(1).optional(),
  WEBHOOK_SECRET: z.string().min(1).optional(),
  WEBHOOK_PATH: z
    .string()
    .trim()
    .regex(/^\/\S*$/, { message: 'must be a path starting with /' })
    .default('/api/github/webhooks'),
  WEBHOOK_PROXY_URL: httpUrl.optional(),
  PORT: z
    .string()
    .trim()
    .refine((raw) => /^\d+$/.test(raw) && Number(raw) < 65536, {
      message: 'must be a TCP port (0-65535)',
    })
    .transform(Number)
    .default(3000),
  HOST: z.string().trim().min(1).optional(),
  GHE_HOST: hostName.optional(),
  GHE_PROTOCOL: z.enum(['https', 'http'], { message: 'must be https or http' }).default('https'),
  GITHUB_API_URL: httpUrl.optional(),
  FROGNANO_GIT_URL: gitUrl.optional(),
  FROGNANO_LABEL: z
    .string()
    .trim()
    .min(1, 'must name a label')
    .max(50, 'must be at most 50 characters (a GitHub label)')
    .default('frognano'),
  FROGNANO_DATA_DIR: z.string().trim().min(1).default('./data'),
  FROGNANO_CONCURRENCY: z
    .string()
    .trim()
    .refine((raw) => /^\d+$/.test(raw) && Number(raw) >= 1 && Number(raw) <= 64, {
      message: 'must be a whole number from 1 to 64',
    })
    .transform(Number)
    .default(1),
  FROGNANO_PUBLIC_URL: httpUrl.optional(),
  FROGNANO_STATUS_THROTTLE_MS: z
    .string()
    .trim()
    .refine((raw) => /^\d+$/.test(raw), { message: 'must be a whole number of milliseconds' })
    .transform(Number)
    .default(15_000),
  FROGNANO_SANDBOX: z
    .enum(['docker', 'local'], { message: 'must be docker or local' })
    .default('docker'),
  FROGNANO_RETENTION_DAYS: positiveInt('a whole number of days (at least 1)').default(30),
  FROGNANO_REPLAY_WINDOW_HOURS: positiveInt('a whole number of hours (at least 1)').default(168),
  FROGNANO_MAX_QUEUED_PER_REPO: positiveInt('a whole number of runs (at least 1)').optional(),
  FROGNANO_BOT_NAME: z.string().trim().min(1).optional(),
  // Bot addresses look like 41898282+frognano[bot]@users.noreply.github.com: not RFC-strict.
  FROGNANO_BOT_EMAIL: z
    .string()
    .trim()
    .regex(/^[^\s@<>]+@[^\s@<>]+\.[^\s@<>]+$/, { message: 'must be an e-mail address' })
    .optional(),
});
export type AppEnv = z.infer<typeof AppEnv>;

export interface AppConfig {
  /** Present only when the app is registered; otherwise `npm start` runs the manifest flow. */
  credentials?: { appId: number; privateKey: string; webhookSecret: string };
  webhookPath: string;
  webhookProxyUrl?: string;
  port: number;
  host?: string;
  /** REST API base, e.g. https://api.github.com or https://ghe.example.com/api/v3. */
  apiBaseUrl: string;
  /** Where repositories are cloned from and pushed to: `${gitBaseUrl}/${owner}/${repo}.git`. */
  gitBaseUrl: string;
  label: string;
  dataDir: string;
  concurrency: number;
  /** Public base URL of this server; when set, PR bodies link to the full trajectory. */
  publicUrl?: string;
  statusThrottleMs: number;
  sandbox: 'docker' | 'local';
  botIdentity?: { name: string; email: string };
  /** Finished runs and their trajectories are deleted after this many days. */
  retentionDays: number;
  /** The same raw webhook body under another delivery id within this window is a replay. */
  replayWindowMs: number;
  /** Runs one repository may have waiting; a trigger past it is refused (unset: no cap). */
  maxQueuedPerRepo?: number;
}

export class AppConfigError extends Error {
  constructor(readonly problems: string[]) {
    super(problems.join('\n'));
    this.name = 'AppConfigError';
  }
}

/** Parses the App's environment; throws AppConfigError with one line per bad variable. */
export function loadAppConfig(
  env: NodeJS.ProcessEnv = process.env,
  cwd = process.cwd(),
): AppConfig {
  const parsed = parseEnv(AppEnv, env);
  if ('problems' in parsed) throw new AppConfigError(parsed.problems);
  const e = parsed.data;
  const problems: string[] = [];
  const gheBase = e.GHE_HOST ? `${e.GHE_PROTOCOL}://${e.GHE_HOST}` : undefined;

  let privateKey: string | undefined;
  if (e.PRIVATE_KEY) {
    const key = readPrivateKey(e.PRIVATE_KEY, cwd);
    if ('pem' in key) privateKey = key.pem;
    else problems.push(`PRIVATE_KEY is not a PEM key: ${key.problem}`);
  } else if (e.PRIVATE_KEY_PATH) {
    const path = isAbsolute(e.PRIVATE_KEY_PATH)
      ? e.PRIVATE_KEY_PATH
      : resolve(cwd, e.PRIVATE_KEY_PATH);
    const key = readKeyFile(path);
    if ('pem' in key) privateKey = key.pem;
    else problems.push(key.problem);
  }
  let credentials: AppConfig['credentials'];
  if (e.APP_ID !== undefined && privateKey !== undefined) {
    if (!e.WEBHOOK_SECRET) {
      problems.push('WEBHOOK_SECRET must be set when APP_ID and a private key are set');
    } else credentials = { appId: e.APP_ID, privateKey, webhookSecret: e.WEBHOOK_SECRET };
  }
  if ((e.FROGNANO_BOT_NAME === undefined) !== (e.FROGNANO_BOT_EMAIL === undefined)) {
    problems.push('FROGNANO_BOT_NAME and FROGNANO_BOT_EMAIL must be set together');
  }
  if (problems.length > 0) throw new AppConfigError(problems);

  return {
    credentials,
    webhookPath: e.WEBHOOK_PATH,
    webhookProxyUrl: e.WEBHOOK_PROXY_URL,
    port: e.PORT,
    host: e.HOST,
    apiBaseUrl: e.GITHUB_API_URL ?? (gheBase ? `${gheBase}/api/v3` : 'https://api.github.com'),
    gitBaseUrl: e.FROGNANO_GIT_URL ?? gheBase ?? 'https://github.com',
    label: e.FROGNANO_LABEL,
    dataDir: isAbsolute(e.FROGNANO_DATA_DIR)
      ? e.FROGNANO_DATA_DIR
      : resolve(cwd, e.FROGNANO_DATA_DIR),
    concurrency: e.FROGNANO_CONCURRENCY,
    publicUrl: e.FROGNANO_PUBLIC_URL,
    statusThrottleMs: e.FROGNANO_STATUS_THROTTLE_MS,
    sandbox: e.FROGNANO_SANDBOX,
    retentionDays: e.FROGNANO_RETENTION_DAYS,
    replayWindowMs: e.FROGNANO_REPLAY_WINDOW_HOURS * 3600_000,
    ...(e.FROGNANO_MAX_QUEUED_PER_REPO !== undefined && {
      maxQueuedPerRepo: e.FROGNANO_MAX_QUEUED_PER_REPO,
    }),
    botIdentity:
      e.FROGNANO_BOT_NAME && e.FROGNANO_BOT_EMAIL
        ? { name: e.FROGNANO_BOT_NAME, email: e.FROGNANO_BOT_EMAIL }
        : undefined,
  };
}

/** The key in the file at `path`, or the line that says why not. */
function readKeyFile(path: string): { pem: string } | { problem: string } {
  let text: string;
  try {
    text = readFileSync(path, 'utf8');
  } catch {
    return {
      problem: `PRIVATE_KEY_PATH must name a readable .pem file (got ${JSON.stringify(path)})`,
    };
  }
  const file = JSON.stringify(path);
  if (!/-----BEGIN [A-Z ]*PRIVATE KEY-----/.test(text)) {
    return { problem: `PRIVATE_KEY_PATH must name a PEM private key file (${file} holds none)` };
  }
  const key = checkPem(text);
  return 'pem' in key
    ? key
    : {
        problem: `PRIVATE_KEY_PATH must name a PEM private key file (${file} is not a PEM key: ${key.problem})`,
      };
}
