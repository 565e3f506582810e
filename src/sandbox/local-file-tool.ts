// Read and Edit of the local sandbox: one request to the Docker tool helper's code run on the
// host (`python3 --once`), so they work on the file in another process with Python's own
// semantics, and this process only receives the bounded observation.
import { spawn } from 'node:child_process';
import { z } from 'zod';
import { PythonError, SandboxFailure } from '../leaf/sandbox.js';
import { DEFAULT_PATH } from './local-exec.js';
import { errorCode } from './python-os-error.js';
import { TOOL_HELPER_SOURCE } from './sandbox-tool-helper.js';

/** Read and Edit run in a Python process (the Docker tool helper's code): at most this long. */
const FILE_TOOL_TIMEOUT_MS = 120_000;
/** A Read reply holds at most its observation; anything bigger is not the helper talking. */
const MAX_FILE_TOOL_REPLY_BYTES = 8 * 1024 * 1024;

const HelperReply = z.union([
  z.object({ ok: z.literal(true), result: z.unknown() }),
  z.object({
    ok: z.literal(false),
    error: z.object({ pythonType: z.string(), message: z.string() }),
  }),
]);

/** The helper's result for `request`, run in the sandbox's workdir with its HOME. */
export function runFileTool(
  request: Record<string, unknown>,
  dirs: { workdir: string; homeDir: string },
): Promise<unknown> {
  const body = Buffer.from(JSON.stringify({ id: 1, ...request }), 'utf8');
  const header = Buffer.alloc(4);
  header.writeUInt32BE(body.length, 0);
  return new Promise((resolve, reject) => {
    const child = spawn('python3', ['-I', '-S', '-c', TOOL_HELPER_SOURCE, dirs.workdir, '--once'], {
      cwd: dirs.workdir,
      env: { PATH: process.env.PATH ?? DEFAULT_PATH, HOME: dirs.homeDir, LANG: 'C.UTF-8' },
      stdio: ['pipe', 'pipe', 'pipe'],
    });
    const chunks: Buffer[] = [];
    let size = 0;
    let stderr = '';
    let failure: Error | undefined;
    const timer = setTimeout(() => {
      failure = new SandboxFailure(
        `the local file tool did not finish within ${FILE_TOOL_TIMEOUT_MS} ms`,
      );
      child.kill('SIGKILL');
    }, FILE_TOOL_TIMEOUT_MS);
    child.stdout.on('data', (chunk: Buffer) => {
      size += chunk.length;
      if (size > MAX_FILE_TOOL_REPLY_BYTES) {
        failure ??= new SandboxFailure('the local file tool sent an oversized reply');
        child.kill('SIGKILL');
      } else chunks.push(chunk);
    });
    child.stderr.on('data', (chunk: Buffer) => {
      stderr = (stderr + chunk.toString('utf8')).slice(-2000);
    });
    child.stdin.on('error', () => undefined);
    child.on('error', (error) => {
      failure ??= startFailure(error);
    });
    child.on('close', () => {
      clearTimeout(timer);
      if (failure) return reject(failure);
      const reply = replyOf(Buffer.concat(chunks), stderr);
      if ('error' in reply) reject(reply.error);
      else resolve(reply.result);
    });
    child.stdin.end(Buffer.concat([header, body]));
  });
}

function startFailure(error: Error): SandboxFailure {
  return errorCode(error) === 'ENOENT'
    ? new SandboxFailure('the local sandbox runs Read and Edit with python3; install python3', {
        cause: error,
      })
    : new SandboxFailure('could not start python3 for a file tool', { cause: error });
}

/** The one framed reply: its result, or the error it stands for. */
function replyOf(reply: Buffer, stderr: string): { result: unknown } | { error: Error } {
  const length = reply.length >= 4 ? reply.readUInt32BE(0) : -1;
  let parsed: z.infer<typeof HelperReply> | undefined;
  if (length >= 0 && reply.length === 4 + length) {
    try {
      parsed = HelperReply.parse(JSON.parse(reply.subarray(4).toString('utf8')));
    } catch {
      parsed = undefined;
    }
  }
  if (!parsed) {
    return {
      error: new SandboxFailure(`the local file tool failed: ${stderr.trim() || 'no reply'}`),
    };
  }
  if (parsed.ok) return { result: parsed.result };
  return { error: new PythonError(parsed.error.pythonType, parsed.error.message) };
}
