// The one GitHub client type the github/ modules take: Probot's Octokit (throttling and retry on).
// The App, the Action and `frognano doctor` all build on it, not on @octokit/rest, which it
// contains (docs/development.md says why).
import type { Logger } from 'pino';
import { ProbotOctokit } from 'probot';

export type GitHubClient = InstanceType<typeof ProbotOctokit>;

export interface RepoRef {
  owner: string;
  repo: string;
}

export interface IssueRef extends RepoRef {
  issueNumber: number;
}

/** Times a request that hit a rate limit is sent again (each after the wait GitHub asks for). */
export const RATE_LIMIT_RETRIES = 3;
/** A limit that asks for a longer wait fails the request instead: publishing resumes later. */
export const RATE_LIMIT_MAX_WAIT_SECONDS = 15 * 60;

interface LimitedRequest {
  method: string;
  url: string;
}

/**
 * Probot's Octokit with rate limits retried as GitHub asks. Probot's own handlers only log a
 * secondary limit (so a PR creation that hit one was lost) and retry a primary one without a
 * bound on the wait; these retry both after `retry-after` / the reset time, a bounded number of
 * times. A function of the instance options, because Probot passes its handlers to every client
 * it builds and those would win over static defaults.
 */
export function appOctokit(log: Logger): typeof ProbotOctokit {
  const handler =
    (limit: 'secondary' | 'primary') =>
    (retryAfter: number, request: LimitedRequest, _octokit: unknown, retryCount: number) => {
      const retry = retryCount < RATE_LIMIT_RETRIES && retryAfter <= RATE_LIMIT_MAX_WAIT_SECONDS;
      log.warn(
        { limit, method: request.method, url: request.url, retryAfter, retryCount, retry },
        'GitHub rate limit hit',
      );
      return retry;
    };
  return ProbotOctokit.defaults((options: Record<string, unknown>) => ({
    ...options,
    throttle: {
      ...(options.throttle as object),
      onSecondaryRateLimit: handler('secondary'),
      onRateLimit: handler('primary'),
    },
  }));
}
