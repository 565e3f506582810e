// The contract between the run pipeline (src/runner/run.ts) and whoever starts runs and
// publishes their results (the CLI's `solve`, the GitHub App). runner/ knows no GitHub.
import type { StopReason } from '../leaf/protocol.js';
import type { ModelEndpointRecord, SandboxRecovery } from '../leaf/trajectory.js';
import type { EgressFacts } from '../sandbox/egress-facts.js';

export type SandboxKind = 'docker' | 'local';

/** A credential for cloning, asked for only when needed (installation tokens expire). */
export type CredentialProvider = () => Promise<{ username: string; password: string } | undefined>;

export interface RunRequest {
  /** Unique id of this run (used for labels, work dirs, logs). */
  runId: string;
  /** e.g. `owner/repo#123`; recorded in the trajectory. */
  instanceId: string;
  /** A local directory (a git repository) or a clone URL (https://, file://, ssh). */
  repo: string;
  /** Commit, branch or tag to start from; default: the remote's HEAD. */
  revision?: string;
  getCredential?: CredentialProvider;
  /**
   * The sanitized issue: title, blank line, body. Repo `instructions`, instruction files and
   * extra guidance are appended by the pipeline.
   */
  issueText: string;
  /** Extra guidance, e.g. the text after `/frognano retry`. */
  extraGuidance?: string;
  /**
   * A follow-up on a previous attempt (`revision` is that attempt): the task text is
   * `task(git diff diffBase..revision)` instead of `issueText` (runner/follow-up-task.ts).
   */
  followUp?: { diffBase: string; task: (previousDiff: string) => string };
  sandbox: SandboxKind;
  /**
   * The configuration beneath the repository's own `.github/frognano.yml` (the App: the owner's
   * `.github` repository, and what `_extends` names), given that file's text at the base
   * revision (undefined when it has none); lowest first. Without it only the file is read.
   * Throws RepoConfigError (one line naming the file and key) for a bad file.
   */
  configBase?: (ownFile: string | undefined) => Promise<ConfigText[]>;
  /**
   * Reads untrusted text (the repository's instruction files) as issue text is read: hidden
   * content removed, off the event loop, bounded. Without it instruction files are not used.
   */
  readUntrustedTexts?: ReadUntrustedTexts;
  /** Overrides of the repository configuration from the caller (CLI flags, `/frognano retry xN`). */
  overrides?: { image?: string; maxSteps?: number; timeoutMinutes?: number; attempts?: number };
  /** Where trajectory.json is written after every step (a directory). */
  outDir: string;
  signal?: AbortSignal;
  onProgress?: (event: RunProgress) => void;
}

/** One configuration file from outside the run's tree. */
export interface ConfigText {
  /** How messages name it, e.g. `acme/.github:.github/frognano.yml`. */
  name: string;
  text: string;
}

export type ReadUntrustedTexts = (
  texts: string[],
) => Promise<({ ok: true; text: string } | { ok: false; reason: string })[]>;

/** What became of one of the repository's instruction files (`instructions_files`). */
export interface InstructionFileUse {
  path: string;
  /**
   * `used`: all of it is in the task; `cut`: only `bytes` of its `size` (a size limit);
   * `empty`: nothing visible in it; `refused`: not used, `reason` says why; `missing`: not in
   * the repository (listed only when the config names the file).
   */
  state: 'used' | 'cut' | 'empty' | 'refused' | 'missing';
  /** Bytes (UTF-8) of its text in the task. */
  bytes?: number;
  /** Bytes of its whole text, after hidden content was removed (when it was cut). */
  size?: number;
  reason?: string;
}

export type RunPhase =
  | 'clone'
  | 'config'
  | 'sandbox'
  | 'setup'
  | 'verify-before'
  | 'agent'
  | 'capture'
  | 'verify-after'
  | 'policy'
  | 'cleanup';

export type RunProgress =
  /** `timeoutMs`: with the `agent` phase, the agent's time limit (the App's job deadline). */
  | { kind: 'phase'; phase: RunPhase; timeoutMs?: number }
  | {
      kind: 'step';
      /** Which attempt took the step; absent when the run has one attempt. */
      attempt?: number;
      step: number;
      maxSteps: number;
      tools: string[];
      elapsedMs: number;
      contextTokens: number;
    }
  /** Several attempts: one attempt's patch is being verified, or has been (as soon as its loop ends). */
  | { kind: 'attempt'; attempt: number; state: 'verifying' | 'done' }
  /**
   * A loop waits for a model slot (every endpoint is at FROGNANO_MODEL_MAX_LOOPS), or has one
   * again; `waitedMs`: its waiting so far, which its time budget does not count.
   */
  | { kind: 'model-wait'; attempt?: number; waiting: boolean; waitedMs: number };

