// The run behind the bot's pull request for an issue, for `/frognano use K`: the latest run of
// the issue that opened or updated its pull request, with its recorded result. The record is
// read from this host's data directory, else from the shared queue (a worker on another host
// made the run); a new selection is saved to both, so every host shows the same.
import type { RunArtifacts, RunReader } from '../../queue/types.js';
import { DEFAULT_ARTIFACT_TTL_SECONDS, runArtifacts } from '../../queue/read-run-artifact.js';
import { filesIn, readRunRecord, runPageUrl, writeRunRecord } from '../../web/index.js';
import { RUN_RECORD_FILE } from '../../data-dir.js';
import { issueKey, type IssueJob } from '../job.js';
import type { RunResult } from '../../runner/run-types.js';
import { runOutDir } from '../../data-dir.js';

/** The run a pull request was published from, with what is needed to re-render its body. */
export interface PublishedRun {
  runId: string;
  result: RunResult;
  /** Who started the run (the body's "Requested by"). */
  requestedBy: string;
  model?: string;
  trajectoryUrl?: string;
  /** Stores the result with the new selection (the run page shows it). */
  save(result: RunResult): Promise<void>;
}

export async function publishedRun(
  deps: {
    queue: RunReader<IssueJob> & RunArtifacts;
    dataDir: string;
    publicUrl?: string;
    artifactTtlSeconds?: number;
  },
  target: { owner: string; repo: string },
  issueNumber: number,
): Promise<PublishedRun | undefined> {
  const key = issueKey({ ...target, issueNumber });
  const run = (await deps.queue.list('done'))
    .filter((r) => r.key === key && r.outcome === 'pull_request')
    .sort((a, b) => (b.finishedAt ?? 0) - (a.finishedAt ?? 0))[0];
  if (!run) return undefined;
  const dir = runOutDir(deps.dataDir, run.id);
  const local = await readRunRecord(filesIn(dir));
  const record = local ?? (await readRunRecord(runArtifacts(run.id, deps)));
  if (!record) return undefined;
  return {
    runId: run.id,
    result: record.result,
    requestedBy: run.job.sender.login,
    ...(record.model ? { model: record.model } : {}),
    ...(deps.publicUrl ? { trajectoryUrl: runPageUrl(deps.publicUrl, run.id) } : {}),
    save: async (result) => {
      const next = { ...record, result };
      if (local) await writeRunRecord(dir, next);
      if (deps.queue.kind !== 'sqlite') {
        const body = Buffer.from(JSON.stringify(next));
        const ttl = deps.artifactTtlSeconds ?? DEFAULT_ARTIFACT_TTL_SECONDS;
        await deps.queue.putArtifact(run.id, RUN_RECORD_FILE, body, ttl);
      }
    },
  };
}
