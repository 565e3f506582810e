// The running workflow run's look for a cancel: conditional requests (an unchanged answer is a
// 304, free of the workflow token's hourly rate limit), a reaction older than the run ignored,
// the bot's own new 👎 seen once, and taken back when the watch stops.
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { ProbotOctokit } from 'probot';
import { afterEach, describe, expect, it } from 'vitest';
import type { GitHubClient } from '../../src/github/octokit.js';
import { watchCancel } from '../../src/action/remote-cancel.js';
import { silentLog } from '../github/helpers/github.js';
import { waitFor } from '../github/helpers/app-harness.js';

let server: Server | undefined;
afterEach(() => new Promise<void>((r) => (server ? server.close(() => r()) : r())));

interface Reaction {
  id: number;
  content: string;
  user: { login: string };
  created_at: string;
}

/** GitHub's reactions of comment 1001, with ETags as GitHub sends them. */
async function reactionsServer(reactions: Reaction[]) {
  const seen: string[] = [];
  let version = 1;
  server = createServer((req, res) => {
    const path = (req.url ?? '').split('?')[0];
    seen.push(`${req.method} ${path} ${req.headers['if-none-match'] ?? '-'}`);
    if (req.method === 'DELETE') {
      const id = Number(path?.split('/').at(-1));
      reactions.splice(0, reactions.length, ...reactions.filter((r) => r.id !== id));
      version++;
      res.writeHead(204).end();
      return;
    }
    const etag = `W/"${version}-${reactions.length}"`;
    if (req.headers['if-none-match'] === etag) {
      res.writeHead(304, { etag }).end();
      return;
    }
    res.writeHead(200, { 'content-type': 'application/json', etag }).end(JSON.stringify(reactions));
  });
  await new Promise<void>((r) => server!.listen(0, '127.0.0.1', r));
  const url = `http://127.0.0.1:${(server!.address() as AddressInfo).port}`;
  const client = () =>
    Promise.resolve(
      new ProbotOctokit({
        auth: { token: 'ghs_x' },
        baseUrl: url,
        retry: { enabled: false },
        throttle: { enabled: false },
        log: silentLog,
      }) as GitHubClient,
    );
  return { seen, client, bump: () => version++ };
}

describe('watchCancel', () => {
  it("asks conditionally, ignores an earlier run's reaction, stops on the bot's new one", async () => {
    const start = Date.now();
    const reactions: Reaction[] = [
      // An earlier run's cancel that was never taken back (its runner died).
      {
        id: 1,
        content: '-1',
        user: { login: 'github-actions[bot]' },
        created_at: new Date(start - 60_000).toISOString(),
      },
      // Anyone else's 👎 means nothing.
      {
        id: 2,
        content: '-1',
        user: { login: 'a-reader' },
        created_at: new Date(start + 1).toISOString(),
      },
    ];
    const gh = await reactionsServer(reactions);
    let cancelled = 0;
    const watch = watchCancel({
      client: gh.client,
      issue: { owner: 'o', repo: 'r', issueNumber: 1 },
      login: async () => 'github-actions[bot]',
      commentId: async () => 1001,
      since: () => start,
      everyMs: 20,
      onCancel: () => cancelled++,
      log: silentLog,
    });
    await waitFor(() => gh.seen.filter((s) => !s.endsWith(' -')).length >= 3, 'conditional polls');
    expect(cancelled).toBe(0);
    reactions.push({
      id: 3,
      content: '-1',
      user: { login: 'github-actions[bot]' },
      created_at: new Date(start + 5).toISOString(),
    });
    gh.bump();
    await waitFor(() => cancelled > 0, 'the cancel');
    await watch.stop();
    expect(cancelled).toBe(1);
    // Polls after the first carried the ETag and got 304s until the reaction came.
    expect(gh.seen[0]).toMatch(/^GET \/repos\/o\/r\/issues\/comments\/1001\/reactions -$/);
    expect(gh.seen.some((s) => /^GET .* W\/"1-2"$/.test(s))).toBe(true);
    // Stopping took the bot's reactions back (the stale one too); the reader's stays.
    expect(reactions.map((r) => r.id)).toEqual([2]);
  });
});
