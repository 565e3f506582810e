// `/frognano use K` in a workflow run: the attempts it switches between were kept by the run that
// opened the pull request, in that workflow run's RUNNER_TEMP, which is gone unless the workflow
// caches it. With the data directory kept, the App's own switch runs; without it, one line says
// why nothing can be switched and what to do instead.
import { join } from 'node:path';
import type { Logger } from 'pino';
import type { GitHubClient } from '../github/octokit.js';
import type { IssueJob } from '../github/job.js';
import { noreplyDomainFor, type GitRunner } from '../github/publishing/index.js';
import { publishedRun } from '../github/publishing/index.js';
import { useAttempt } from '../github/publishing/index.js';
import type { RunArtifacts, RunReader } from '../queue/types.js';
import { redactSecrets } from '../redact.js';
import type { ActionGitHub } from './action-github.js';

export const ATTEMPTS_NOT_KEPT =
  "nothing changed: this workflow keeps no attempts between its runs (each starts on a fresh runner with an empty RUNNER_TEMP), so there is no other attempt to switch to. Comment `/frognano <what to change>` for a follow-up instead, or keep RUNNER_TEMP's frognano directory with actions/cache (see frognano's README).";

export interface ActionUseDeps {
  queue: RunReader<IssueJob> & RunArtifacts;
  dataDir: string;
  gitBaseUrl: string;
  github: ActionGitHub;
  log: Logger;
  git?: GitRunner;
}

type UseDecision = { owner: string; repo: string; issueNumber: number } & {
  attempt: number | undefined;
  sender: { login: string; id: number };
};

export function actionUseHandler(deps: ActionUseDeps) {
  return async (decision: UseDecision, octokit: GitHubClient): Promise<string> => {
    const log = deps.log.child({
      pr: `${decision.owner}/${decision.repo}#${decision.issueNumber}`,
    });
    let kept = true;
    try {
      const identity = await deps.github.identity();
      const outcome = await useAttempt({
        octokit,
        owner: decision.owner,
        repo: decision.repo,
        pullNumber: decision.issueNumber,
        attempt: decision.attempt,
        by: decision.sender,
        findRun: async (issueNumber) => {
          const run = await publishedRun(deps, decision, issueNumber);
          kept = run !== undefined;
          return run;
        },
        gitUrl: `${deps.gitBaseUrl}/${decision.owner}/${decision.repo}.git`,
        mintToken: () => deps.github.mintToken(),
        workRoot: join(deps.dataDir, 'publish'),
        // The pull request's author is the token's login; commits are made under it too.
        bot: { name: await deps.github.login(), email: identity.email },
        noreplyDomain: noreplyDomainFor(deps.gitBaseUrl),
        log,
        ...(deps.git ? { git: deps.git } : {}),
      });
      if (outcome.kind === 'switched') {
        return `switched this pull request to attempt ${outcome.attempt} (commit ${outcome.commit.slice(0, 12)}).`;
      }
      return kept ? `nothing changed: ${outcome.reason}` : ATTEMPTS_NOT_KEPT;
    } catch (error) {
      log.error({ err: error }, '/frognano use failed');
      return `switching failed: ${redactSecrets(error instanceof Error ? error.message : String(error)).split('\n')[0]}`;
    }
  };
}
