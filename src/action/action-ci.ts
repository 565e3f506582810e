// `/frognano ci` in a workflow run. GitHub starts no workflow for a push made with the workflow
// token (GITHUB_TOKEN), so with it an empty commit would trigger nothing: one line says so and
// how to pass the App's credentials instead, and nothing is pushed. With the App's credentials
// the App's own push runs (ci-commit.ts), committed as the pull request's author.
import { join } from 'node:path';
import type { Logger } from 'pino';
import type { GitHubClient } from '../github/octokit.js';
import {
  ciFailedReply,
  ciReply,
  pushCiCommit,
  type GitRunner,
} from '../github/publishing/index.js';
import type { ActionEnv } from './action-env.js';
import type { ActionGitHub } from './action-github.js';

export const WORKFLOW_TOKEN_STARTS_NO_CI =
  "nothing pushed: this workflow runs frognano with the workflow token (GITHUB_TOKEN), and GitHub starts no workflow for a push made with it, so an empty commit would run no CI. Pass a GitHub App's credentials to the frognano step (`app-id: ${{ vars.FROGNANO_APP_ID }}` and `private-key: ${{ secrets.FROGNANO_APP_PRIVATE_KEY }}`, see frognano's README), or push a commit to this branch by hand.";

export interface ActionCiDeps {
  env: Pick<ActionEnv, 'credential'>;
  dataDir: string;
  gitBaseUrl: string;
  github: ActionGitHub;
  log: Logger;
  git?: GitRunner;
}

type CiDecision = { owner: string; repo: string; issueNumber: number } & {
  sender: { login: string; id: number };
};

export function actionCiHandler(deps: ActionCiDeps) {
  return async (decision: CiDecision, octokit: GitHubClient): Promise<string> => {
    if (deps.env.credential.kind === 'token') return WORKFLOW_TOKEN_STARTS_NO_CI;
    const log = deps.log.child({
      pr: `${decision.owner}/${decision.repo}#${decision.issueNumber}`,
    });
    try {
      const identity = await deps.github.identity();
      const outcome = await pushCiCommit({
        octokit,
        owner: decision.owner,
        repo: decision.repo,
        pullNumber: decision.issueNumber,
        by: decision.sender,
        gitUrl: `${deps.gitBaseUrl}/${decision.owner}/${decision.repo}.git`,
        mintToken: () => deps.github.mintToken(),
        workRoot: join(deps.dataDir, 'publish'),
        bot: { name: await deps.github.login(), email: identity.email },
        log,
        ...(deps.git ? { git: deps.git } : {}),
      });
      return ciReply(outcome);
    } catch (error) {
      log.error({ err: error }, '/frognano ci failed');
      return ciFailedReply(error);
    }
  };
}
