// readIssueText per input kind at GitHub's body size (~64 KB): CPU ms (median of 3, so a loaded
// machine counts less) and the ratio to plain words. The shapes micromark reads in quadratic time
// (setext headings, closing `*`/`_`/`~` in one paragraph, `]` far from a `[`) are refused before parsing, by counted
// work (quadratic-shapes.ts); the `-at-limit` kinds are the largest of them still read, the
// slowest bodies read at all next to dense tiny blocks (linear, but micromark's cost per block).
import { readIssueText } from '../src/github/sanitize-issue-text.js';

const KINDS: [string, string][] = [
  ['plain', 'word '.repeat(13000)],
  ['paragraphs', 'Some words in a line.\n\n'.repeat(2800)],
  ['dense-strong', '**x** '.repeat(11000)],
  ['links', '[a](b) '.repeat(9000)],
  ['html', '<b>x</b> '.repeat(7000)],
  ['nested-quote', '> '.repeat(30000)],
  ['list-nest', Array.from({ length: 2700 }, (_, i) => `${' '.repeat(i % 40)}- x`).join('\n')],
  ['emph-open', '*a '.repeat(20000)],
  ['brackets', '['.repeat(60000)],
  ['setext', fill('a\n=\n')],
  ['setext-at-limit', 'a\n=\n'.repeat(990)],
  ['tilde-a', fill('~a')],
  ['star-a', fill('a*')],
  ['star-a-at-limit', 'a*'.repeat(4400)],
  ['bracket-star-at', ']*'.repeat(4400)],
  ['close-bracket-a', fill(']a')],
  ['under-space-at', 'a_ '.repeat(3600)],
  ['backtick-a', fill('`a')],
  ['texttip-open', fill('\\texttip{')],
  ['dense-blocks', fill('a\n\n')],
  ['list-items', fill('- a\n')],
];

function fill(pattern: string): string {
  return pattern.repeat(Math.floor(65536 / pattern.length));
}

function cpuMs(text: string): number {
  const times: number[] = [];
  for (let i = 0; i < 3; i += 1) {
    const start = process.cpuUsage();
    readIssueText(text);
    const used = process.cpuUsage(start);
    times.push(used.user / 1000);
  }
  return times.sort((a, b) => a - b)[1] ?? 0;
}

export default async function run(): Promise<void> {
  readIssueText('warm **up** [a](b) <b>x</b>');
  let plain = 0;
  for (const [kind, text] of KINDS) {
    const ms = cpuMs(text);
    if (kind === 'plain') plain = ms;
    const read = readIssueText(text);
    console.log(
      `${kind.padEnd(16)} ${String(text.length).padStart(6)} chars ${ms.toFixed(0).padStart(6)} ms cpu  x${(ms / (plain || 1)).toFixed(1)} of plain  ${read.ok ? 'read' : `refused: ${read.reason}`}`,
    );
  }
  await Promise.resolve();
}
