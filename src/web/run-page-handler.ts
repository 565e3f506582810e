// The App's run page: `/frognano/runs/<id>/trajectory` (HTML) and, while the run is active, the
// JSON its script polls for new steps. Run ids only: nothing from the URL reaches the file system.
import type { IncomingMessage, ServerResponse } from 'node:http';
import { runPageCsp } from './page-assets.js';
import { runPageData, type RunPageData } from './run-page-data.js';
import { readAttemptTrajectories, readRunRecord, readTrajectory } from './run-record.js';
import type { RunListing } from './run-listing.js';
import {
  renderHeader,
  renderRunBody,
  renderRunPage,
  renderSteps,
  renderSummaryItems,
} from './render-run-page.js';

const ROUTE = /^\/frognano\/runs\/([0-9a-f-]{36})\/trajectory(\/live)?(?:\?(.*))?$/;

/** The page a PR and a status comment link to. */
export function runPageUrl(publicUrl: string, runId: string): string {
  return `${publicUrl.replace(/\/+$/, '')}/frognano/runs/${runId}/trajectory`;
}

export interface RunPageHandlerOptions {
  listing: RunListing;
  /** The served model's name, for runs that have no run.json yet. */
  model?: string;
}

async function loadRunPage(
  options: RunPageHandlerOptions,
  runId: string,
): Promise<RunPageData | undefined> {
  const run = await options.listing.getRun(runId);
  if (!run) return undefined;
  const files = options.listing.files(runId);
  const [trajectory, record] = await Promise.all([readTrajectory(files), readRunRecord(files)]);
  const attemptTrajectories = await readAttemptTrajectories(files, record?.result);
  return runPageData({
    attemptTrajectories,
    runId,
    repo: run.repo,
    issue: { number: run.issueNumber, title: run.issueTitle, url: run.issueUrl },
    model: record?.model ?? options.model,
    trigger: run.trigger,
    state: run.state === 'queued' ? 'queued' : run.state === 'running' ? 'running' : 'finished',
    outcome: run.outcome,
    trajectory,
    result: record?.result,
    liveUrl: `/frognano/runs/${runId}/trajectory/live`,
  });
}

export function runPageHandler(options: RunPageHandlerOptions) {
  return async (req: IncomingMessage, res: ServerResponse): Promise<boolean> => {
    const m = ROUTE.exec(req.url ?? '');
    if (req.method !== 'GET' || !m) return false;
    const runId = m[1] as string;
    const data = await loadRunPage(options, runId).catch(() => undefined);
    if (!data) {
      res.writeHead(404, { 'content-type': 'text/plain; charset=utf-8' }).end('no such run\n');
      return true;
    }
    if (m[2]) {
      const after = Math.max(0, Number(new URLSearchParams(m[3] ?? '').get('after')) || 0);
      res
        .writeHead(200, {
          'content-type': 'application/json; charset=utf-8',
          'x-content-type-options': 'nosniff',
          'cache-control': 'no-store',
          'content-security-policy': "default-src 'none'; sandbox",
        })
        .end(JSON.stringify(liveUpdate(data, after)));
      return true;
    }
    const live = data.liveUrl !== undefined;
    res
      .writeHead(200, {
        'content-type': 'text/html; charset=utf-8',
        'content-security-policy': runPageCsp({ live, header: true }),
        'x-content-type-options': 'nosniff',
        'x-frame-options': 'DENY',
        'referrer-policy': 'no-referrer',
        'cache-control': 'no-store',
      })
      .end(renderRunPage(data));
    return true;
  };
}

export interface LiveUpdate {
  state: RunPageData['state'];
  /** Steps the page has after applying this update. */
  after: number;
  header: string;
  steps: string;
  summary: string;
  /** The whole body once the run is finished (evidence and diff included); polling stops. */
  final?: string;
}

/** Markup of the steps after `after`, rendered (and escaped) here like the page itself. */
export function liveUpdate(data: RunPageData, after: number): LiveUpdate {
  const attempt = data.attempts[0];
  const count = attempt?.trajectory?.steps.length ?? 0;
  const from = Math.min(after, count);
  return {
    state: data.state,
    after: count,
    header: renderHeader(data),
    steps: attempt ? renderSteps(attempt, 0, from) : '',
    summary: attempt ? renderSummaryItems(attempt, 0, from) : '',
    final: data.state === 'finished' ? renderRunBody(data) : undefined,
  };
}
