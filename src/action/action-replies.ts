// What the Action answers where a workflow run cannot do what the App does.

/**
 * `/frognano use K`: the attempts it switches between were kept by the run that opened the pull
 * request, in that workflow run's RUNNER_TEMP, which is gone unless the workflow caches it. With
 * the data directory kept, the App's own switch runs; without it, this line says why nothing can
 * be switched and what to do instead.
 */
export const ATTEMPTS_NOT_KEPT =
  "nothing changed: this workflow keeps no attempts between its runs (each starts on a fresh runner with an empty RUNNER_TEMP), so there is no other attempt to switch to. Comment `/frognano <what to change>` for a follow-up instead, or keep RUNNER_TEMP's frognano directory with actions/cache (see frognano's README).";

/**
 * `/frognano ci`: GitHub starts no workflow for a push made with the workflow token
 * (GITHUB_TOKEN), so with it an empty commit would trigger nothing: this line says so and how to
 * pass the App's credentials instead, and nothing is pushed. With the App's credentials the
 * App's own push runs (ci-commit.ts), committed as the pull request's author.
 */
export const WORKFLOW_TOKEN_STARTS_NO_CI =
  "nothing pushed: this workflow runs frognano with the workflow token (GITHUB_TOKEN), and GitHub starts no workflow for a push made with it, so an empty commit would run no CI. Pass a GitHub App's credentials to the frognano step (`app-id: ${{ vars.FROGNANO_APP_ID }}` and `private-key: ${{ secrets.FROGNANO_APP_PRIVATE_KEY }}`, see frognano's README), or push a commit to this branch by hand.";
