// Choosing the attempt to publish, by executed evidence, in a fixed order, and saying for
// every attempt why it won or lost:
//   1. the patch is non-empty, the attempt did not fail, and the patch passes policy;
//   2. tests after: pass, or fewer failing than before (runners' summary counts), then fewer
//      failing than the other attempts;
//   3. its own new or changed tests fail on the original tree and pass on the patched one, its
//      tests after are no worse than before, and its own tests do not also pass on the
//      original code with the patch's added lines as comments (they would be reading the
//      source as text, not running it: see textOnlyPatch); without that run (the text-only
//      tree could not be built or applied) they earn no credit;
//   4. agreement: attempts whose normalized patches match vote together;
//   5. the smaller change, then fewer steps, then the lower attempt number.
import type { TestResult } from './run-types.js';
import { parseTestCounts } from './test-counts.js';
import { testPassed } from './test-report.js';

export interface AttemptEvidence {
  attempt: number;
  patch: string;
  steps: number;
  /** Why the attempt cannot be published at all (a failure, an empty patch, a policy rule). */
  disqualified?: string;
  /** The attempt itself failed (crashed, a sandbox limit): ranked after every other. */
  failed?: boolean;
  verifyAfter?: TestResult;
  /** The whole patch, the agent's tests included. */
  agentTests?: TestResult;
  /** The agent's tests on the original source. */
  ownTestsBefore?: TestResult;
  /**
   * The agent's tests on the original source with the change's text (textOnlyPatch); without
   * it its own tests earn no credit.
   */
  ownTestsText?: TestResult;
  /** Lines added plus removed; undefined to count them in the patch text. */
  diffLines?: number;
}

export type TestsVerdict = 'pass' | 'fewer failing' | 'fail' | 'not run';
export type OwnTestsVerdict = 'fail→pass' | 'reads source' | 'no' | 'none';

export interface AttemptRanking {
  attempt: number;
  selected: boolean;
  /** One sentence: why it won, or the first criterion it lost on. */
  reason: string;
  tests: TestsVerdict;
  /** e.g. `pass`, `2 failing (3 before)`, `exit 1`. */
  testsText: string;
  ownTests: OwnTestsVerdict;
  /** Attempts whose normalized patch is this one's (itself included); 0 when disqualified. */
  votes: number;
  diffLines: number;
  steps: number;
}

export function selectAttempt(
  evidence: readonly AttemptEvidence[],
  verifyBefore: TestResult | undefined,
): AttemptRanking[] {
  const normalized = evidence.map((e) => (e.disqualified ? undefined : normalizePatch(e.patch)));
  const rows = evidence.map((e, i): Row => {
    const tests = testsVerdict(e.verifyAfter, verifyBefore);
    return {
      attempt: e.attempt,
      selected: false,
      reason: '',
      tests: tests.verdict,
      testsText: tests.text,
      ...(tests.failing !== undefined ? { failing: tests.failing } : {}),
      ...ownTestsVerdict(e, verifyBefore),
      votes: normalized[i] === undefined ? 0 : normalized.filter((n) => n === normalized[i]).length,
      diffLines: e.diffLines ?? countChangedLines(e.patch),
      steps: e.steps,
      ...(e.disqualified ? { disqualified: e.disqualified } : {}),
      ...(e.failed ? { failed: true } : {}),
    };
  });
  const order = [...rows].sort(compare);
  const winner = order[0];
  if (!winner) return [];
  winner.selected = true;
  winner.reason = winner.disqualified
    ? `chosen although no attempt qualified: ${winner.disqualified}`
    : `won: ${strengths(winner, rows.length)}`;
  for (const row of rows) if (row !== winner) row.reason = `lost: ${whyLost(row, winner)}`;
  return rows.map(({ disqualified: _d, failed: _f, failing: _n, unchecked: _u, ...row }) => row);
}

type Row = AttemptRanking & {
  disqualified?: string;
  failed?: boolean;
  failing?: number;
  /** Its own tests would be fail→pass, but there was no text-only run to check them on. */
  unchecked?: true;
};

const TESTS_RANK: Record<TestsVerdict, number> = {
  pass: 2,
  'fewer failing': 1,
  fail: 0,
  'not run': 0,
};

/** Negative when `a` ranks before `b`. */
function compare(a: Row, b: Row): number {
  return (
    Number(a.failed === true) - Number(b.failed === true) ||
    Number(a.disqualified !== undefined) - Number(b.disqualified !== undefined) ||
    TESTS_RANK[b.tests] - TESTS_RANK[a.tests] ||
    fewerFailing(a, b) ||
    Number(b.ownTests === 'fail→pass') - Number(a.ownTests === 'fail→pass') ||
    b.votes - a.votes ||
    a.diffLines - b.diffLines ||
    a.steps - b.steps ||
    a.attempt - b.attempt
  );
}

/** Negative when `a` has fewer failing tests after than `b` (both counted). */
function fewerFailing(a: Row, b: Row): number {
  return a.failing !== undefined && b.failing !== undefined ? a.failing - b.failing : 0;
}

function strengths(w: Row, count: number): string {
  const parts = ['a non-empty patch that passes policy'];
  if (w.tests === 'pass') parts.push('tests after pass');
  else if (w.tests === 'fewer failing') parts.push(`fewer failing tests (${w.testsText})`);
  else parts.push(`tests after: ${w.testsText}`);
  if (w.ownTests === 'fail→pass') parts.push('its own tests fail before and pass after');
  if (w.votes > 1) parts.push(`${w.votes} of ${count} attempts made this change`);
  parts.push(`${w.diffLines} changed lines`, `${w.steps} steps`);
  return parts.join('; ');
}

