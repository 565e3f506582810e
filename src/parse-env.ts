// Reading settings from the environment, shared by every room that has some (config.ts, the
// queue, the App's config, the logger): one line per bad variable, thrown as one ConfigError.
// It sits below them all, so that none of them has to import another to say what is wrong.
import type { z } from 'zod';
import { hideUrlPasswords } from './redact.js';

export class ConfigError extends Error {
  constructor(readonly problems: string[]) {
    super(problems.join('\n'));
    this.name = 'ConfigError';
  }
}

/**
 * The schema's variables from `env` (set to an empty string counts as unset, as shells and
 * .env files leave them), or one line per bad variable: `NAME must be ... (got "value")`,
 * with the values of keys and secrets hidden.
 */
export function parseEnv<S extends z.ZodObject>(
  schema: S,
  env: NodeJS.ProcessEnv,
): { data: z.output<S> } | { problems: string[] } {
  const present = Object.fromEntries(
    Object.keys(schema.shape)
      .filter((key) => env[key] !== undefined && env[key] !== '')
      .map((key) => [key, env[key]]),
  );
  const parsed = schema.safeParse(present);
  if (parsed.success) return { data: parsed.data };
  return {
    problems: parsed.error.issues.map((issue) => {
      const key = String(issue.path[0] ?? '');
      const shown = /KEY|SECRET/.test(key)
        ? '(hidden)'
        : hideUrlPasswords(JSON.stringify(present[key]));
      return `${key} ${issue.message} (got ${shown})`;
    }),
  };
}

/** pino's levels: config.ts checks LOG_LEVEL against them, and src/log.ts refuses any other with the same line. */
export const LOG_LEVELS = ['fatal', 'error', 'warn', 'info', 'debug', 'trace', 'silent'] as const;
