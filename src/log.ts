// One pino logger for the process: fixed messages plus an object, secrets redacted.
import pino, { type Logger } from 'pino';
import pretty from 'pino-pretty';
import { ConfigError, LOG_LEVELS } from './parse-env.js';
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

/** Longer lines are replaced by a short one that says so (a flood must not fill the disk). */
export const MAX_LOG_LINE = 16 * 1024;
const HEAD_CHARS = 1024;

/**
 * Errors are serialized as pino does, minus webhook payloads: @octokit/webhooks attaches the
 * whole delivery (`event.payload`, up to 25 MiB, sent by anyone who can reach the endpoint) to
 * the error of a rejected signature, and Probot logs that error twice.
 */
export function serializeError(err: unknown): unknown {
  if (!(err instanceof Error)) return err;
  return withoutPayloads(pino.stdSerializers.err(err), 0);
}

function withoutPayloads(value: unknown, depth: number): unknown {
  if (depth > 4 || value === null || typeof value !== 'object') return value;
  if (Array.isArray(value)) return value.map((v) => withoutPayloads(v, depth + 1));
  const out: Record<string, unknown> = {};
  for (const [key, v] of Object.entries(value as Record<string, unknown>)) {
    if (key === 'payload' && (typeof v === 'string' || (typeof v === 'object' && v !== null))) {
      out[key] = `[omitted: ${typeof v === 'string' ? v.length : 'an object of'} characters]`;
    } else if (key === 'event' && v && typeof v === 'object') {
      const { payload, ...rest } = v as Record<string, unknown>;
      out[key] =
        payload === undefined
          ? withoutPayloads(rest, depth + 1)
          : {
              ...(withoutPayloads(rest, depth + 1) as object),
              payload: `[omitted: ${typeof payload === 'string' ? payload.length : 'an object of'} characters]`,
            };
    } else {
      out[key] = withoutPayloads(v, depth + 1);
    }
  }
  return out;
}

/** A line over MAX_LOG_LINE becomes a valid JSON line with its level, time, length and head. */
export function capLogLine(line: string): string {
  if (line.length <= MAX_LOG_LINE) return line;
  const level = /^\{"level":(\d+)/.exec(line)?.[1] ?? '50';
  const time = /"time":(\d+)/.exec(line.slice(0, 200))?.[1] ?? String(Date.now());
  return `${JSON.stringify({
    level: Number(level),
    time: Number(time),
    msg: 'log line cut',
    length: line.length,
    head: line.slice(0, HEAD_CHARS),
  })}\n`;
}

/**
 * The level to log at (unset or empty: info). An unknown one is the operator's mistake, said in
 * the line config.ts uses for it, not pino's stack trace (this runs when a command loads).
 */
function logLevel(raw: string | undefined): string {
  if (raw === undefined || raw === '') return 'info';
  if ((LOG_LEVELS as readonly string[]).includes(raw)) return raw;
  throw new ConfigError([
    `LOG_LEVEL must be one of ${LOG_LEVELS.join(', ')} (got ${JSON.stringify(raw)})`,
  ]);
}

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
      level: logLevel(options.level ?? process.env.LOG_LEVEL),
      redact: { paths: REDACT_PATHS, censor: '[REDACTED]' },
      serializers: { err: serializeError },
      // Registered secrets can hide inside any string (an error message, a URL). Cut first:
      // scanning a runaway line for secrets would cost as much as writing it.
      hooks: {
        streamWrite: (line) => redactSecrets(capLogLine(line)),
      },
    },
    readable ? pretty({ destination, sync: true, translateTime: 'SYS:HH:MM:ss.l' }) : destination,
  );
}

/** The process-wide logger; writes to stderr so stdout stays for command output. */
export const log: Logger = createLogger();
