import { describe, expect, it } from 'vitest';
import { parseJUnitReport, pytestReportCommand, testPassed } from '../../src/runner/test-report.js';
import { reportWords } from '../../src/github/status/index.js';

const P = '/tmp/frognano-report-0123abcd.xml';

// What pytest 7.2 writes (trimmed): a testsuites root around one testsuite.
const PYTEST_XML = (tests: number, failures: number, errors: number) =>
  `<?xml version="1.0" encoding="utf-8"?><testsuites><testsuite name="pytest" errors="${errors}" failures="${failures}" skipped="0" tests="${tests}" time="0.03" timestamp="2026-12-01T03:20:00" hostname="x"><testcase classname="test_calc" name="test_add" time="0.001" /></testsuite></testsuites>`;

describe('pytestReportCommand', () => {
  it.each([
    ['python3 -m pytest', `python3 -m pytest --junitxml=${P}`],
    ['pytest -q tests/', `pytest -q tests/ --junitxml=${P}`],
    ['py.test', `py.test --junitxml=${P}`],
    ['python3.11 -m pytest -x', `python3.11 -m pytest -x --junitxml=${P}`],
    ['PYTHONPATH=src pytest', `PYTHONPATH=src pytest --junitxml=${P}`],
    ['uv run pytest -k add', `uv run pytest -k add --junitxml=${P}`],
    ['poetry run python -m pytest', `poetry run python -m pytest --junitxml=${P}`],
  ])('extends %s', (command, expected) => {
    expect(pytestReportCommand(command, P)).toBe(expected);
  });

  it.each([
    'npm test',
    'tox',
    'make test',
    'python3 -m unittest',
    'pytest; true',
    'pytest && echo ok',
    'pytest | tee log',
    'pytest > out.txt',
    'pytest $ARGS',
    "pytest -k 'a or b'",
    'pytest `x`',
    'pytest -- tests/',
    'pytest -p no:junitxml',
    'pytest -pno:junitxml',
    'cd sub && pytest',
    'pytest\nrm -rf /',
    'sh -c pytest',
  ])('leaves %j alone', (command) => {
    expect(pytestReportCommand(command, P)).toBeUndefined();
  });
});

describe('parseJUnitReport', () => {
  it('reads the testsuite counts pytest writes', () => {
    expect(parseJUnitReport(PYTEST_XML(2, 1, 0))).toEqual({
      present: true,
      tests: 2,
      failures: 1,
      errors: 0,
      skipped: 0,
      problem: 'the test report lists 1 failure and 0 errors',
    });
    expect(parseJUnitReport(PYTEST_XML(2, 0, 0))).toEqual({
      present: true,
      tests: 2,
      failures: 0,
      errors: 0,
      skipped: 0,
    });
  });

  it('sums several suites, and accepts a bare testsuite root', () => {
    const two = `<testsuites><testsuite tests="2" failures="0" errors="0"></testsuite><testsuite tests="3" failures="0" errors="1" skipped="1"/></testsuites>`;
    expect(parseJUnitReport(two)).toMatchObject({ present: true, tests: 5, errors: 1, skipped: 1 });
    expect(parseJUnitReport('<testsuite tests="1" failures="0" errors="0"></testsuite>\n')).toEqual(
      { present: true, tests: 1, failures: 0, errors: 0, skipped: 0 },
    );
  });

  it.each([
    ['', 'the test report is not a JUnit XML report'],
    ['<html></html>', 'the test report is not a JUnit XML report'],
    ['<testsuites><testsuite tests="3" failures="0" errors="0">', 'the test report is cut short'],
    ['<testsuites></testsuites>', 'the test report has no test suite'],
    [
      '<testsuites><testsuite failures="0"></testsuite></testsuites>',
      'the test report has no valid tests count',
    ],
    [
      '<testsuites><testsuite tests="-1"></testsuite></testsuites>',
      'the test report has no valid tests count',
    ],
    [
      '<testsuites><testsuite tests="1e9"></testsuite></testsuites>',
      'the test report has no valid tests count',
    ],
    [
      '<testsuites><testsuite tests="1" errors="x"></testsuite></testsuites>',
      'the test report has no valid errors count',
    ],
  ])('refuses %j', (xml, problem) => {
    expect(parseJUnitReport(xml)).toMatchObject({ present: false, problem });
  });

  it('tells collection errors from tests: "collected 0 items / 1 error" is no test at all', () => {
    // What pytest 8 writes when a test module cannot be imported.
    const xml = `<?xml version="1.0" encoding="utf-8"?><testsuites name="pytest tests"><testsuite name="pytest" errors="1" failures="0" skipped="0" tests="1" time="0.191" hostname="vm"><testcase classname="" name="test_x" time="0.000"><error message="collection failure">ImportError while importing test module '/testbed/test_x.py'.\nE   ModuleNotFoundError: No module named 'x'</error></testcase></testsuite></testsuites>`;
    const report = parseJUnitReport(xml);
    expect(report).toEqual({
      present: true,
      tests: 1,
      failures: 0,
      errors: 1,
      skipped: 0,
      collectionErrors: 1,
      problem: 'pytest could not collect the tests (1 collection error)',
    });
    expect(reportWords(report)).toBe('pytest report: 1 collection error, 0 tests');
  });

  it('counts in words that agree with the numbers', () => {
    expect(reportWords(parseJUnitReport(PYTEST_XML(1, 1, 0)))).toBe(
      'pytest report: 1 test, 1 failure, 0 errors',
    );
    expect(reportWords(parseJUnitReport(PYTEST_XML(3, 2, 1)))).toBe(
      'pytest report: 3 tests, 2 failures, 1 error',
    );
    expect(parseJUnitReport(PYTEST_XML(3, 2, 1)).problem).toBe(
      'the test report lists 2 failures and 1 error',
    );
  });

  it('counts a report without tests as no pass', () => {
    expect(parseJUnitReport(PYTEST_XML(0, 0, 0))).toMatchObject({
      present: true,
      tests: 0,
      problem: 'the test report lists no tests',
    });
  });
});

describe('testPassed', () => {
  const base = { command: 'pytest', source: 'config' as const, outputTail: '', durationMs: 1 };
  it('needs exit 0, no timeout, and a clean report when there is one', () => {
    expect(testPassed({ ...base, exitCode: 0, timedOut: false })).toBe(true);
    expect(testPassed({ ...base, exitCode: 1, timedOut: false })).toBe(false);
    expect(testPassed({ ...base, exitCode: 0, timedOut: true })).toBe(false);
    const clean = parseJUnitReport(PYTEST_XML(2, 0, 0));
    expect(testPassed({ ...base, exitCode: 0, timedOut: false, report: clean })).toBe(true);
    const missing = {
      present: false,
      tests: 0,
      failures: 0,
      errors: 0,
      skipped: 0,
      problem: 'no test report',
    };
    expect(testPassed({ ...base, exitCode: 0, timedOut: false, report: missing })).toBe(false);
  });
});
