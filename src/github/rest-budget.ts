// Each run may make at most 20 GitHub REST calls, status edits included: GitHub's secondary
// rate limits punish chatty bots, and a maintainer's notification feed should stay quiet.
import type { GitHubClient } from './octokit.js';

export const REST_CALLS_PER_RUN = 20;

export class RestBudget {
  #used: number;

  constructor(
    readonly limit = REST_CALLS_PER_RUN,
    used = 0,
  ) {
    this.#used = used;
  }

  get used(): number {
    return this.#used;
  }

  remaining(): number {
    return Math.max(0, this.limit - this.#used);
  }

  spend(calls = 1): void {
    this.#used += calls;
  }

  /** Counts every request made through this client (token mints go elsewhere: count them by hand). */
  attach(octokit: GitHubClient): GitHubClient {
    octokit.hook.before('request', () => {
      this.spend();
    });
    return octokit;
  }
}