function whyLost(row: Row, w: Row): string {
  const by = `attempt ${w.attempt}`;
  if (row.disqualified) return row.disqualified;
  if (TESTS_RANK[row.tests] !== TESTS_RANK[w.tests] || fewerFailing(row, w) !== 0)
    return `tests after: ${row.testsText} (${by}: ${w.testsText})`;
  if (row.ownTests === 'reads source' && w.ownTests === 'fail→pass')
    return `its own tests read the source, not run it: they pass on the original code with the new lines as comments (${by}'s fail before and pass after)`;
  if (row.unchecked && w.ownTests === 'fail→pass')
    return `its own tests could not be run on the original code with the new lines as comments, so they earn no credit (${by}'s fail before and pass after)`;
  if (row.ownTests !== w.ownTests && w.ownTests === 'fail→pass')
    return `its own tests do not fail before and pass after (${by}'s do)`;
  if (row.votes !== w.votes)
    return `${row.votes} of the attempts made its change, ${w.votes} made ${by}'s`;
  if (row.diffLines !== w.diffLines)
    return `a larger change (${row.diffLines} changed lines, ${by}: ${w.diffLines})`;
  if (row.steps !== w.steps) return `more steps (${row.steps}, ${by}: ${w.steps})`;
  return `a tie with ${by}; the lower number wins`;
}

function testsVerdict(
  after: TestResult | undefined,
  before: TestResult | undefined,
): { verdict: TestsVerdict; text: string; failing?: number } {
  if (!after) return { verdict: 'not run', text: 'not run' };
  if (testPassed(after)) return { verdict: 'pass', text: 'pass', failing: 0 };
  if (after.timedOut) return { verdict: 'fail', text: 'timed out' };
  const now = parseTestCounts(after.outputTail);
  const then = before ? parseTestCounts(before.outputTail) : undefined;
  if (now && then && before?.exitCode !== 0 && now.failed < then.failed)
    return {
      verdict: 'fewer failing',
      text: `${now.failed} failing (${then.failed} before)`,
      failing: now.failed,
    };
  if (!now) return { verdict: 'fail', text: `exit ${after.exitCode}` };
  return { verdict: 'fail', text: `${now.failed} failing`, failing: now.failed };
}

function ownTestsVerdict(
  e: AttemptEvidence,
  before: TestResult | undefined,
): { ownTests: OwnTestsVerdict; unchecked?: true } {
  const { agentTests: withFix, ownTestsBefore: without, ownTestsText: textOnly, verifyAfter } = e;
  if (!withFix || !without) return { ownTests: 'none' };
  const failed = (t: TestResult) => parseTestCounts(t.outputTail)?.failed;
  // Fails on the original: more failing than the original tree had, or failing at all when it
  // passed.
  const failsBefore =
    !testPassed(without) &&
    ((before !== undefined && testPassed(before)) ||
      (failed(without) ?? 0) > (before ? (failed(before) ?? Infinity) : 0));
  // Passes on the patched tree: passes, or fails no more than the repository's own tests do.
  const passesAfter =
    testPassed(withFix) ||
    (verifyAfter !== undefined &&
      failed(withFix) !== undefined &&
      failed(withFix)! <= (failed(verifyAfter) ?? -1));
  if (!failsBefore || !passesAfter || !harnessNoWorse(verifyAfter, before))
    return { ownTests: 'no' };
  // Fail closed: unchecked, they might be reading the source.
  if (textOnly === undefined) return { ownTests: 'no', unchecked: true };
  // The text-only tree behaves as the original: tests that fare better there read the text.
  const betterOnText =
    testPassed(textOnly) ||
    (failed(textOnly) !== undefined && failed(textOnly)! < (failed(without) ?? -Infinity));
  return { ownTests: betterOnText ? 'reads source' : 'fail→pass' };
}

/** The repository's own tests after the patch fare no worse than before it. */
function harnessNoWorse(after: TestResult | undefined, before: TestResult | undefined): boolean {
  if (!after) return false;
  if (testPassed(after)) return true;
  if (!before || testPassed(before) || (after.timedOut && !before.timedOut)) return false;
  const now = parseTestCounts(after.outputTail);
  const then = parseTestCounts(before.outputTail);
  return !now || !then || now.failed <= then.failed;
}

/**
 * The change itself, without what does not make it different: context lines, line numbers,
 * whitespace, and the order of hunks and files.
 */
export function normalizePatch(patch: string): string {
  const files = new Map<string, string[]>();
  let file = '';
  let hunk: string[] | undefined;
  const flush = () => {
    if (hunk && hunk.length > 0) files.get(file)?.push(hunk.join('\n'));
    hunk = undefined;
  };
  for (const line of patch.split('\n')) {
    const header = /^diff --git a\/(.*) b\/(.*)$/.exec(line);
    if (header) {
      flush();
      file = header[2] ?? '';
      if (!files.has(file)) files.set(file, []);
      continue;
    }
    if (line.startsWith('@@')) {
      flush();
      hunk = [];
      continue;
    }
    if (line.startsWith('GIT binary patch')) {
      flush();
      hunk = [line];
      continue;
    }
    if (!hunk) continue;
    if (line.startsWith('+') || line.startsWith('-'))
      hunk.push(line[0] + line.slice(1).replace(/\s+/g, ''));
    else if (hunk[0]?.startsWith('GIT binary patch')) hunk.push(line);
  }
  flush();
  return [...files.entries()]
    .sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0))
    .map(([name, hunks]) => `${name}\n${[...hunks].sort().join('\n--\n')}`)
    .join('\n==\n');
}

function countChangedLines(patch: string): number {
  return patch
    .split('\n')
    .filter((l) => /^[+-]/.test(l) && !l.startsWith('+++ ') && !l.startsWith('--- ')).length;
}
