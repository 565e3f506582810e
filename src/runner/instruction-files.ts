// The repository's instructions for coding agents (`AGENTS.md` and the like, `instructions_files`)
// as part of the task's extra guidance. The files are the repository's, at the run's base
// revision: read from git's objects, only when they are files of the tree, sanitized as issue
// text is (what a reader of the rendered file would not see is removed), and capped in total.
import type { InstructionFileUse, ReadUntrustedTexts } from './run-types.js';
import type { TreeFile } from './tree-files.js';
import type { Workspace } from './workspace.js';

/** Most instruction text given to the model, all files together (UTF-8 bytes). */
export const MAX_INSTRUCTION_BYTES = 16 * 1024;
/** Most of one file that is read (the sanitizer takes at most 64 KiB of text). */
const MAX_FILE_BYTES = 64 * 1024;

export interface InstructionFiles {
  /** In the task, in order, after the config's `instructions`. */
  texts: string[];
  files: InstructionFileUse[];
}

export async function readInstructionFiles(
  workspace: Pick<Workspace, 'readFiles'>,
  paths: readonly string[],
  options: { revision?: string; read?: ReadUntrustedTexts; listMissing: boolean },
): Promise<InstructionFiles> {
  let tree: TreeFile[];
  try {
    tree = await workspace.readFiles(paths, {
      ...(options.revision === undefined ? {} : { revision: options.revision }),
      maxBytes: MAX_FILE_BYTES,
    });
  } catch (error) {
    const reason = `could not be read (${error instanceof Error ? error.message : String(error)})`;
    return { texts: [], files: paths.map((path) => ({ path, state: 'refused', reason })) };
  }
  const raw = tree.map(rawText);
  const readable = raw.filter(
    (r): r is { path: string; text: string; size: number } => 'text' in r,
  );
  // The reader is a worker thread, started on first use: not for a repository without files.
  const reads =
    readable.length === 0
      ? []
      : options.read
        ? await options.read(readable.map((r) => r.text))
        : readable.map(() => ({ ok: false as const, reason: 'nothing here reads untrusted text' }));
  const sanitized = new Map(readable.map((r, i) => [r, reads[i]!]));

  const texts: string[] = [];
  const files: InstructionFileUse[] = [];
  let room = MAX_INSTRUCTION_BYTES;
  for (const entry of raw) {
    if ('use' in entry) {
      if (entry.use.state !== 'missing' || options.listMissing) files.push(entry.use);
      continue;
    }
    const read = sanitized.get(entry)!;
    if (!read.ok) {
      files.push({
        path: entry.path,
        state: 'refused',
        reason: read.reason.replace(/\bthe issue text\b/g, 'the file'),
      });
      continue;
    }
    const text = read.text.trim();
    const size = Buffer.byteLength(text);
    if (size === 0) {
      files.push({ path: entry.path, state: 'empty' });
      continue;
    }
    const shown = size <= room ? text : cutAt(text, room);
    const bytes = Buffer.byteLength(shown);
    // Once one file is cut, the files after it are left out, even when a little room is left.
    room = shown === text ? room - bytes : 0;
    if (shown !== '') texts.push(shown);
    const whole = shown === text && entry.size <= MAX_FILE_BYTES;
    files.push(
      whole
        ? { path: entry.path, state: 'used', bytes }
        : // Past the read cap only the file's own size is known.
          {
            path: entry.path,
            state: 'cut',
            bytes,
            size: entry.size > MAX_FILE_BYTES ? entry.size : size,
          },
    );
  }
  return { texts, files };
}

/** A file's text, or what became of it when it has none to give. */
function rawText(
  file: TreeFile,
): { path: string; text: string; size: number } | { path: string; use: InstructionFileUse } {
  const refused = (reason: string) => ({
    path: file.path,
    use: { path: file.path, state: 'refused' as const, reason },
  });
  switch (file.kind) {
    case 'missing':
      return { path: file.path, use: { path: file.path, state: 'missing' } };
    case 'outside':
      return refused('is a symbolic link to a place outside the repository');
    case 'other':
      return refused(`is ${file.what}, not a file`);
    case 'file':
      if (file.bytes.includes(0)) return refused('is a binary file');
      return {
        path: file.path,
        // A cut in the middle of a character leaves it out rather than a replacement character.
        text: new TextDecoder('utf-8', { ignoreBOM: false }).decode(file.bytes, {
          stream: file.size > file.bytes.length,
        }),
        size: file.size,
      };
  }
}

/** The longest start of `text` within `bytes`, ending at a line end when one is near. */
function cutAt(text: string, bytes: number): string {
  if (bytes <= 0) return '';
  const start = new TextDecoder().decode(Buffer.from(text).subarray(0, bytes), { stream: true });
  const lineEnd = start.lastIndexOf('\n');
  return (lineEnd >= start.length / 2 ? start.slice(0, lineEnd) : start).trimEnd();
}
