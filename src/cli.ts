// The `frognano` command: wiring only. Each command's work lives in src/commands/.
import { readFileSync } from 'node:fs';
import { Command, CommanderError, Option } from 'commander';
import { ConfigError } from './config.js';
import { loadDotenv } from './dotenv.js';
import { UsageError } from './commands/solve-options.js';
import { terminalText } from './commands/terminal-text.js';

// src/cli.ts and dist/cli.js both sit one level below package.json.
const { version } = JSON.parse(
  readFileSync(new URL('../package.json', import.meta.url), 'utf8'),
) as { version: string };

const program = new Command()
  .name('frognano')
  .description(
    'Turn GitHub issues into draft pull requests written by FrogNano-4B in its Leaf harness.',
  )
  .version(version)
  // Commander's usage errors (`error: …`, a suggestion on a line of its own) as every other
  // error of ours: one line, `frognano: …`, with where to find help. Set before the commands
  // are added, which take it over.
  .configureOutput({
    outputError: (text, write) => {
      const what = text
        .trim()
        .replace(/^error: /, '')
        .replace(/\s*\n\s*/g, ' ');
      write(`frognano: ${what} (run with --help for usage)\n`);
    },
  })
  // Usage errors (unknown flag, missing value, bad choice) exit 2 like our own; see the catch below.
  .exitOverride();

// Every command but `action` reads its settings the same way: .env in the current directory,
// then the environment, which wins. In a workflow the current directory is the repository the
// bot works on: its .env is that project's own, never the bot's settings.
program.hook('preAction', (_program, command) => {
  if (command.name() !== 'action') loadDotenv(process.env, process.cwd());
});

const appModes = [
  ['start', 'all', 'Run the GitHub App: webhook server and workers in one process (npm start)'],
  ['serve', 'serve', 'Run only the webhook server; workers run elsewhere (`frognano worker`)'],
  ['worker', 'worker', 'Run only workers that take queued runs; /metrics on FROGNANO_METRICS_PORT'],
] as const;
for (const [name, mode, description] of appModes) {
  program
    .command(name)
    .description(description)
    .action(async () => {
      const { startCommand } = await import('./commands/start.js');
      await startCommand({ mode });
    });
}

program
  .command('solve')
  .description(
    'Run FrogNano on one repository and write patch.diff, summary.md, trajectory.json and trajectory.html',
  )
  .requiredOption('--repo <dir|git-url>', 'local git repository or clone URL')
  .option('--issue-file <file>', 'file holding the task (title, blank line, body)')
  .option('--issue <text>', 'the task as text')
  .option('--out <dir>', 'output directory', 'frognano-out')
  .addOption(
    new Option(
      '--sandbox <kind>',
      'where the agent runs (default docker, or FROGNANO_SANDBOX)',
    ).choices(['docker', 'local']),
  )
  .option('--image <image>', 'sandbox image (overrides .github/frognano.yml)')
  .option('--revision <rev>', 'commit, branch or tag to start from (default: HEAD)')
  .option(
    '--feedback-file <file>',
    "review feedback on the previous attempt at --revision: a follow-up run, as on the bot's PR",
  )
  .option(
    '--base <rev>',
    'with --feedback-file: diff the previous attempt against this (default: HEAD)',
  )
  .option(
    '--model-url <url[,url...]>',
    'OpenAI-compatible base URL, or several separated by commas (default FROGNANO_MODEL_URL)',
  )
  .option('--model <name>', 'served model name (default FROGNANO_MODEL)')
  .option('--max-steps <n>', 'step budget (default 150 or the repo config)')
  .option('--timeout-minutes <n>', 'wall-clock budget of the agent loop')
  .option(
    '--attempts <n>',
    'parallel attempts, 1-8; the verified best is kept (default 1 or the repo config; FROGNANO_MAX_ATTEMPTS caps it)',
  )
  .addHelpText(
    'after',
    `
Exit codes:
  0    a patch was produced (max_* stop reasons: partial work); the last line ends \`tests after: pass|fail|not run|none\`
  1    the run failed: clone, config, sandbox, setup, model endpoint (llm_query_error),
       tool_error, a patch that could not be captured (capture_failed) or that the policy
       refuses; the reason is the last line on stderr
  2    bad usage, or a pre-flight check failed (model endpoint, Docker engine): nothing ran
  130  cancelled (SIGINT or SIGTERM)`,
  )
  .action(async (options: Record<string, unknown>) => {
    const { solve } = await import('./commands/solve.js');
    const controller = new AbortController();
    const onSignal = () => controller.abort();
    // `on`, not `once`: the run's own handler sees this one still listening when a signal
    // comes, so it leaves the process to us (exit 130 after the files are written).
    process.on('SIGINT', onSignal);
    process.on('SIGTERM', onSignal);
    try {
      process.exitCode = await solve(options, {
        stderr: (line) => process.stderr.write(`${line}\n`),
        env: process.env,
        signal: controller.signal,
      });
    } finally {
      process.off('SIGINT', onSignal);
      process.off('SIGTERM', onSignal);
    }
  });

