// pytest's own account of a test run (its JUnit XML report), so that a process which exits 0
// before pytest has run anything (`os._exit(0)` on import) is not read as a passing run. The
// report is written by code the agent controls: it is parsed as untrusted, bounded text, and
// it proves only that pytest got as far as reporting, not that nobody forged the file.
import { randomBytes } from 'node:crypto';
import type { Sandbox } from '../leaf/sandbox.js';
import type { TestReport, TestResult } from './run-types.js';

/** Reports larger than this are not read (pytest's are kilobytes per hundred tests). */
export const MAX_REPORT_BYTES = 8 * 1024 * 1024;

// A plain word list: anything the shell would expand, redirect, chain or quote is left alone,
// since appending to it could change what runs or where the option lands.
const UNSAFE = /[^A-Za-z0-9_\-./:=,+@%]/;
const PYTHON = /^python(?:3(?:\.\d+)?)?$/;
const ENV_ASSIGNMENT = /^[A-Za-z_][A-Za-z0-9_]*=/;

/**
 * The command with `--junitxml=<reportPath>` appended when it is a pytest invocation that can
 * safely take one more option; undefined otherwise (the run is judged by its exit code alone).
 * Recognised: `[VAR=value…] [uv run|poetry run] pytest|py.test|python[3[.N]] -m pytest [args]`,
 * plain words only, with no `--` and without `-p no:junitxml`.
 */
export function pytestReportCommand(command: string, reportPath: string): string | undefined {
  const words = pytestWords(command);
  return words && `${words.join(' ')} --junitxml=${reportPath}`;
}

/** The words of a recognised pytest invocation (see pytestReportCommand), else undefined. */
export function pytestWords(command: string): string[] | undefined {
  const words = command.trim().split(/[ \t]+/);
  if (words.some((w) => w === '' || w === '--' || UNSAFE.test(w))) return undefined;
  if (words.some((w) => w.endsWith('no:junitxml'))) return undefined;
  let i = 0;
  while (i < words.length && ENV_ASSIGNMENT.test(words[i]!)) i++;
  if ((words[i] === 'uv' || words[i] === 'poetry') && words[i + 1] === 'run') i += 2;
  const head = words[i];
  const isPytest =
    head === 'pytest' ||
    head === 'py.test' ||
    (head !== undefined && PYTHON.test(head) && words[i + 1] === '-m' && words[i + 2] === 'pytest');
  return isPytest ? words : undefined;
}

/** The testsuite totals of a JUnit XML report, or why it does not count. */
export function parseJUnitReport(xml: string): TestReport {
  const none = (problem: string): TestReport => ({
    present: false,
    tests: 0,
    failures: 0,
    errors: 0,
    skipped: 0,
    problem,
  });
  const body = xml.replace(/^\uFEFF?\s*(?:<\?xml[^>]*\?>\s*)?/, '');
  const root = /^<(testsuites|testsuite)(?=[\s/>])/.exec(body)?.[1];
  if (!root) return none('the test report is not a JUnit XML report');
  if (!new RegExp(`</${root}>\\s*$`).test(body) && !/^<[^>]*\/>\s*$/.test(body)) {
    return none('the test report is cut short');
  }
  const totals = { tests: 0, failures: 0, errors: 0, skipped: 0 };
  let suites = 0;
  for (const match of body.matchAll(/<testsuite(?=[\s/>])([^>]*)>/g)) {
    suites++;
    const attrs = new Map<string, string>();
    for (const a of match[1]!.matchAll(/([A-Za-z_:][-\w.:]*)\s*=\s*"([^"]*)"/g)) {
      attrs.set(a[1]!, a[2]!);
    }
    for (const key of ['tests', 'failures', 'errors', 'skipped'] as const) {
      const value = attrs.get(key) ?? (key === 'tests' ? undefined : '0');
      if (value === undefined || !/^\d{1,9}$/.test(value)) {
        return none(`the test report has no valid ${key} count`);
      }
      totals[key] += Number(value);
    }
  }
  if (suites === 0) return none('the test report has no test suite');
  const report: TestReport = { present: true, ...totals };
  // pytest writes a module it could not import as a test case with this error (and counts it
  // as a test): "collected 0 items / 1 error" is no test at all.
  const collectionErrors = body.match(/<error\s+message="collection failure"/g)?.length ?? 0;
  if (collectionErrors > 0) report.collectionErrors = collectionErrors;
  if (collectionErrors > 0) {
    report.problem = `pytest could not collect the tests (${counted(collectionErrors, 'collection error')})`;
  } else if (totals.tests === 0) report.problem = 'the test report lists no tests';
  else if (totals.failures + totals.errors > 0)
    report.problem = `the test report lists ${counted(totals.failures, 'failure')} and ${counted(totals.errors, 'error')}`;
  return report;
}

/** `1 test`, `2 tests`, `0 tests`. */
export function counted(n: number, noun: string): string {
  return `${n} ${noun}${n === 1 ? '' : 's'}`;
}

/** What a run whose report never appeared (or could not be read) is recorded as. */
export function missingReport(problem: string): TestReport {
  return { present: false, tests: 0, failures: 0, errors: 0, skipped: 0, problem };
}

/** A pass: exit 0, not timed out, and (for pytest) a report that exists and counts. */
export function testPassed(test: TestResult): boolean {
  return test.exitCode === 0 && !test.timedOut && test.report?.problem === undefined;
}

/** A fresh, unguessable report path outside the repository (the sandbox's /tmp). */
export function reportPath(): string {
  return `/tmp/frognano-report-${randomBytes(16).toString('hex')}.xml`;
}

/** Reads (bounded) and removes the report pytest was asked to write at `file`. */
export async function readReport(
  sandbox: Sandbox,
  file: string,
  signal?: AbortSignal,
): Promise<TestReport> {
  const read = await sandbox.exec(
    `test -f ${file} || exit 3; cat -- ${file}; s=$?; rm -f -- ${file}; exit $s`,
    { timeoutMs: 60_000, maxOutputBytes: MAX_REPORT_BYTES, ...(signal ? { signal } : {}) },
  );
  if (read.exitCode === 3 && read.stdout.length === 0) {
    return missingReport('no test report: the test process exited before pytest wrote its report');
  }
  if (read.exitCode !== 0 || read.timedOut) {
    return missingReport(`no test report: it could not be read (exit ${read.exitCode})`);
  }
  if (read.stdoutDroppedChars > 0) {
    return missingReport(`the test report is larger than ${MAX_REPORT_BYTES} bytes`);
  }
  return parseJUnitReport(read.stdout.toString('utf8'));
}
