import type { Logger } from 'pino';
import type { DeliveryLog, KeyLock, Notes, RunReader } from '../queue/types.js';
import type { IssueJob } from './job.js';
import type { KeyedLock } from './keyed-lock.js';
import type { GitHubClient } from './octokit.js';
import type { BotIdentity, GitRunner } from './publishing/index.js';

/** What GitHub's side of the runs needs: clients, the bot's identity, where to push. */
export interface GitHubRunHostDeps {
  /** The runs' records, the notes and lock of the status comment and the published attempt. */
  queue: RunReader<IssueJob> & Notes & KeyLock & Pick<DeliveryLog<IssueJob>, 'pendingDeliveries'>;
  auth: (installationId: number) => Promise<GitHubClient>;
  /**
   * A fresh installation token (one REST call). Through the App's client, so it honours the
   * API base URL: `octokit.auth({ refresh: true })` would ask api.github.com even on GHES.
   */
  mintInstallationToken: (installationId: number) => Promise<string>;
  /**
   * The commit identity, asked of GitHub through this installation's client (cached per
   * process). `countAppCall` is called for a request made with the App's own client, which
   * the run's request hook does not see.
   */
  botIdentity: (installation: GitHubClient, countAppCall: () => void) => Promise<BotIdentity>;
  /** True once `botIdentity` answers without asking GitHub (its calls need no reserve then). */
  botIdentityKnown?: () => boolean;
  lock: KeyedLock;
  log: Logger;
  /** `${gitBaseUrl}/${owner}/${repo}.git` is cloned and pushed. */
  gitBaseUrl: string;
  /** Publish clones and records live under here. */
  dataDir: string;
  statusThrottleMs: number;
  /** Base URL under which the run page `/frognano/runs/<id>/trajectory` is served publicly. */
  publicUrl?: string;
  /** Actions mode: the workflow run's page, linked (with the run's artifact) instead. */
  workflowRunUrl?: string;
  git?: GitRunner;
}
