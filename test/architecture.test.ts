// The rooms' rules, as docs/architecture.md states them: its table of directions (what each
// room may not import) and its table of doors are read from the doc itself, so the doc and this
// test cannot say different things. Imports point down the flow, never back: no module imports
// itself through others, and no room imports itself through other rooms. Every kind of import
// is an edge (static, `export … from`, dynamic `import()`, type-only; see source-graph.ts).
import { existsSync, readdirSync, readFileSync } from 'node:fs';
import { mkdir, mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import {
  importCycles,
  roomGraph,
  roomOf,
  sourceGraph,
  type SourceGraph,
} from './support/source-graph.js';

const graph = sourceGraph('src');
const doc = readFileSync('docs/architecture.md', 'utf8');

/** The rows of the doc's table between `<!-- name -->` and `<!-- /name -->`: backticked names. */
function docTable(name: string): string[][] {
  const start = doc.indexOf(`<!-- ${name} -->`);
  const end = doc.indexOf(`<!-- /${name} -->`);
  if (start < 0 || end < start) throw new Error(`docs/architecture.md has no table ${name}`);
  return doc
    .slice(start, end)
    .split('\n')
    .filter((line) => line.startsWith('|') && !/^\|\s*-/.test(line))
    .slice(1)
    .map((line) =>
      line
        .split('|')
        .slice(1, -1)
        .map((cell) => [...cell.matchAll(/`([^`]+)`/g)].map((m) => m[1]!).join(' ')),
    );
}

/** What each room may not import (rooms, or packages as `pkg:<name>`), from the doc. */
const FORBIDDEN: Record<string, string[]> = Object.fromEntries(
  docTable('direction rules').flatMap(([rooms, forbidden]) =>
    rooms!.split(' ').map((room) => [room, forbidden!.split(' ')]),
  ),
);
/** Rooms reached from outside only through one module, from the doc. */
const DOORS: [string, string][] = docTable('doors').map(([room, door]) => [room!, door!]);

function breaking(g: SourceGraph, room: string, forbidden: string[]): string[] {
  const bad: string[] = [];
  for (const [file, targets] of g) {
    if (roomOf(file) !== room) continue;
    for (const target of targets) {
      const to = target.startsWith('pkg:') ? target : roomOf(target);
      if (forbidden.includes(to)) bad.push(`${file} → ${target}`);
    }
  }
  return bad;
}

describe('architecture', () => {
  it('reads the rules from docs/architecture.md', () => {
    expect(Object.keys(FORBIDDEN).length).toBeGreaterThan(10);
    expect(DOORS.length).toBeGreaterThan(5);
    // Every room of src/ has its row: a new room states where it sits.
    const rooms = new Set([...graph.keys()].map(roomOf));
    expect([...rooms].filter((room) => !(room in FORBIDDEN)).sort()).toEqual([]);
    expect(Object.keys(FORBIDDEN).filter((room) => !rooms.has(room))).toEqual([]);
  });

  it('has no import cycle between modules', () => {
    expect(importCycles(graph)).toEqual([]);
  });

  it('has no import cycle between rooms', () => {
    expect(importCycles(roomGraph(graph))).toEqual([]);
  });

  it.each(Object.keys(FORBIDDEN))('%s imports only what the doc lets it', (room) => {
    expect(breaking(graph, room, FORBIDDEN[room]!)).toEqual([]);
  });

  it.each(DOORS)('code outside %s reaches it only through %s', (room, door) => {
    const bad: string[] = [];
    for (const [file, targets] of graph) {
      if (file.startsWith(`${room}/`)) continue;
      for (const target of targets) {
        if (target.startsWith(`${room}/`) && target !== `${room}/${door}`) {
          bad.push(`${file} → ${target}`);
        }
      }
    }
    expect(bad).toEqual([]);
  });
});

describe('the source graph', () => {
  it('reads export … from, dynamic import(), import types and type-only imports', async () => {
    const dir = await mkdtemp(join(tmpdir(), 'source-graph-'));
    try {
      await mkdir(join(dir, 'a'));
      await writeFile(
        join(dir, 'a/x.ts'),
        [
          "export { y } from '../b.js';",
          "export async function f() { return import('../c.js'); }",
          "let t: import('../d.js').T;",
          "import type { E } from '../e.js';",
        ].join('\n'),
      );
      for (const name of ['b', 'c', 'd', 'e']) await writeFile(join(dir, `${name}.ts`), '');
      const read = sourceGraph(dir);
      expect(read.get('a/x.ts')).toEqual(['b.ts', 'c.ts', 'd.ts', 'e.ts']);
      expect(roomGraph(read).get('a')).toEqual(['b', 'c', 'd', 'e']);
    } finally {
      await rm(dir, { recursive: true, force: true });
    }
  });

  it('finds a cycle between rooms that no two modules make alone', () => {
    const g: SourceGraph = new Map([
      ['a/1.ts', ['b/1.ts']],
      ['b/1.ts', []],
      ['b/2.ts', ['a/2.ts']],
      ['a/2.ts', []],
    ]);
    expect(importCycles(g)).toEqual([]);
    expect(importCycles(roomGraph(g))).toEqual([['a', 'b']]);
  });
});

describe('test/ mirrors src/', () => {
  // A test sits where the code it tests sits, so a reader of src/x/ finds its tests in test/x/.
  // Only the tests' own rooms have no twin: shared support, helpers next to their tests, docs.
  const OWN = new Set(['support', 'helpers', 'docs']);
  const dirsUnder = (root: string, at = ''): string[] =>
    readdirSync(join(root, at), { withFileTypes: true })
      .filter((entry) => entry.isDirectory())
      .flatMap((entry) => {
        const dir = at ? `${at}/${entry.name}` : entry.name;
        return [dir, ...dirsUnder(root, dir)];
      });

  it('has no test folder without a source folder of the same name', () => {
    const orphans = dirsUnder('test').filter(
      (dir) => !dir.split('/').some((part) => OWN.has(part)) && !existsSync(join('src', dir)),
    );
    expect(orphans).toEqual([]);
  });
});
