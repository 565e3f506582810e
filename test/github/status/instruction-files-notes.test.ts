import { describe, expect, it } from 'vitest';
import {
  instructionFileNotes,
  withNotes,
} from '../../../src/github/status/instruction-files-notes.js';
import { renderPrBody } from '../../../src/github/publishing/pr-body.js';
import { renderStatus } from '../../../src/github/status/status-comment.js';
import { renderSummary } from '../../../src/github/publishing/render-summary.js';
import type { InstructionFileUse } from '../../../src/runner/run-types.js';
import { runResult } from '../helpers/run-result.js';

const FILES: InstructionFileUse[] = [
  { path: 'AGENTS.md', state: 'used', bytes: 1234 },
  { path: 'CLAUDE.md', state: 'cut', bytes: 15150, size: 20000 },
  {
    path: 'OUT.md',
    state: 'refused',
    reason: 'is a symbolic link to a place outside the repository',
  },
  { path: 'docs/@team.md', state: 'missing' },
];

describe('instruction files in the PR body, summary.md and the status comment', () => {
  it('names the files the task was given in the PR body', () => {
    const body = renderPrBody({
      result: runResult({ instructionFiles: FILES }),
      issueNumber: 3,
      triggeredBy: 'octocat',
    });
    expect(body).toContain(
      "## Instructions\n\nThe task included the repository's instruction files (sanitized like the issue, after `instructions` from `.github/frognano.yml`): `AGENTS.md` (1,234 bytes), `CLAUDE.md` (cut at the 16 KB limit: 15,150 of 20,000 bytes), `OUT.md` (not used: it is a symbolic link to a place outside the repository).",
    );
    expect(body).not.toContain('@team');
    const without = renderPrBody({ result: runResult(), issueNumber: 3, triggeredBy: 'octocat' });
    expect(without).not.toContain('## Instructions');
  });

  it('lists them in summary.md', () => {
    expect(renderSummary(runResult({ instructionFiles: FILES }))).toContain(
      '- Instruction files: `AGENTS.md` (1,234 bytes), `CLAUDE.md` (cut at the 16 KB limit: 15,150 of 20,000 bytes), `OUT.md` (not used: it is a symbolic link to a place outside the repository), `docs/@team.md` (not in the repository)',
    );
    expect(renderSummary(runResult())).not.toContain('Instruction files');
  });

  it('says under the status headline which were refused, cut or not found', () => {
    const notes = instructionFileNotes(FILES);
    expect(notes).toEqual([
      'The instruction file `CLAUDE.md` was cut at the 16 KB limit (15,150 of 20,000 bytes): the model saw only its start.',
      'The instruction file `OUT.md` was not used: it is a symbolic link to a place outside the repository.',
      'The instruction file `docs/@team.md` named in `instructions_files` is not in the repository.',
    ]);
    const text = renderStatus(
      withNotes({ kind: 'done', prUrl: 'https://x/pull/7', prNumber: 7, partial: false }, notes),
    );
    const lines = text.split('\n');
    expect(lines[1]).toContain('opened draft pull request #7');
    expect(lines.slice(2, 6)).toEqual(['', ...notes]);
    // Running and queued states carry no notes.
    expect(withNotes({ kind: 'queued', position: 1 }, notes)).toEqual({
      kind: 'queued',
      position: 1,
    });
    expect(instructionFileNotes([{ path: 'AGENTS.md', state: 'used', bytes: 3 }])).toEqual([]);
  });
});
