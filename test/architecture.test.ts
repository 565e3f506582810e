// The rooms' rules (docs/architecture.md): imports point down the flow, never back, and no
// module imports itself through others. Read from the sources with TypeScript's own parser.
import { describe, expect, it } from 'vitest';
import { sourceGraph, importCycles } from './support/source-graph.js';

const graph = sourceGraph('src');

/** Top-level room of a module path relative to src/ (`github/intake/x.ts` → `github`). */
function roomOf(file: string): string {
  const first = file.split('/')[0] as string;
  return first.endsWith('.ts') ? first.slice(0, -3) : first;
}

const ENTRY = new Set(['app', 'cli', 'commands', 'action']);

/** What each room may not import (rooms, or packages as `pkg:<name>`). */
const FORBIDDEN: Record<string, string[]> = {
  github: [...ENTRY],
  runs: [...ENTRY, 'github', 'pkg:probot', 'pkg:@octokit/rest'],
  runner: [...ENTRY, 'github', 'runs', 'web', 'pkg:probot', 'pkg:@octokit/rest'],
  queue: [...ENTRY, 'github', 'runs', 'runner', 'web', 'sandbox', 'leaf'],
  sandbox: [...ENTRY, 'github', 'runs', 'runner', 'web', 'queue'],
  leaf: [
    ...ENTRY,
    'github',
    'runs',
    'runner',
    'web',
    'queue',
    'sandbox',
    'pkg:dockerode',
    'pkg:probot',
  ],
  web: [...ENTRY],
  metrics: [...ENTRY, 'github', 'runs'],
};

describe('architecture', () => {
  it('has no import cycle between modules', () => {
    expect(importCycles(graph)).toEqual([]);
  });

  it.each(Object.keys(FORBIDDEN))('%s imports only what sits below it', (room) => {
    const bad: string[] = [];
    for (const [file, targets] of graph) {
      if (roomOf(file) !== room) continue;
      for (const target of targets) {
        const to = target.startsWith('pkg:') ? target : roomOf(target);
        if (FORBIDDEN[room]!.includes(to)) bad.push(`${file} → ${target}`);
      }
    }
    expect(bad).toEqual([]);
  });

  it.each(['runs', 'web', 'metrics', 'github/intake', 'github/status', 'github/publishing'])(
    'code outside %s reaches it only through its index.ts',
    (room) => {
      const bad: string[] = [];
      for (const [file, targets] of graph) {
        if (file.startsWith(`${room}/`)) continue;
        for (const target of targets) {
          if (target.startsWith(`${room}/`) && target !== `${room}/index.ts`) {
            bad.push(`${file} → ${target}`);
          }
        }
      }
      expect(bad).toEqual([]);
    },
  );
});