program
  .command('env [dir]')
  .description(
    'Make and prove the environment a run would make for DIR (default: here): the plan, the proof, a frognano.yml that pins it',
  )
  .option('--repo <owner/name>', 'clone github.com/OWNER/NAME instead, as a run does')
  .option('--json', 'print one JSON object')
  .addOption(
    new Option('--sandbox <kind>', 'docker (default, or FROGNANO_SANDBOX) or local').choices([
      'docker',
      'local',
    ]),
  )
  .option('--image <image>', 'sandbox image (overrides .github/frognano.yml)')
  .addHelpText(
    'after',
    `
Exit codes:
  0    the tests can run in this environment
  1    they cannot (import errors at collection, a failed setup): see why, and the snippet
  2    bad usage`,
  )
  .action(async (dir: string | undefined, options: Record<string, unknown>) => {
    const { envCommand } = await import('./commands/env.js');
    process.exitCode = await envCommand(
      { ...options, ...(dir !== undefined ? { dir } : {}) },
      {
        stdout: (line) => process.stdout.write(`${line}\n`),
        stderr: (line) => process.stderr.write(`${line}\n`),
        env: process.env,
        cwd: process.cwd(),
      },
    );
  });

program
  .command('action')
  .description(
    'Handle one GitHub Actions event (GITHUB_EVENT_NAME, GITHUB_EVENT_PATH) as the App would: triggers, permission check, run, draft PR',
  )
  .addHelpText(
    'after',
    `
Reads the workflow's environment (GITHUB_EVENT_NAME, GITHUB_EVENT_PATH, GITHUB_REPOSITORY,
GITHUB_API_URL, GITHUB_SERVER_URL, GITHUB_TOKEN or APP_ID and PRIVATE_KEY, RUNNER_TEMP) and
every FROGNANO_* variable of the App; writes GITHUB_OUTPUT (outcome, run-id, pr-number, pr-url)
and GITHUB_STEP_SUMMARY.

Exit codes:
  0    the event was handled: a draft pull request or a follow-up commit, a refusal,
       a cancel, an answer, or nothing to do
  1    the run failed (the reason is in the status comment, the step summary and on stderr)
  2    the environment is not a workflow's: one line names the missing or bad variable`,
  )
  .action(async () => {
    const { actionCommand } = await import('./commands/action.js');
    process.exitCode = await actionCommand({
      env: process.env,
      stderr: (line) => process.stderr.write(`${line}\n`),
    });
  });

program
  .command('doctor')
  .description(
    'Check credentials, GitHub, the model, Docker, the sandbox image, the data directory and the queue (exit 1 when something blocks runs)',
  )
  .option(
    '--probe',
    'also send each model endpoint one small request with the Leaf tools: are tool calls and reasoning parsed?',
  )
  .action(async (options: { probe?: boolean }) => {
    const { doctorCommand } = await import('./commands/doctor.js');
    process.exitCode = await doctorCommand({
      stdout: (line) => process.stdout.write(`${line}\n`),
      env: process.env,
      probe: options.probe === true,
    });
  });

program
  .command('reap')
  .description(
    'Remove containers, snapshot and attempt-base images, and work directories left by dead runs',
  )
  .action(async () => {
    const { reapCommand } = await import('./commands/reap.js');
    process.exitCode = await reapCommand({
      stdout: (line) => process.stdout.write(`${line}\n`),
      env: process.env,
    });
  });

const config = program
  .command('config')
  .description('Check .github/frognano.yml, or show the configuration a run would use');
config
  .command('validate [file]')
  .description(
    'Print `valid` or every problem of a config file (default .github/frognano.yml) with its line; exit 0 or 1',
  )
  .option('--json', 'print JSON for scripts')
  .action(async (file: string | undefined, options: { json?: boolean }) => {
    const { configValidateCommand } = await import('./commands/config-validate.js');
    process.exitCode = await configValidateCommand(file, options, {
      stdout: (line) => process.stdout.write(`${line}\n`),
    });
  });
