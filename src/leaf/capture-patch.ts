// leaf-protocol.md §5: the run's patch, captured inside the sandbox after the loop stops:
// `git add -A`, `git diff --cached --binary`, `git reset --mixed HEAD` (binary-safe, new
// files included, the index left as it was).
import { SandboxFailure, type ExecResult, type Sandbox } from './sandbox.js';

// The repository's .git/config was writable by the agent, so settings that would run a
// program or reshape the diff are overridden on the command line (which wins over it).
const GIT = [
  'git',
  '-c core.fsmonitor=false',
  '-c core.hooksPath=/dev/null',
  '-c core.pager=cat',
  '-c core.attributesFile=/dev/null',
  "-c 'safe.directory=*'",
  '-c diff.external=',
  '-c diff.noprefix=false',
  '-c diff.mnemonicPrefix=false',
  '-c diff.relative=false',
  '-c color.ui=false',
].join(' ');

// --no-renames: every touched path shows up as itself, so the policy checks on the patch
// do not depend on similarity heuristics; explicit prefixes keep `git apply` -p1 working.
const DIFF_FLAGS =
  '--cached --binary --no-ext-diff --no-textconv --no-color --no-renames --src-prefix=a/ --dst-prefix=b/';

export interface CapturePatchOptions {
  /** A larger patch is refused rather than truncated (a cut patch would not apply). Default 64 MiB. */
  maxBytes?: number;
  /** Per git command when there is no deadline. Default 120 s. */
  timeoutMs?: number;
  /**
   * Epoch milliseconds (Date.now()) by which the whole capture (add, diff, reset) must be
   * done: a file the agent made huge must not hold a run long past its time limit.
   */
  deadline?: number;
}

/** The `git diff --binary` bytes of every change in the sandbox's repository (empty when none). */
export async function capturePatch(
  sandbox: Sandbox,
  options: CapturePatchOptions = {},
): Promise<Buffer> {
  const maxBytes = options.maxBytes ?? 64 * 1024 * 1024;
  const perCommandMs = options.timeoutMs ?? 120_000;
  const { deadline } = options;
  const timeoutMs = (): number =>
    deadline === undefined ? perCommandMs : Math.min(perCommandMs, deadline - Date.now());
  const env = { GIT_TERMINAL_PROMPT: '0', GIT_OPTIONAL_LOCKS: '0', GIT_PAGER: 'cat' };
  const onDeadline = deadline !== undefined;

  if (timeoutMs() <= 0) {
    throw new SandboxFailure("patch capture: no time was left before the run's deadline");
  }
  let diff: ExecResult | undefined;
  let failure: unknown;
  try {
    await run(sandbox, `${GIT} add -A`, { timeoutMs: timeoutMs(), env, onDeadline });
    diff = await run(sandbox, `${GIT} diff ${DIFF_FLAGS}`, {
      timeoutMs: timeoutMs(),
      env,
      onDeadline,
      maxOutputBytes: maxBytes,
    });
  } catch (error) {
    failure = error;
  }
  // Unstage even when add or diff failed, so the tree is left as the agent made it; past the
  // deadline it gets a few seconds at most. The first failure is the one worth reporting.
  try {
    await run(sandbox, `${GIT} reset -q --mixed HEAD`, {
      timeoutMs: Math.max(timeoutMs(), RESET_FLOOR_MS),
      env,
      onDeadline,
    });
  } catch (error) {
    failure ??= error;
  }
  if (failure !== undefined || diff === undefined) throw failure;
  if (diff.stdoutDroppedChars > 0) {
    throw new SandboxFailure(
      `the patch is larger than ${maxBytes} bytes; refusing to capture a truncated patch`,
    );
  }
  return diff.stdout;
}

/** How long the unstaging step may take once the deadline has passed. */
const RESET_FLOOR_MS = 3000;

async function run(
  sandbox: Sandbox,
  command: string,
  options: {
    timeoutMs: number;
    env: Record<string, string>;
    onDeadline: boolean;
    maxOutputBytes?: number;
  },
): Promise<ExecResult> {
  // A timeout of zero or less would mean no timeout at all to some sandboxes.
  if (options.timeoutMs <= 0) {
    throw new SandboxFailure(
      `patch capture: no time was left for \`${shortName(command)}\` before the run's deadline`,
    );
  }
  const result = await sandbox.exec(command, {
    timeoutMs: options.timeoutMs,
    env: options.env,
    maxOutputBytes: options.maxOutputBytes ?? 64 * 1024,
  });
  if (result.timedOut) {
    throw new SandboxFailure(
      options.onDeadline
        ? `patch capture: \`${shortName(command)}\` did not finish before the run's deadline`
        : `patch capture: \`${shortName(command)}\` timed out`,
    );
  }
  if (result.exitCode !== 0) {
    const stderr = result.stderr.toString('utf8').trim().split('\n').slice(-3).join(' ');
    throw new SandboxFailure(
      `patch capture: \`${shortName(command)}\` failed with exit code ${result.exitCode}: ${stderr}`,
    );
  }
  return result;
}

function shortName(command: string): string {
  const verb = / (add|diff|reset) /.exec(command)?.[1] ?? 'git';
  return `git ${verb}`;
}
