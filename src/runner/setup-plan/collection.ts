// Whether the test command can use the environment: for pytest, its own collection (`--collect-only`)
// counts the tests and names the import errors; other commands have no such dry run and are
// judged by setup's exit codes alone.
import type { Sandbox } from '../../leaf/sandbox.js';
import { COMMAND_OUTPUT_BYTES, combined, combinedOutput } from '../command-output.js';
import { pytestWords } from '../test-report.js';

/** What collection found: tests, and the import errors that kept some from being collected. */
export interface Collection {
  tests: number;
  importErrors: string[];
  /** pytest's exit code (0: collected; 2: errors; 5: nothing collected). */
  exitCode: number;
}

const SHOWN_IMPORT_ERRORS = 5;
const PROBE_TIMEOUT_MS = 5 * 60_000;

/** The collection command for a pytest test command, else undefined. */
export function collectionCommand(testCommand: string): string | undefined {
  const words = pytestWords(testCommand);
  return words && `${words.join(' ')} --collect-only -q -p no:cacheprovider`;
}

export async function collectTests(
  sandbox: Sandbox,
  testCommand: string,
  signal: AbortSignal,
): Promise<Collection | undefined> {
  const command = collectionCommand(testCommand);
  if (!command) return undefined;
  const done = await sandbox.exec(combinedOutput(command), {
    timeoutMs: PROBE_TIMEOUT_MS,
    signal,
    maxOutputBytes: COMMAND_OUTPUT_BYTES,
    // No bytecode from a probe in the tree.
    env: { PYTHONDONTWRITEBYTECODE: '1' },
  });
  return parseCollection(combined(done), done.timedOut ? -1 : done.exitCode);
}

/** pytest's `-q --collect-only` output, read: the count line, and the import errors, deduplicated. */
export function parseCollection(output: string, exitCode: number): Collection {
  const lines = output.split('\n');
  let tests = 0;
  for (const line of lines) {
    const count = /^(\d+)(?:\/\d+)? tests? collected/.exec(line.trim());
    if (count) tests = Number(count[1]);
  }
  // `-qq` (a config's addopts adds a -q) prints `path.py: N` per file instead.
  if (tests === 0)
    for (const line of lines) {
      const perFile = /^(\S+\.py): (\d+)$/.exec(line.trim());
      if (perFile) tests += Number(perFile[2]);
    }
  // Without either (older pytest), the node ids it printed.
  if (tests === 0) tests = lines.filter((l) => /^[^\s].*::\S/.test(l)).length;
  const errors = new Set<string>();
  for (const line of lines) {
    const found = /\b(?:ModuleNotFoundError|ImportError): (.+)$/.exec(line);
    if (found) errors.add(found[1]!.trim().slice(0, 200));
  }
  return { tests, importErrors: [...errors].slice(0, SHOWN_IMPORT_ERRORS), exitCode };
}

/** The tests can run: something collected, nothing kept out by an import error. */
export function collectionUsable(collection: Collection | undefined): boolean {
  return (
    collection === undefined ||
    (collection.tests > 0 && collection.importErrors.length === 0 && collection.exitCode === 0)
  );
}
