// One command of the local sandbox: `bash -lc` in its own process group at a lower priority,
// its output capped, and on a timeout or abort killed with everything it started. Like
// Python's subprocess: normal completion waits for the pipes, a kill only for bash.
import { type ChildProcess, spawn } from 'node:child_process';
import { constants as osConstants, setPriority } from 'node:os';
import { performance } from 'node:perf_hooks';
import { type ExecOptions, type ExecResult, SandboxFailure } from '../leaf/sandbox.js';
import { CappedStream } from './capped-stream.js';
import {
  groupAlive,
  killGroup,
  killProcesses,
  strayProcesses,
  sweepUntilGone,
} from './local-processes.js';

const DEFAULT_MAX_OUTPUT_BYTES = 1024 * 1024;
const SANDBOX_NICENESS = 10;
// setTimeout fires at once for delays above 2^31-1 ms, so long timeouts are re-armed.
const MAX_TIMER_MS = 2 ** 31 - 1;
export const DEFAULT_PATH = '/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin';
/** Every command's environment carries this with a per-command value, to find its strays. */
export const LOCAL_EXEC_MARKER = 'FROGNANO_SANDBOX_EXEC';

export interface LocalCommand {
  command: string;
  options: ExecOptions;
  cwd: string;
  /** Its whole environment, `LOCAL_EXEC_MARKER=marker` included. */
  env: Record<string, string>;
  marker: string;
  /** performance.now() when the sandbox was asked to run it. */
  started: number;
  /** The sandbox's process groups that may still have members: this one's joins them. */
  groups: Set<number>;
}

/** Runs the command; `exposeKill` gets the function that kills it (dispose uses it). */
export function runLocalCommand(
  command: LocalCommand,
  exposeKill: (kill: () => void) => void,
): Promise<ExecResult> {
  return new Promise<ExecResult>((resolve, reject) => {
    let child: ChildProcess;
    try {
      child = spawn('/bin/bash', ['-lc', command.command], {
        cwd: command.cwd,
        env: command.env,
        detached: true,
        stdio: ['pipe', 'pipe', 'pipe'],
      });
    } catch (error) {
      reject(new SandboxFailure('could not start /bin/bash', { cause: error }));
      return;
    }
    const running = new RunningCommand(command, child, resolve, reject);
    exposeKill(() => running.kill());
    running.watch();
  });
}

class RunningCommand {
  private readonly pid: number | undefined;
  private readonly stdout: CappedStream;
  private readonly stderr: CappedStream;
  private timedOut = false;
  private killed = false;
  private timer: NodeJS.Timeout | undefined;
  private settled = false;
  private readonly onAbort = (): void => this.kill();

  constructor(
    private readonly command: LocalCommand,
    private readonly child: ChildProcess,
    private readonly resolve: (result: ExecResult) => void,
    private readonly reject: (error: Error) => void,
  ) {
    const { options, groups } = command;
    this.pid = child.pid;
    if (this.pid !== undefined) {
      groups.add(this.pid);
      // The agent's commands run on the bot's own CPUs: a lower priority (inherited by
      // everything they start) keeps webhook acknowledgements and other runs responsive.
      try {
        setPriority(this.pid, SANDBOX_NICENESS);
      } catch {
        // The process may already be gone; its result arrives through the usual events.
      }
    }
    const cap = options.maxOutputBytes ?? DEFAULT_MAX_OUTPUT_BYTES;
    this.stdout = new CappedStream(cap);
    this.stderr = new CappedStream(cap);
    child.stdout?.on('data', (chunk: Buffer) => this.stdout.push(chunk));
    child.stderr?.on('data', (chunk: Buffer) => this.stderr.push(chunk));
    child.stdin?.on('error', () => undefined);
    child.stdin?.end(options.stdin === undefined ? undefined : Buffer.from(options.stdin));
  }

  /** Listens for the command's end, the caller's abort and the time limit. */
  watch(): void {
    const { child } = this;
    const { options } = this.command;
    child.on('error', (error) => {
      if (this.settled) return;
      this.settled = true;
      if (this.timer) clearTimeout(this.timer);
      this.reject(new SandboxFailure('could not run /bin/bash', { cause: error }));
    });
    child.on('exit', (code, signal) => {
      if (!this.killed) return;
      child.stdout?.destroy();
      child.stderr?.destroy();
      this.finish(code, signal);
    });
    // Normal completion waits for the pipes too, as Python's communicate() does.
    child.on('close', (code, signal) => this.finish(code, signal));

    if (options.signal?.aborted) this.kill();
    options.signal?.addEventListener('abort', this.onAbort, { once: true });
    const timeoutMs = options.timeoutMs;
    if (timeoutMs !== undefined && Number.isFinite(timeoutMs)) {
      this.armTimeout(this.command.started + Math.max(0, timeoutMs));
    }
  }

  private armTimeout(deadline: number): void {
    const left = deadline - performance.now();
    if (left <= 0) {
      this.timedOut = true;
      this.kill();
    } else {
      this.timer = setTimeout(
        () => this.armTimeout(deadline),
        Math.min(Math.ceil(left), MAX_TIMER_MS),
      );
    }
  }

  private finish(code: number | null, signal: NodeJS.Signals | null): void {
    if (this.settled) return;
    this.settled = true;
    if (this.timer) clearTimeout(this.timer);
    this.command.options.signal?.removeEventListener('abort', this.onAbort);
    if (this.pid !== undefined && !groupAlive(this.pid)) this.command.groups.delete(this.pid);
    this.resolve({
      exitCode: signal ? -(osConstants.signals[signal] ?? 9) : (code ?? 0),
      stdout: this.stdout.buffer(),
      stderr: this.stderr.buffer(),
      stdoutDroppedChars: this.stdout.droppedChars,
      stderrDroppedChars: this.stderr.droppedChars,
      timedOut: this.timedOut,
      durationMs: performance.now() - this.command.started,
    });
  }

  /**
   * Like Python's TimeoutExpired: keep what was read until now, kill, wait for bash only (a
   * process that escaped the group may hold the pipes open forever).
   */
  kill(): void {
    if (this.killed) return;
    this.killed = true;
    this.stdout.freeze();
    this.stderr.freeze();
    const { pid, child } = this;
    if (pid !== undefined) {
      // Found before the group dies and orphans them: descendants in other groups.
      const needle = Buffer.from(`\0${LOCAL_EXEC_MARKER}=${this.command.marker}\0`);
      killProcesses(strayProcesses(pid, needle));
      killGroup(pid);
      void sweepUntilGone(pid, needle);
    }
    if (child.exitCode !== null || child.signalCode !== null) {
      child.stdout?.destroy();
      child.stderr?.destroy();
      this.finish(child.exitCode, child.signalCode);
    }
  }
}
