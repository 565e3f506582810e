// Failing and passing test counts from a test runner's summary line, when it printed one:
// pytest, unittest, Jest/Vitest, Mocha, cargo test, Go. Undefined when none is recognised.

export interface TestCounts {
  passed: number;
  /** Failures and errors together. */
  failed: number;
}

export function parseTestCounts(output: string): TestCounts | undefined {
  // The summary is near the end; a log line quoting an earlier run must not win.
  for (const parse of PARSERS) {
    const counts = parse(output);
    if (counts) return counts;
  }
  return undefined;
}

const count = (text: string, word: RegExp): number => {
  const m = new RegExp(`(\\d+) ${word.source}`).exec(text);
  return m ? Number(m[1]) : 0;
};

const lastMatch = (output: string, re: RegExp): string | undefined => {
  const all = [...output.matchAll(new RegExp(re.source, `${re.flags.replace('g', '')}g`))];
  return all.at(-1)?.[0];
};

const PARSERS: ((output: string) => TestCounts | undefined)[] = [
  // pytest: `==== 2 failed, 3 passed, 1 error in 0.12s ====` (or `-q`: `2 failed, 3 passed in 0.1s`)
  (output) => {
    const line = lastMatch(
      output,
      /^[=\s]*(?:\d+ (?:failed|passed|errors?|skipped|xfailed|xpassed|deselected|warnings?)(?:, )?)+ in [\d.]+s/m,
    );
    if (!line) return undefined;
    return {
      passed: count(line, /passed/),
      failed: count(line, /failed/) + count(line, /errors?/),
    };
  },
  // Jest / Vitest: `Tests:       1 failed, 4 passed, 5 total` / `Tests  1 failed | 4 passed (5)`
  (output) => {
    const line = lastMatch(output, /^\s*Tests:?\s+(?:\d+ \w+(?:, | \| )?)+/m);
    if (!line) return undefined;
    return { passed: count(line, /passed/), failed: count(line, /failed/) };
  },
  // cargo: `test result: FAILED. 3 passed; 1 failed; 0 ignored`
  (output) => {
    const lines = [...output.matchAll(/test result: \w+\. (\d+) passed; (\d+) failed/g)];
    if (lines.length === 0) return undefined;
    return lines.reduce(
      (sum, m) => ({ passed: sum.passed + Number(m[1]), failed: sum.failed + Number(m[2]) }),
      { passed: 0, failed: 0 },
    );
  },
  // unittest: `Ran 5 tests in 0.01s` then `OK` or `FAILED (failures=1, errors=2)`
  (output) => {
    const ran = lastMatch(output, /^Ran (\d+) tests? in [\d.]+s/m);
    if (!ran) return undefined;
    const total = Number(/\d+/.exec(ran)?.[0] ?? 0);
    const after = output.slice(output.lastIndexOf(ran));
    const failed = /^FAILED \(([^)]*)\)/m.exec(after)?.[1] ?? '';
    const bad =
      Number(/failures=(\d+)/.exec(failed)?.[1] ?? 0) +
      Number(/errors=(\d+)/.exec(failed)?.[1] ?? 0);
    return { passed: Math.max(0, total - bad), failed: bad };
  },
  // Mocha: `3 passing (20ms)` and `1 failing`
  (output) => {
    const passing = lastMatch(output, /^\s*\d+ passing\b/m);
    if (!passing) return undefined;
    const failing = lastMatch(output, /^\s*\d+ failing\b/m);
    return {
      passed: Number(/\d+/.exec(passing)?.[0] ?? 0),
      failed: failing ? Number(/\d+/.exec(failing)?.[0] ?? 0) : 0,
    };
  },
  // go test: one `--- FAIL:` per failing test, `--- PASS:` with -v; `ok`/`FAIL` per package
  (output) => {
    const fails = output.match(/^\s*--- FAIL: /gm)?.length ?? 0;
    const passes = output.match(/^\s*--- PASS: /gm)?.length ?? 0;
    if (fails + passes === 0) return undefined;
    return { passed: passes, failed: fails };
  },
];
