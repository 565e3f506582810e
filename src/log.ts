// One pino logger for the process: fixed messages plus an object, secrets redacted.
import pino, { type Logger } from 'pino';
import { redactSecrets } from './redact.js';

export type { Logger };

const REDACT_PATHS = [
  'token',
  '*.token',
  'apiKey',
  '*.apiKey',
  'password',
  '*.password',
  'authorization',
  '*.authorization',
  'headers.authorization',
  '*.headers.authorization',
  'privateKey',
  '*.privateKey',
];

export function createLogger(
  options: { level?: string; destination?: pino.DestinationStream } = {},
): Logger {
  return pino(
    {
      level: options.level ?? process.env.LOG_LEVEL ?? 'info',
      redact: { paths: REDACT_PATHS, censor: '[REDACTED]' },
      // Registered secrets can hide inside any string (an error message, a URL).
      hooks: {
        streamWrite: (line) => redactSecrets(line),
      },
    },
    options.destination ?? pino.destination(2),
  );
}

/** The process-wide logger; writes to stderr so stdout stays for command output. */
export const log: Logger = createLogger();