config
  .command('show')
  .description(
    'Print the configuration a run would use as YAML: defaults, the file, operator caps, marked by where each value came from',
  )
  .option('--repo <dir>', 'the repository (default: the current directory)')
  .action(async (options: { repo?: string }) => {
    const { configShowCommand } = await import('./commands/config-show.js');
    process.exitCode = await configShowCommand(options, {
      stdout: (line) => process.stdout.write(`${line}\n`),
      stderr: (line) => process.stderr.write(`${line}\n`),
      env: process.env,
    });
  });

const runs = program
  .command('runs')
  .description('List the queue and recent runs of this data directory (FROGNANO_DATA_DIR)')
  .option('--json', 'print JSON for scripts')
  .option('--state <state>', 'only runs in this state (queued, running, done, failed, cancelled)')
  .option('--repo <owner/repo>', 'only runs of this repository')
  .option('--limit <n>', 'at most this many runs, newest first', '20')
  .action(async (options: Record<string, string | boolean | undefined>) => {
    const { runsCommand } = await import('./commands/runs.js');
    process.exitCode = await runsCommand(options, {
      stdout: (line) => process.stdout.write(`${line}\n`),
      env: process.env,
    });
  });
runs
  .command('show <id>')
  .description("Print one run's summary (the id or a unique prefix of it)")
  .option('--json', 'print JSON for scripts')
  .action(async (id: string, options: { json?: boolean }) => {
    const { runsShowCommand } = await import('./commands/runs.js');
    // `runs show <id> --json`: commander hands a flag after the id to `runs`, which has it too.
    const json = Boolean(options.json ?? runs.opts<{ json?: boolean }>().json);
    process.exitCode = await runsShowCommand(
      id,
      { json },
      {
        stdout: (line) => process.stdout.write(`${line}\n`),
        env: process.env,
      },
    );
  });

// A reader that leaves early (`frognano doctor | head -1`) closes the pipe: the rest of the output
// goes nowhere, and the command finishes as it would have (its exit code stands).
for (const stream of [process.stdout, process.stderr]) {
  stream.on('error', (error: NodeJS.ErrnoException) => {
    if (error.code === 'EPIPE') return;
    process.exitCode = 1;
    if (stream === process.stdout) {
      process.stderr.write(`frognano: cannot write the output (${error.code ?? error.message})\n`);
    }
  });
}

try {
  await program.parseAsync(process.argv);
} catch (error) {
  process.exitCode = 2;
  if (error instanceof CommanderError) {
    // Commander has printed its message (or the help, or the version) already.
    process.exitCode = error.exitCode === 0 ? 0 : 2;
  } else if (error instanceof UsageError || error instanceof ConfigError) {
    process.stderr.write(`frognano: ${terminalText(error.message)}\n`);
  } else if (error instanceof Error && isOneLineFailure(error)) {
    // A model server's answer (e.g. the models it serves) can be part of the message.
    process.stderr.write(`frognano: ${terminalText(error.message)}\n`);
    // Another process owns the data directory or the port: a refusal to start, not bad usage.
    if (['DataDirBusyError', 'MetricsPortError'].includes(error.name) || isPortInUse(error)) {
      process.exitCode = 1;
    }
  } else {
    process.stderr.write(`frognano: ${unexpected(error)}\n`);
  }
}

/**
 * A bug or an unforeseen failure: still one line, its first; the stack trace on request (a
 * report needs it, an operator reading the terminal does not).
 */
function unexpected(error: unknown): string {
  const wantsStack = ['debug', 'trace'].includes(process.env.LOG_LEVEL ?? '');
  if (error instanceof Error && wantsStack) return error.stack ?? error.message;
  const message = error instanceof Error ? error.message || error.name : String(error);
  const first = message.split('\n')[0];
  return `${terminalText(first ?? '')} (unexpected: LOG_LEVEL=debug shows the stack trace)`;
}

/** Probot's listen error, whose message already says which port and what to do. */
function isPortInUse(error: Error): boolean {
  return (error as NodeJS.ErrnoException).code === 'EADDRINUSE';
}

/** Errors whose message is already the one actionable line for the user. */
function isOneLineFailure(error: Error): boolean {
  if (isPortInUse(error)) return true;
  return [
    'MetricsPortError',
    'QueueSchemaError',
    'DockerUnavailableError',
    'ModelEndpointError',
    'RepoConfigError',
    'AppConfigError',
    'SandboxImageError',
    'DataDirBusyError',
  ].includes(error.name);
}
