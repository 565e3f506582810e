// The environment as evidence (issue 25), in words shared by the pull request body, the status
// comment and summary.md: where setup came from and how long it took, what its network allowed
// and refused, what the test command collected before the change; and, when the tests cannot
// run there, the plain sentence at the top and a `.github/frognano.yml` snippet to commit.
// Commands, hosts and import errors come from the repository: always inline code or fenced.
import type { EnvironmentFacts, RunResult } from '../../runner/run-types.js';
import { testVerdict } from '../../runner/test-verdict.js';
import { fence, inlineCode, textCell } from '../markdown.js';

const SHOWN_COMMANDS = 6;

/** The tests could not run in this environment: the test verdict is inconclusive. */
export function testsInconclusive(result: RunResult): boolean {
  return testVerdict(result) === 'inconclusive';
}

/** The bullet lines of the Environment section (`- Setup:`, `- Network:`, …). */
export function environmentLines(result: RunResult): string[] {
  const env = result.environment;
  if (!env) return [];
  const lines = [`- Setup: ${setupWords(env)}`];
  for (const failed of env.failed)
    lines.push(
      `- Did not work: ${textCell(failed.candidate, 80)}: ${textCell(failed.reason, 300)}`,
    );
  for (const note of env.notes) lines.push(`- Note: ${textCell(note, 300)}`);
  lines.push(...networkLines(result));
  if (env.testsCollected !== undefined) {
    const errors = env.importErrors.map((e) => inlineCode(e)).join(', ');
    lines.push(
      `- Tests collected: ${env.testsCollected}${errors ? `; import errors at collection: ${errors}` : ''}`,
    );
  }
  return lines;
}

/** `## Environment` and its lines; empty without environment facts. */
export function environmentSection(result: RunResult): string {
  const lines = environmentLines(result);
  return lines.length > 0 ? `## Environment\n\n${lines.join('\n')}` : '';
}

/**
 * The plain sentence for the top of the pull request and the status comment when the tests
 * cannot run here, with the snippet that would fix it; undefined when they can.
 */
export function environmentProblem(result: RunResult): string | undefined {
  const env = result.environment;
  if (!env || env.runnable) return undefined;
  return [
    `**The tests could not run in this environment: ${textCell(env.problem ?? 'unknown', 300)}.** The test verdict is *inconclusive*. To fix the environment, commit a \`.github/frognano.yml\` like this (adjust the commands) and try again:`,
    fence(configSnippet(result), 'yaml'),
  ].join('\n\n');
}

/** A `.github/frognano.yml` that pins the environment: what worked, or what to try. */
export function configSnippet(result: RunResult): string {
  const env = result.environment;
  const commands = env?.commands.length ? env.commands.map((c) => c.command) : [];
  const lines = ['# .github/frognano.yml', 'setup:'];
  if (commands.length > 0) for (const c of commands) lines.push(`  - ${JSON.stringify(c)}`);
  else {
    lines.push('  - "python3 -m venv --system-site-packages ~/.venv"');
    const missing = (env?.importErrors ?? [])
      .map((e) => /No module named '([^']+)'/.exec(e)?.[1])
      .filter((m): m is string => m !== undefined);
    lines.push(
      missing.length > 0
        ? `  - "pip install ..." # the packages that provide: ${missing.join(', ')}`
        : '  - "pip install -r requirements.txt" # what the tests need',
    );
  }
  const network = env?.network === undefined || env.network === 'none' ? 'registries' : env.network;
  lines.push(`network: ${network}`);
  if (result.testCommand) lines.push(`test: ${JSON.stringify(result.testCommand.command)}`);
  return lines.join('\n');
}

function setupWords(env: EnvironmentFacts): string {
  if (env.snapshot === 'hit') return 'reused (snapshot)';
  const took = env.seconds !== undefined ? ` (${env.seconds} s)` : '';
  if (env.source === 'none') return 'none (`setup: []`)';
  if (env.source === 'config') return `\`.github/frognano.yml\`${took}`;
  if (env.commands.length === 0) return `automatic: nothing installed${took}`;
  const shown = env.commands
    .filter((c) => !c.from.startsWith('automatic setup'))
    .slice(0, SHOWN_COMMANDS)
    .map((c) => `${inlineCode(c.command)} (from ${inlineCode(c.from)})`);
  const ecosystems = env.ecosystems.length > 0 ? ` (${env.ecosystems.join(', ')})` : '';
  return `automatic${ecosystems}: ${shown.join(', ')}${took}`;
}

/** `- Network:` and `- Blocked:` from setup's egress facts, when setup had a network proxy. */
function networkLines(result: RunResult): string[] {
  const egress = result.egress;
  if (!egress) return [];
  const allowed = egress.allowedHosts.map((h) => inlineCode(h)).join(', ');
  const lines = [`- Network: ${egress.mode}${allowed ? `, allowed: ${allowed}` : ''}`];
  for (const b of egress.blocked) {
    const where = `${b.host}:${b.port}`;
    lines.push(
      `- Blocked: ${inlineCode(where)} ×${b.count} (${textCell(b.reason, 60)}); to allow it: ${inlineCode(`network_allow: [${JSON.stringify(b.port === 443 ? b.host : where)}]`)}`,
    );
  }
  return lines;
}
