// pytest's --collect-only output, read: the count in each of its quiet forms, and the import
// errors that kept tests from being collected.
import { describe, expect, it } from 'vitest';
import {
  collectionCommand,
  collectionUsable,
  parseCollection,
} from '../../../src/runner/setup-plan/collection.js';

describe('parseCollection', () => {
  it('reads the count line of -q', () => {
    const out = 'test_a.py::test_one\ntest_a.py::test_two\n\n2 tests collected in 0.01s\n';
    expect(parseCollection(out, 0)).toEqual({ tests: 2, importErrors: [], exitCode: 0 });
  });

  it('adds up the per-file counts of -qq', () => {
    expect(parseCollection('test_a.py: 2\ntests/test_b.py: 3\n', 0).tests).toBe(5);
  });

  it('names the import errors, once each, and judges the environment unusable', () => {
    const out = [
      '==================================== ERRORS ====================================',
      '_________________________ ERROR collecting test_a.py _________________________',
      "E   ModuleNotFoundError: No module named 'dateutil'",
      '_________________________ ERROR collecting test_b.py _________________________',
      "E   ModuleNotFoundError: No module named 'dateutil'",
      "E   ImportError: cannot import name 'x' from 'y'",
      '1 test collected, 2 errors in 0.10s',
    ].join('\n');
    const collection = parseCollection(out, 2);
    expect(collection).toEqual({
      tests: 1,
      importErrors: ["No module named 'dateutil'", "cannot import name 'x' from 'y'"],
      exitCode: 2,
    });
    expect(collectionUsable(collection)).toBe(false);
    expect(collectionUsable(parseCollection('no tests collected in 0.01s\n', 5))).toBe(false);
    expect(collectionUsable(undefined)).toBe(true);
  });

  it('asks pytest commands only', () => {
    expect(collectionCommand('python3 -m pytest -x')).toBe(
      'python3 -m pytest -x --collect-only -q -p no:cacheprovider',
    );
    expect(collectionCommand('npm test')).toBeUndefined();
  });
});