export interface TestResult {
  command: string;
  /** Where the command came from: the repo config, or detected (and how). */
  source: 'config' | 'detected';
  exitCode: number;
  timedOut: boolean;
  /** The last few KB of combined output. */
  outputTail: string;
  durationMs: number;
  /**
   * pytest's JUnit XML report, when the command is a pytest invocation it could be asked of
   * (src/runner/test-report.ts): a run counts as passed only with a report that has tests and
   * no failures or errors. Absent for other commands.
   */
  report?: TestReport;
}

export interface TestReport {
  /** The report existed and parsed as JUnit XML. */
  present: boolean;
  tests: number;
  failures: number;
  errors: number;
  skipped: number;
  /**
   * Modules pytest could not collect (an import error): each is counted in `tests` and
   * `errors` too, as pytest writes them. Absent when there are none.
   */
  collectionErrors?: number;
  /** Why the run does not count as passed by its report; absent when the report is clean. */
  problem?: string;
}

export interface PolicyViolation {
  rule: 'blocked_path' | 'git_dir' | 'patch_size' | 'symlink';
  detail: string;
}

/** How a run ended, beyond the Leaf stop reason: failures before or around the loop. */
export type RunOutcome =
  | 'completed' // the loop reached a stop reason and a patch (maybe empty) was captured
  | 'config_error' // .github/frognano.yml invalid
  | 'clone_failed'
  | 'sandbox_failed'
  | 'sandbox_limit' // the disk guard stopped the sandbox (FROGNANO_SANDBOX_DISK, FROGNANO_DISK_FLOOR)
  | 'setup_failed'
  | 'model_unreachable'
  | 'capture_failed' // the loop ended but its patch could not be read out of the sandbox
  | 'cancelled';

export interface StepSummary {
  step: number;
  tools: { name: string; args: string; outcome: string }[];
  modelMs: number;
  toolMs: number;
}

export interface RunResult {
  runId: string;
  outcome: RunOutcome;
  /** One plain sentence when outcome is not `completed`. */
  error?: string;
  exitReason?: StopReason;
  /** The commit the run started from. */
  baseCommit?: string;
  /** `git diff --binary` text; empty when the agent changed nothing. */
  patch: string;
  /** True when the loop ended on a limit, so the patch is partial work. */
  partial: boolean;
  filesChanged: string[];
  finalMessage: string;
  testCommand?: { command: string; source: 'config' | 'detected'; detail?: string };
  verifyBefore?: TestResult;
  verifyAfter?: TestResult;
  setupTail?: string;
  /** Whether setup ran with a network (set when setup ran): `network` not none, or the local sandbox. */
  setupNetwork?: boolean;
  /** Setup's network in a Docker run: mode, allowed hosts, refused connections (when setup ran). */
  egress?: EgressFacts;
  violations: PolicyViolation[];
  steps: StepSummary[];
  budgets: {
    steps: number;
    maxSteps: number;
    contextTokens: number;
    promptTokens: number;
    completionTokens: number;
    wallMs: number;
    timeoutMs: number;
  };
  /** Milliseconds per phase. */
  timings: Partial<Record<RunPhase, number>>;
  trajectoryPath?: string;
  /** True when setup was skipped thanks to a snapshot image. */
  snapshotHit?: boolean;
  /** Docker: the runtime the agent and verification ran under (`runsc` is gVisor), and why. */
  sandboxRuntime?: { name: string; reason: string };
  /** What git made of the patch on a clean clone; absent when it is empty or did not apply. */
  patchFacts?: PatchFacts;
  /**
   * The test command with the WHOLE patch, the agent's own tests and test-harness changes
   * included: the agent's evidence, reported beside the verdict (`verifyAfter`), never as it.
   * Absent when the patch touches no test or harness file.
   */
  agentTests?: TestResult;
  /**
   * A follow-up: the base revision (where the previous attempts started), whose tree alone
   * setup and the setup snapshot saw and whose test harness judged "before" and "after"; and
   * the harness files any revision (this one included) added or changed since: reported,
   * never trusted.
   */
  followUpBase?: { commit: string; harnessFiles: string[] };
  /**
   * Every attempt, when the run had several (absent for one attempt): the fields above are
   * the selected attempt's.
   */
  attempts?: AttemptSummary[];
  /** The attempt whose patch the fields above hold (several attempts only). */
  selectedAttempt?: number;
  /**
   * The task exactly as the model got it: the issue text (or a follow-up's, with the feedback),
   * the config's `instructions`, the instruction files, the retry guidance. Absent when the run
   * stopped before there was one.
   */
  task?: string;
  /** The repository's instruction files the task was given (absent when it has none). */
  instructionFiles?: InstructionFileUse[];
  /** The endpoints that answered the (selected) attempt's loop, and what each said of itself. */
  servedBy?: ModelEndpointRecord[];
  /** Each time the (selected) attempt's sandbox was lost mid-loop, rebuilt and replayed or not. */
  sandboxRecoveries?: SandboxRecovery[];
  /** How the environment was made and whether the tests can run in it (absent before setup). */
  environment?: EnvironmentFacts;
}

