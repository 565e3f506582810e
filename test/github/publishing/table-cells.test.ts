// Untrusted text in the tables we publish (the PR body's step and attempts tables, the same
// tables in summary.md), read back with a real GFM parser: each cell holds exactly the text it
// was given, and nothing in it renders as a link, an image, HTML, emphasis or another cell.
import type { Nodes, Table, TableRow } from 'mdast';
import { describe, expect, it } from 'vitest';
import { renderPrBody } from '../../../src/github/publishing/pr-body.js';
import { renderSummary } from '../../../src/github/publishing/render-summary.js';
import { attemptSummary, runResult } from '../helpers/run-result.js';
import { markdownTree, nodeTypes, plainText, section } from '../helpers/markdown-tree.js';

const HOSTILE = [
  'ls \\',
  'a\\|b',
  '\\|[a](http://x)',
  '\\\\|[a](http://x)',
  'x\\\\|y',
  '[a](http://x)',
  '<http://x>',
  '![i](http://x/p.png)',
  '*b*',
  '**s** _e_ ~~d~~',
  '`',
  '`|`',
  '``a`` | `b`',
  '<img src=x>',
  '&amp; &#124; &lt;',
  'one\ntwo\r\nthree',
  'http://bare.link and https://x.example/p?q=1',
  'www.x.com',
  'a@b.example',
  'cc @user and fixes #12, o/r#3',
  '| forged | row |',
  '||',
  '  padded  ',
  ' `tick` ',
  '$x$ <!-- c --> [r]: http://x',
];

/** The text a one-line cell shows for `text`: whitespace runs as one space, ends trimmed. */
const oneLine = (text: string) => text.replace(/\s+/g, ' ').trim();

function step(n: number, args: string, name = 'Bash', outcome = 'ok') {
  return { step: n, tools: [{ name, args, outcome }], modelMs: 1, toolMs: 1 };
}

function tableAfter(markdown: string, title: string): Table {
  const table = section(markdownTree(markdown), title).find((n) => n.type === 'table');
  if (!table || table.type !== 'table') throw new Error(`no table under ${title}`);
  return table;
}

function cellsOf(row: TableRow): Nodes[] {
  return row.children;
}

/** Only text and code spans: no link, image, html, emphasis, break or anything else. */
function expectInert(cell: Nodes): void {
  for (const type of nodeTypes(cell)) expect(['text', 'inlineCode']).toContain(type);
}

/** The values of the text nodes under `node` (code spans left out). */
function textValues(node: Nodes): string[] {
  if (node.type === 'text') return [node.value];
  return 'children' in node ? node.children.flatMap((c) => textValues(c)) : [];
}

function expectArgsCells(table: Table, inputs: readonly string[]): void {
  const rows = table.children.slice(1);
  expect(rows).toHaveLength(inputs.length);
  rows.forEach((row, i) => {
    // Five columns in every row: nothing in the arguments made or swallowed a cell.
    expect(row.children).toHaveLength(5);
    const args = cellsOf(row)[2]!;
    expectInert(args);
    expect({ input: inputs[i], shown: plainText(args) }).toEqual({
      input: inputs[i],
      shown: oneLine(inputs[i]!),
    });
  });
}

describe('tool arguments in the step table', () => {
  const result = runResult({ steps: HOSTILE.map((args, i) => step(i, args)) });

  it('show exactly what the model passed, inert, in the PR body', () => {
    const body = renderPrBody({ result, issueNumber: 7, triggeredBy: 'octocat' });
    expectArgsCells(tableAfter(body, 'Trajectory'), HOSTILE);
    // Code spans do not ping or link on GitHub; no text outside one names a user or an issue.
    const table = tableAfter(body, 'Trajectory');
    expect(textValues(table).join(' ')).not.toMatch(/@user|#12|o\/r#3/);
  });

  it('show exactly what the model passed, inert, in summary.md', () => {
    expectArgsCells(tableAfter(renderSummary(result), 'Trajectory'), HOSTILE);
  });

  it('are cut to 70 characters without breaking the cell', () => {
    const long = '\\|[a](http://x)'.repeat(10);
    const body = renderPrBody({
      result: runResult({ steps: [step(0, long)] }),
      issueNumber: 7,
      triggeredBy: 'octocat',
    });
    const row = tableAfter(body, 'Trajectory').children[1]!;
    expect(row.children).toHaveLength(5);
    expectInert(row.children[2]!);
    expect(plainText(row.children[2]!)).toBe(`${long.slice(0, 69)}…`);
  });
});

describe('tool names and outcomes in the step table', () => {
  it('show the text (mentions and links defused by a zero-width space), inert', () => {
    const result = runResult({
      steps: HOSTILE.map((text, i) => step(i, 'x', text.slice(0, 20), text)),
    });
    for (const markdown of [
      renderPrBody({ result, issueNumber: 7, triggeredBy: 'octocat' }),
      renderSummary(result),
    ]) {
      const rows = tableAfter(markdown, 'Trajectory').children.slice(1);
      rows.forEach((row, i) => {
        expect(row.children).toHaveLength(5);
        const [, name, , outcome] = cellsOf(row);
        for (const cell of [name!, outcome!]) expectInert(cell);
        const shown = (cell: Nodes) => plainText(cell).replace(/\u200b/g, '');
        expect(shown(name!)).toBe(oneLine(HOSTILE[i]!.slice(0, 20)));
        expect(shown(outcome!)).toBe(oneLine(HOSTILE[i]!));
      });
      expect(markdown).not.toMatch(/@user|@b\.example/);
    }
  });
});

describe('the attempts table', () => {
  it('keeps outcomes, test texts and verdicts inside their cells as text', () => {
    const attempts = HOSTILE.map((text, i) =>
      attemptSummary({
        attempt: i + 1,
        selected: i === 0,
        exitReason: undefined,
        outcome: text as never,
        testsText: text,
        reason: text,
      }),
    );
    const result = runResult({ attempts, selectedAttempt: 1 });
    for (const markdown of [
      renderPrBody({ result, issueNumber: 7, triggeredBy: 'octocat' }),
      renderSummary(result),
    ]) {
      const rows = tableAfter(markdown, 'Attempts').children.slice(1);
      expect(rows).toHaveLength(HOSTILE.length);
      rows.forEach((row, i) => {
        expect(row.children).toHaveLength(8);
        const cells = cellsOf(row);
        for (const at of [1, 4, 7]) {
          expectInert(cells[at]!);
          expect(plainText(cells[at]!).replace(/\u200b/g, '')).toBe(oneLine(HOSTILE[i]!));
        }
      });
    }
  });
});
