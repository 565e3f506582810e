// What publishing a run needs, kept on disk until the draft pull request exists: a run whose
// push or pull request failed (a rate limit that outlasted its retries, GitHub down, a crash
// mid-publish) is finished later from this record - by the requeued run after a restart, or by
// a plain `/frognano retry` - without running the model again.
import { randomUUID } from 'node:crypto';
import { mkdir, readdir, readFile, rename, rm, stat, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { z } from 'zod';
import type { IssueRef } from '../octokit.js';
import { dataPaths } from '../../data-dir.js';

export const PendingPublish = z.object({
  version: z.literal(1),
  /** The run that produced the change. */
  runId: z.string().uuid(),
  installationId: z.number().int(),
  owner: z.string(),
  repo: z.string(),
  issueNumber: z.number().int().positive(),
  issueTitle: z.string(),
  baseBranch: z.string(),
  baseCommit: z.string(),
  patch: z.string(),
  /** The pull request body, rendered when the run ended. */
  body: z.string(),
  coAuthor: z.object({ login: z.string(), id: z.number().int() }),
  /** For the final status comment. */
  partial: z.boolean(),
  verified: z.string(),
  /** What a follow-up on the pull request is briefed with (revision-record.ts). */
  issueText: z.string().optional(),
  evidence: z.object({ command: z.string(), before: z.string(), after: z.string() }).optional(),
  /** Set once the branch holds the commit: a resume then only finishes the pull request. */
  pushedCommit: z.string().optional(),
  savedAt: z.string(),
});
export type PendingPublish = z.infer<typeof PendingPublish>;

/** Records older than this are dropped at start-up: nobody is going to retry them. */
export const PENDING_PUBLISH_MAX_AGE_MS = 14 * 24 * 3600_000;

export function pendingPublishDir(dataDir: string): string {
  return dataPaths.pendingPublishDir(dataDir);
}

function fileFor(dataDir: string, runId: string): string {
  // Run ids are UUIDs (checked by the schema on the way in); nothing else names a file here.
  if (!/^[0-9a-f-]{36}$/i.test(runId)) throw new Error(`not a run id: ${runId}`);
  return join(pendingPublishDir(dataDir), `${runId}.json`);
}

/** Writes (or replaces) the record atomically: a crash leaves the old one or the new one. */
export async function savePendingPublish(dataDir: string, record: PendingPublish): Promise<void> {
  const valid = PendingPublish.parse(record);
  await mkdir(pendingPublishDir(dataDir), { recursive: true, mode: 0o700 });
  const target = fileFor(dataDir, valid.runId);
  const temp = `${target}.${randomUUID()}.tmp`;
  await writeFile(temp, JSON.stringify(valid), { mode: 0o600 });
  await rename(temp, target);
}

export async function loadPendingPublish(
  dataDir: string,
  runId: string,
): Promise<PendingPublish | undefined> {
  try {
    const parsed = PendingPublish.safeParse(
      JSON.parse(await readFile(fileFor(dataDir, runId), 'utf8')),
    );
    return parsed.success ? parsed.data : undefined;
  } catch {
    return undefined;
  }
}

async function listPending(dataDir: string): Promise<PendingPublish[]> {
  let names: string[];
  try {
    names = await readdir(pendingPublishDir(dataDir));
  } catch {
    return [];
  }
  const records = await Promise.all(
    names
      .filter((n) => /^[0-9a-f-]{36}\.json$/i.test(n))
      .map((n) => loadPendingPublish(dataDir, n.slice(0, -'.json'.length))),
  );
  return records.filter((r): r is PendingPublish => r !== undefined);
}

function sameIssue(a: IssueRef, b: IssueRef): boolean {
  return (
    a.owner.toLowerCase() === b.owner.toLowerCase() &&
    a.repo.toLowerCase() === b.repo.toLowerCase() &&
    a.issueNumber === b.issueNumber
  );
}

/** The newest unfinished publish of this issue, if any. */
export async function findPendingPublishForIssue(
  dataDir: string,
  issue: IssueRef,
): Promise<PendingPublish | undefined> {
  const mine = (await listPending(dataDir)).filter((r) => sameIssue(r, issue));
  return mine.sort((a, b) => b.savedAt.localeCompare(a.savedAt))[0];
}

/** Forgets one run's record. */
export async function removePendingPublish(dataDir: string, runId: string): Promise<void> {
  await rm(fileFor(dataDir, runId), { force: true });
}

/** Forgets every unfinished publish of this issue (its pull request now exists). */
export async function removePendingPublishes(dataDir: string, issue: IssueRef): Promise<void> {
  for (const record of await listPending(dataDir)) {
    if (sameIssue(record, issue)) await rm(fileFor(dataDir, record.runId), { force: true });
  }
}

/** Start-up: drops records older than `maxAgeMs` and temporary files a crash left. */
export async function prunePendingPublishes(
  dataDir: string,
  maxAgeMs = PENDING_PUBLISH_MAX_AGE_MS,
  now = Date.now(),
): Promise<string[]> {
  const dir = pendingPublishDir(dataDir);
  let names: string[];
  try {
    names = await readdir(dir);
  } catch {
    return [];
  }
  const removed: string[] = [];
  for (const name of names) {
    const path = join(dir, name);
    const info = await stat(path).catch(() => undefined);
    if (!info) continue;
    const stale = now - info.mtimeMs > maxAgeMs;
    if (stale || name.endsWith('.tmp')) {
      await rm(path, { force: true });
      removed.push(name);
    }
  }
  return removed;
}
