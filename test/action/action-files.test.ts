// GITHUB_OUTPUT as the runner reads it: each value in the multiline form with a delimiter it
// cannot contain, so a value (a URL, an outcome) can never end early or set another output.
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { appendStepSummary, writeOutputs } from '../../src/action/action-files.js';
import { parseOutputs } from './helpers/action-harness.js';

let dir: string | undefined;
afterEach(() => {
  if (dir) rmSync(dir, { recursive: true, force: true });
  dir = undefined;
});

describe('writeOutputs', () => {
  it('appends after what other steps wrote, and a value cannot set another output', async () => {
    dir = mkdtempSync(join(tmpdir(), 'frognano-output-'));
    const file = join(dir, 'output');
    writeFileSync(file, 'earlier=1\n');
    const hostile = 'x\nghadelimiter_0\npr-number<<EOF\n99\nEOF\npr-url=https://evil.example';
    await writeOutputs(file, {
      outcome: hostile,
      'run-id': 'r1',
      'pr-number': '7',
      'pr-url': 'https://github.com/o/r/pull/7',
    });
    expect(parseOutputs(readFileSync(file, 'utf8'))).toEqual({
      earlier: '1',
      outcome: hostile,
      'run-id': 'r1',
      'pr-number': '7',
      'pr-url': 'https://github.com/o/r/pull/7',
    });
  });

  it('appends the step summary with a final newline', async () => {
    dir = mkdtempSync(join(tmpdir(), 'frognano-summary-'));
    const file = join(dir, 'summary');
    writeFileSync(file, '# earlier step\n');
    await appendStepSummary(file, '## 🐸 frognano');
    expect(readFileSync(file, 'utf8')).toBe('# earlier step\n## 🐸 frognano\n');
  });
});
