// Each run may make at most 20 GitHub REST calls, status edits included: GitHub's secondary
// rate limits punish chatty bots, and a maintainer's notification feed should stay quiet.
import type { GitHubClient } from './octokit.js';

export const REST_CALLS_PER_RUN = 20;

export class RestBudget {
  #spent = 0;
  readonly #before: () => number;

  /**
   * @param before calls made for this run elsewhere (a number, or read live: intake may still be
   *   recording its calls when the worker starts)
   */
  constructor(
    readonly limit = REST_CALLS_PER_RUN,
    before: number | (() => number) = 0,
  ) {
    this.#before = typeof before === 'number' ? () => before : before;
  }

  /** Calls spent through this budget object (what its owner must record). */
  get spent(): number {
    return this.#spent;
  }

  get used(): number {
    return this.#before() + this.#spent;
  }

  remaining(): number {
    return Math.max(0, this.limit - this.used);
  }

  spend(calls = 1): void {
    this.#spent += calls;
  }

  /**
   * Counts every HTTP request this client sends to GitHub, retries included: the count sits on
   * the fetch the innermost request makes, below the retry and throttling plugins (which call
   * the request again on a 5xx or a rate limit). Token mints made by the auth strategy with its
   * own request function go elsewhere: count them by hand.
   */
  attach(octokit: GitHubClient): GitHubClient {
    octokit.hook.wrap('request', (request, options) => {
      const inner = options.request?.fetch as typeof fetch | undefined;
      const counted: typeof fetch = (input, init) => {
        this.spend();
        // Looked up per call: test doubles (nock) replace the global fetch after start-up.
        return (inner ?? globalThis.fetch)(input, init);
      };
      // In place: before-after-hook hands every inner hook the options object it was given,
      // whatever an outer hook passes on.
      options.request = { ...options.request, fetch: counted };
      return request(options);
    });
    return octokit;
  }
}