/** One setup command and where it came from (`pyproject.toml [test]`, `.github/frognano.yml`). */
export interface EnvironmentCommand {
  command: string;
  from: string;
}

/**
 * The environment as evidence (issue 25): where setup came from, how long it took, what its
 * network allowed and refused, and what the test command collected in it before the change.
 */
export interface EnvironmentFacts {
  /** `auto`: detected from the project's files; `config`: the `setup` key; `none`: no setup. */
  source: 'auto' | 'config' | 'none';
  ecosystems: string[];
  /** The commands that made the environment (automatic: the candidate kept). */
  commands: EnvironmentCommand[];
  /** Automatic setup's plan: every candidate, in the order they are tried. */
  plan: { candidate: string; commands: EnvironmentCommand[] }[];
  /** Automatic setup's candidates that did not work, and why, in one line each. */
  failed: { candidate: string; reason: string }[];
  /** What setup saw but did not do, or why it did not run. */
  notes: string[];
  /** `hit`: reused from a setup snapshot; `miss`: made now (and saved); `none`: no snapshots. */
  snapshot: 'hit' | 'miss' | 'none';
  /** Setup's wall time (absent when it did not run). */
  seconds?: number;
  /** The repository's `network` for setup. */
  network: string;
  /** Tests the test command collected before the change (pytest only). */
  testsCollected?: number;
  /** Import errors at collection, first few (`No module named 'dateutil'`). */
  importErrors: string[];
  /** Whether the tests can run here: false makes the test verdict inconclusive. */
  runnable: boolean;
  /** Why they cannot, in one line (absent when runnable). */
  problem?: string;
}

/** One attempt of a run with several, with the evidence it was ranked by. */
export interface AttemptSummary {
  /** 1-based. */
  attempt: number;
  outcome: RunOutcome;
  error?: string;
  exitReason?: StopReason;
  patch: string;
  partial: boolean;
  filesChanged: string[];
  finalMessage: string;
  steps: number;
  /** Its steps, as `steps` of the result (what a switch to this attempt shows). */
  stepList?: StepSummary[];
  promptTokens: number;
  completionTokens: number;
  contextTokens: number;
  verifyAfter?: TestResult;
  /** The whole patch, the agent's own tests included. */
  agentTests?: TestResult;
  /** The agent's own tests on the original source (a reproduction fails there). */
  ownTestsBefore?: TestResult;
  /**
   * The agent's own tests on the original source with the patch's added lines in it as
   * comments: a test that passes here reads the source instead of running it.
   */
  ownTestsText?: TestResult;
  violations: PolicyViolation[];
  patchFacts?: PatchFacts;
  /** `pass`, `fewer failing`, `fail` or `not run`, and in words (e.g. `2 failing (3 before)`). */
  tests: 'pass' | 'fewer failing' | 'fail' | 'not run';
  testsText: string;
  /**
   * `fail→pass` when its own tests reproduce the issue and pass with the fix; `reads source`
   * when they also pass on the original code with the patch's lines only as comments.
   */
  ownTests: 'fail→pass' | 'reads source' | 'no' | 'none';
  /** Attempts that made the same normalized change (itself included). */
  votes: number;
  /** Lines added plus removed. */
  diffLines: number;
  selected: boolean;
  /** Why it won, or the first criterion it lost on. */
  reason: string;
  trajectoryPath?: string;
  /** The patch kept with the run (`<outDir>/attempt-K/patch.diff`). */
  patchPath?: string;
  /** The endpoints that answered its loop. */
  servedBy?: ModelEndpointRecord[];
}

/** git's own reading of the patch (`diff-tree --raw/--numstat -z` on the host's clean clone). */
export interface PatchFacts {
  files: ChangedFile[];
  /** Every symbolic link the patch adds or re-points. */
  symlinks: { path: string; target: string }[];
  /** Binary files the patch adds or changes: size in bytes, mode as octal text. */
  binaries: { path: string; size: number; mode: string }[];
  /** Files whose mode changes, and files created executable. */
  modeChanges: { path: string; oldMode: string; newMode: string }[];
  /**
   * Test-harness files the patch touches (conftest.py, pytest/tox/setup.cfg/pyproject settings,
   * package.json, runner configs, Makefile, files the test command names…): the verdict ran
   * with the repository's own versions of them.
   */
  harnessFiles: string[];
  /** Test files the patch adds or changes: the verdict ran without them too. */
  testFiles: string[];
  /** `.gitattributes` files the patch touches. */
  gitattributes: string[];
}

export interface ChangedFile {
  path: string;
  /** A (added), M, D or T (type change). */
  status: string;
  oldMode: string;
  newMode: string;
  /** Lines added and removed; null for a binary file. */
  added: number | null;
  removed: number | null;
  /** Bytes of the new content (0 when deleted). */
  size: number;
}
