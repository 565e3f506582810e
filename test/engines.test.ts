// package.json's `engines` (and the README's Node line) stay true for the dependency tree:
// every installed package accepts every Node version we claim, except the few listed here
// with the reason they still work.
import { readFileSync } from 'node:fs';
import semver from 'semver';
import { describe, expect, it } from 'vitest';

const ours = (JSON.parse(readFileSync('package.json', 'utf8')) as { engines: { node: string } })
  .engines.node;
const lock = JSON.parse(readFileSync('package-lock.json', 'utf8')) as {
  packages: Record<string, { engines?: { node?: string } | string[] }>;
};

const KNOWN_NARROWER: Record<string, string> = {
  // Declares Node >= 22 but is plain ES2020 JavaScript; Octokit parses every response with it,
  // which every GitHub test here does on Node 20.
  'node_modules/content-type': '>=22',
  // A native module: it lists the Node majors it ships binaries for (future ones need a release).
  'node_modules/better-sqlite3': '20.x || 22.x || 23.x || 24.x || 25.x || 26.x',
};

describe('engines', () => {
  it('covers the Node running the tests', () => {
    expect(semver.satisfies(process.version, ours)).toBe(true);
  });

  it('claims no Node version a dependency refuses, beyond the known, working exceptions', () => {
    const narrower = Object.entries(lock.packages)
      .map(([name, entry]) => [
        name,
        Array.isArray(entry.engines) ? undefined : entry.engines?.node,
      ])
      .filter((pair): pair is [string, string] => pair[0] !== '' && typeof pair[1] === 'string')
      .filter(([, range]) => !semver.subset(ours, range));
    expect(Object.fromEntries(narrower)).toEqual(KNOWN_NARROWER);
  });

  it("ships, in the App's Docker image, a Node every dependency accepts, running compiled code", () => {
    const dockerfile = readFileSync('Dockerfile', 'utf8');
    const major = /^ARG NODE_IMAGE=node:(\d+)-/m.exec(dockerfile)?.[1];
    expect(major).toBeDefined();
    const version = `${major}.99.0`;
    expect(semver.satisfies(version, ours)).toBe(true);
    for (const [name, range] of Object.entries(KNOWN_NARROWER)) {
      expect(semver.satisfies(version, range), name).toBe(true);
    }
    expect(dockerfile).toMatch(/^CMD \["node", "dist\/cli\.js", "start"\]$/m);
    expect(dockerfile).toMatch(/^RUN npm run build /m);
  });
});
