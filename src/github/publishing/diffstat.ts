// The "what changed" list of the PR body and its revisions: files with their line counts, from
// git's own reading of the patch when the run has it, from the patch text otherwise.
import type { PatchFacts } from '../../runner/run-types.js';
import { quotePath } from '../markdown.js';
import { fileLineName, headerPaths, unquote } from '../../runner/patch-names.js';

export interface DiffStatFile {
  path: string;
  added: number;
  removed: number;
  binary: boolean;
}

/** A file of the patch text as it is read: what each header line named, and its counts. */
interface Block {
  stat: DiffStatFile;
  /** The `diff --git` header's names when it can be split, its raw text otherwise. */
  header?: string[];
  rawHeader?: string;
  oldName?: string;
  newName?: string;
  renamedTo?: string;
  hunks: boolean;
}

/** Lines still to come in the current hunk, on each side. */
interface Hunk {
  old: number;
  new: number;
}

/**
 * Files and line counts of a `git diff` patch, computed from the text alone, read as
 * `git apply` reads it: names from `+++`/`---`, `rename`/`copy` lines and the header, git's
 * quoting undone (`"b/caf\303\251.py"` is `café.py`, `docs b/innocent.md` stays whole), and
 * hunks counted by their headers, so a removed `-- x` line is not a file.
 */
export function diffstat(patch: string): DiffStatFile[] {
  const blocks: Block[] = [];
  const hunk: Hunk = { old: 0, new: 0 };
  for (const line of patch.split('\n')) {
    const current = blocks.at(-1);
    if ((hunk.old > 0 || hunk.new > 0) && current && countLine(current.stat, hunk, line)) continue;
    hunk.old = hunk.new = 0;
    readHeaderLine(blocks, hunk, line);
  }
  return blocks.map((b) => ({ ...b.stat, path: blockPath(b) }));
}

/** One line inside a hunk; false when it cannot belong to one (the hunk ends there). */
function countLine(stat: DiffStatFile, hunk: Hunk, line: string): boolean {
  const tag = line[0];
  if (tag === '\\') return true; // "\ No newline at end of file"
  if (tag === '-') {
    stat.removed += 1;
    hunk.old -= 1;
  } else if (tag === '+') {
    stat.added += 1;
    hunk.new -= 1;
  } else if (tag === ' ' || line === '') {
    hunk.old -= 1;
    hunk.new -= 1;
  } else return false;
  return true;
}

/** A line outside hunks: a header of the current file, the start of a hunk or of a file. */
function readHeaderLine(blocks: Block[], hunk: Hunk, line: string): void {
  let current = blocks.at(-1);
  let m: RegExpExecArray | null;
  if (line.startsWith('diff --git ')) {
    const rest = line.slice('diff --git '.length);
    const header = headerPaths(rest);
    blocks.push({ ...newBlock(), ...(header ? { header } : { rawHeader: rest }) });
  } else if (line.startsWith('--- ')) {
    // Outside a `diff --git` block (or after its hunks) this starts a plain diff, as for git.
    if (!current || current.hunks) blocks.push((current = newBlock()));
    current.oldName = fileLineName(line.slice(4));
  } else if (!current) {
    return;
  } else if (line.startsWith('+++ ')) {
    current.newName = fileLineName(line.slice(4));
  } else if ((m = /^@@ -\d+(?:,(\d+))? \+\d+(?:,(\d+))? @@/.exec(line))) {
    current.hunks = true;
    hunk.old = m[1] === undefined ? 1 : Number(m[1]);
    hunk.new = m[2] === undefined ? 1 : Number(m[2]);
  } else if ((m = /^(?:rename|copy) to (.*)$/.exec(line)) && !current.hunks) {
    current.renamedTo = unquote(m[1]!);
  } else if (line === 'GIT binary patch' || /^Binary files .* differ$/.test(line)) {
    current.stat.binary = true;
  }
}

function newBlock(): Block {
  return { stat: { path: '', added: 0, removed: 0, binary: false }, hunks: false };
}

/**
 * The name the file has after the patch: `+++`, then `rename to`/`copy to`, then the header,
 * then `---` (a deletion). A header no line explains is shown whole: nothing is hidden.
 */
function blockPath(b: Block): string {
  return b.newName ?? b.renamedTo ?? b.header?.at(-1) ?? b.oldName ?? b.rawHeader ?? '';
}

/** git's own numstat (the policy step's reading) when there is one; the patch text otherwise. */
export function changedFiles(facts: PatchFacts | undefined, patch: string): DiffStatFile[] {
  if (!facts) return diffstat(patch);
  return facts.files.map((f) => ({
    path: f.path,
    added: f.added ?? 0,
    removed: f.removed ?? 0,
    binary: f.added === null,
  }));
}

/** One line per file (names quoted as git does when unusual), at most `max`, then how many more. */
export function diffstatLines(files: readonly DiffStatFile[], max: number): string[] {
  const shown = files
    .slice(0, max)
    .map((f) =>
      f.binary
        ? `${quotePath(f.path)} | binary`
        : `${quotePath(f.path)} | +${f.added} -${f.removed}`,
    );
  if (files.length > shown.length) shown.push(`… and ${files.length - shown.length} more files`);
  return shown;
}

/** `N files changed, +A -R`. */
export function diffstatTotal(files: readonly DiffStatFile[]): string {
  const added = files.reduce((n, f) => n + f.added, 0);
  const removed = files.reduce((n, f) => n + f.removed, 0);
  return `${files.length} file${files.length === 1 ? '' : 's'} changed, +${added} -${removed}`;
}
