// What the run made of the repository's instruction files (AGENTS.md and the like), in words:
// the PR body names the files the task was given; the status comment says which were refused
// or cut, so a maintainer learns why a rule of theirs was not followed.
import type { InstructionFileUse } from '../../runner/run-types.js';
import { literalLines, fileName } from '../markdown.js';
import type { StatusState } from './status-comment.js';

const LIMIT = '16 KB';

/** One file, as the PR body and summary.md list it. */
export function instructionFileWords(file: InstructionFileUse): string {
  const name = fileName(file.path);
  switch (file.state) {
    case 'used':
      return `${name} (${bytes(file.bytes ?? 0)})`;
    case 'cut':
      return file.bytes
        ? `${name} (cut at the ${LIMIT} limit: ${cutWords(file)})`
        : `${name} (left out: the ${LIMIT} limit was reached before it)`;
    case 'empty':
      return `${name} (nothing visible in it)`;
    case 'refused':
      return `${name} (not used: it ${reason(file)})`;
    case 'missing':
      return `${name} (not in the repository)`;
  }
}

/** The PR body's section; empty when the repository has no instruction file. */
export function instructionFilesSection(files: readonly InstructionFileUse[] | undefined): string {
  const shown = (files ?? []).filter((f) => f.state !== 'missing');
  if (shown.length === 0) return '';
  return [
    '## Instructions',
    `The task included the repository's instruction files (sanitized like the issue, after \`instructions\` from \`.github/frognano.yml\`): ${shown.map(instructionFileWords).join(', ')}.`,
  ].join('\n\n');
}

/** Lines for the status comment: the files that were refused, cut or not found. */
export function instructionFileNotes(files: readonly InstructionFileUse[] | undefined): string[] {
  return (files ?? [])
    .filter((f) => f.state === 'refused' || f.state === 'cut' || f.state === 'missing')
    .map((f) => {
      const name = `The instruction file ${fileName(f.path)}`;
      if (f.state === 'refused') return `${name} was not used: it ${reason(f)}.`;
      if (f.state === 'missing') {
        return `${name} named in \`instructions_files\` is not in the repository.`;
      }
      return f.bytes
        ? `${name} was cut at the ${LIMIT} limit (${cutWords(f)}): the model saw only its start.`
        : `${name} was left out: the ${LIMIT} limit was reached before it.`;
    });
}

/** `state` with the notes shown under its first line (states that end a run only). */
export function withNotes(state: StatusState, notes: readonly string[]): StatusState {
  if (notes.length === 0) return state;
  if (
    state.kind === 'done' ||
    state.kind === 'revised' ||
    state.kind === 'no-change' ||
    state.kind === 'failed'
  ) {
    return { ...state, notes: [...notes] };
  }
  return state;
}

function reason(file: InstructionFileUse): string {
  // Ours, but a git error can quote a path: kept literal.
  return literalLines(file.reason ?? 'could not be read').join(' ');
}

function cutWords(file: InstructionFileUse): string {
  return `${(file.bytes ?? 0).toLocaleString('en-US')} of ${bytes(file.size ?? 0)}`;
}

function bytes(n: number): string {
  return `${n.toLocaleString('en-US')} bytes`;
}
