// One pino logger for the process: fixed messages plus an object, secrets redacted.
import pino, { type Logger } from 'pino';
import pretty from 'pino-pretty';
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
  options: {
    level?: string;
    destination?: pino.DestinationStream;
    /** Human-readable lines instead of JSON; default: when stderr is a terminal. */
    pretty?: boolean;
  } = {},
): Logger {
  const destination = options.destination ?? pino.destination(2);
  // A person at a terminal reads lines; everything else (files, journald, collectors) gets JSON.
  const readable = options.pretty ?? (options.destination === undefined && process.stderr.isTTY);
  return pino(
    {
      level: options.level ?? process.env.LOG_LEVEL ?? 'info',
      redact: { paths: REDACT_PATHS, censor: '[REDACTED]' },
      // Registered secrets can hide inside any string (an error message, a URL).
      hooks: {
        streamWrite: (line) => redactSecrets(line),
      },
    },
    readable ? pretty({ destination, sync: true, translateTime: 'SYS:HH:MM:ss.l' }) : destination,
  );
}

/** The process-wide logger; writes to stderr so stdout stays for command output. */
export const log: Logger = createLogger();
