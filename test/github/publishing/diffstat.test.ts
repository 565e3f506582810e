// The diffstat read from a patch's text names every file the patch touches, exactly as git
// names it: checked against git's own `--numstat -z` for real patches with unusual names
// (quoted, non-ASCII, spaces with ` b/` inside, tabs, newlines, renames, binaries, deletions),
// and read back from the published Markdown with a real GFM parser.
import { execFileSync } from 'node:child_process';
import { mkdtempSync, rmSync, writeFileSync, mkdirSync, unlinkSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { diffstat, type DiffStatFile } from '../../../src/github/publishing/diffstat.js';
import { renderPrBody } from '../../../src/github/publishing/pr-body.js';
import { renderRevision } from '../../../src/github/publishing/pr-revisions.js';
import { quotePath } from '../../../src/github/markdown.js';
import type { PatchFacts } from '../../../src/runner/run-types.js';
import { attemptSummary, runResult, SAMPLE_PATCH } from '../helpers/run-result.js';
import { markdownTree, plainText, section } from '../helpers/markdown-tree.js';

const git = (cwd: string, ...args: string[]) =>
  execFileSync('git', args, { cwd, encoding: 'utf8', maxBuffer: 1 << 24 });

const NAMES = {
  cafe: 'café.py',
  spaced: 'docs b/innocent.md',
  quoted: 'a "quoted".txt',
  tab: 'tab\there.txt',
  newline: 'new\nline.txt',
  binary: 'img.bin',
  gone: 'gone file.txt',
  renamedFrom: 'old name.txt',
  renamedTo: 'new dir b/new name.txt',
  edited: 'x b/y.txt',
};

let repo: string;

/** A repository whose index holds every kind of change, each to a file with an unusual name. */
function makeRepo(): string {
  const dir = mkdtempSync(path.join(tmpdir(), 'frognano-diffstat-'));
  git(dir, 'init', '-q', '-b', 'main');
  git(dir, 'config', 'user.email', 't@example.com');
  git(dir, 'config', 'user.name', 't');
  const lines = Array.from({ length: 12 }, (_, i) => `line ${i}`);
  writeFileSync(path.join(dir, NAMES.renamedFrom), `${lines.join('\n')}\n`);
  writeFileSync(path.join(dir, NAMES.gone), 'bye\n');
  mkdirSync(path.join(dir, 'x b'));
  // Inside a hunk, removing `-- a/forged` and adding `++ b/forged` read like file headers.
  writeFileSync(path.join(dir, NAMES.edited), 'one\n-- a/forged\n');
  git(dir, 'add', '-A');
  git(dir, 'commit', '-q', '-m', 'base');
  writeFileSync(path.join(dir, NAMES.cafe), 'x = 1\n');
  mkdirSync(path.join(dir, 'docs b'));
  writeFileSync(path.join(dir, NAMES.spaced), 'hi\nthere\n');
  writeFileSync(path.join(dir, NAMES.quoted), 'q\n');
  writeFileSync(path.join(dir, NAMES.tab), 't\n');
  writeFileSync(path.join(dir, NAMES.newline), 'n\n');
  writeFileSync(path.join(dir, NAMES.binary), Buffer.from([0, 1, 2, 255, 0, 10]));
  writeFileSync(path.join(dir, NAMES.edited), 'one\n++ b/forged\nthree\n');
  unlinkSync(path.join(dir, NAMES.gone));
  mkdirSync(path.join(dir, 'new dir b'));
  git(dir, 'mv', NAMES.renamedFrom, NAMES.renamedTo);
  writeFileSync(
    path.join(dir, NAMES.renamedTo),
    `${[...lines.slice(0, 11), 'changed'].join('\n')}\n`,
  );
  git(dir, 'add', '-A');
  return dir;
}

/** git's own reading: `--numstat -z` (renames as `a\tr\t\0old\0new\0`). */
function numstat(renames: boolean): DiffStatFile[] {
  const flag = renames ? '-M' : '--no-renames';
  const fields = git(repo, 'diff', '--cached', flag, '--numstat', '-z').split('\0');
  const files: DiffStatFile[] = [];
  for (let i = 0; i < fields.length; i++) {
    const m = /^(-|\d+)\t(-|\d+)\t([\s\S]*)$/.exec(fields[i]!);
    if (!m) continue;
    const name = m[3] === '' ? fields[(i += 2)]! : m[3]!;
    const binary = m[1] === '-';
    files.push({
      path: name,
      added: binary ? 0 : Number(m[1]),
      removed: binary ? 0 : Number(m[2]),
      binary,
    });
  }
  return files;
}

const VARIANTS: Record<string, { config: string[]; diff: string[] }> = {
  // What the leaf runs (capture-patch.ts): no renames, explicit prefixes.
  'as the leaf captures it': {
    config: [],
    diff: ['--binary', '--no-renames', '--src-prefix=a/', '--dst-prefix=b/'],
  },
  'with renames': { config: [], diff: ['--binary', '-M'] },
  'unquoted (core.quotePath=false)': {
    config: ['-c', 'core.quotePath=false'],
    diff: ['--binary', '-M'],
  },
  'without --binary': { config: [], diff: ['-M'] },
};

beforeAll(() => {
  repo = makeRepo();
});
afterAll(() => {
  rmSync(repo, { recursive: true, force: true });
});

function patchOf(variant: { config: string[]; diff: string[] }): string {
  return git(repo, ...variant.config, 'diff', '--cached', ...variant.diff);
}

describe('diffstat of a real git patch', () => {
  it.each(Object.entries(VARIANTS))('names every file as git does, %s', (_, variant) => {
    const expected = numstat(variant.diff.includes('-M'));
    const files = diffstat(patchOf(variant));
    expect(files).toEqual(expected);
    const names = files.map((f) => f.path);
    for (const name of [NAMES.cafe, NAMES.spaced, NAMES.quoted, NAMES.tab, NAMES.newline])
      expect(names).toContain(name);
    expect(names).toContain(NAMES.gone);
    expect(files.find((f) => f.path === NAMES.binary)?.binary).toBe(true);
    expect(files.find((f) => f.path === NAMES.edited)).toEqual({
      path: NAMES.edited,
      added: 2,
      removed: 1,
      binary: false,
    });
    if (variant.diff.includes('-M')) expect(names).toContain(NAMES.renamedTo);
  });
});

/** The lines of the first code block under `title`. */
function codeLines(markdown: string, title: string): string[] {
  const block = section(markdownTree(markdown), title).find((n) => n.type === 'code');
  if (!block) throw new Error(`no code block under ${title}`);
  return plainText(block).split('\n');
}

function shownLines(files: readonly DiffStatFile[]): string[] {
  return files.map((f) =>
    f.binary ? `${quotePath(f.path)} | binary` : `${quotePath(f.path)} | +${f.added} -${f.removed}`,
  );
}

describe('the published diffstat', () => {
  const variant = VARIANTS['with renames']!;

  it("names exactly git's files in the PR body when git's reading is not at hand", () => {
    const patch = patchOf(variant);
    const expected = numstat(true);
    const body = renderPrBody({
      result: runResult({ patch }),
      issueNumber: 1,
      triggeredBy: 'a',
    });
    const lines = codeLines(body, 'Changes');
    expect(lines.slice(0, -1)).toEqual(shownLines(expected));
    expect(lines).toContain('café.py | +1 -0');
    expect(lines).toContain('docs b/innocent.md | +2 -0');
    expect(lines).toContain('"a \\"quoted\\".txt" | +1 -0');
    expect(lines).toContain('"new\\nline.txt" | +1 -0');
  });

  it('names them in a revision section too, from the text and from git when at hand', () => {
    const patch = patchOf(variant);
    const expected = numstat(true);
    const revision = (result: ReturnType<typeof runResult>) =>
      renderRevision({
        revision: 2,
        result,
        commit: 'c'.repeat(40),
        parent: 'p'.repeat(40),
        requestedBy: 'a',
        trigger: 'comment',
        feedback: 'x',
        threads: [],
      });
    const fromText = revision(runResult({ patch }));
    const code = markdownTree(fromText).children.find((n) => n.type === 'code');
    expect(plainText(code!).split('\n').slice(0, -1)).toEqual(shownLines(expected));
    // git's reading, when the run has it, is the one shown (the text is the agent's).
    const facts: PatchFacts = {
      files: [
        {
          path: NAMES.cafe,
          status: 'A',
          oldMode: '000000',
          newMode: '100644',
          added: 1,
          removed: 0,
          size: 6,
        },
      ],
      symlinks: [],
      binaries: [],
      modeChanges: [],
      harnessFiles: [],
      testFiles: [],
      gitattributes: [],
    };
    const fromGit = revision(runResult({ patch: SAMPLE_PATCH, patchFacts: facts }));
    const gitCode = markdownTree(fromGit).children.find((n) => n.type === 'code');
    expect(plainText(gitCode!).split('\n')).toEqual(['café.py | +1 -0', '1 file changed, +1 -0']);
  });

  it("names them in a runner-up's collapsed diffstat", () => {
    const patch = patchOf(variant);
    const expected = numstat(true);
    const attempts = [
      attemptSummary({ attempt: 1, selected: true }),
      attemptSummary({ attempt: 2, patch }),
    ];
    const body = renderPrBody({
      result: runResult({ attempts, selectedAttempt: 1 }),
      issueNumber: 1,
      triggeredBy: 'a',
    });
    const tree = markdownTree(body);
    const code = section(tree, 'Attempts').find((n) => n.type === 'code');
    expect(plainText(code!).split('\n')).toEqual(shownLines(expected));
  });
});

describe('diffstat of patch text git did not write', () => {
  it('reads a plain ---/+++ diff, and shows a header no line explains whole', () => {
    const patch = [
      '--- a/docs b/innocent.md\t2024-01-01',
      '+++ b/docs b/innocent.md\t2024-01-01',
      '@@ -1 +1 @@',
      '-a',
      '+b',
      'diff --git a/x b/evil.sh',
      'old mode 100644',
      'new mode 100755',
      '',
    ].join('\n');
    expect(diffstat(patch)).toEqual([
      { path: 'docs b/innocent.md', added: 1, removed: 1, binary: false },
      { path: 'a/x b/evil.sh', added: 0, removed: 0, binary: false },
    ]);
  });
});
