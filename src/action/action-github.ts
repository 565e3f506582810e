// The GitHub side of `frognano action`: the workflow token (GITHUB_TOKEN, acting as
// github-actions[bot]), or with APP_ID and PRIVATE_KEY the App's installation on the repository
// (Probot's real App authentication: a JWT, the installation looked up, its token minted), so
// the pull request is the App's and starts the repository's workflows. Every call asks the
// process's clients what they wrote last to the status comment (the step summary repeats it)
// and when GitHub first answered (a cancel is one made after that).
import { Probot, type ProbotOctokit } from 'probot';
import type { Logger } from 'pino';
import { appOctokit, type GitHubClient } from '../github/octokit.js';
import {
  noreplyDomainFor,
  resolveBotIdentity,
  type BotIdentity,
} from '../github/publishing/index.js';
import { STATUS_MARKER } from '../github/status/index.js';
import { registerSecret } from '../redact.js';
import type { ActionEnv } from './action-env.js';

/** The login GitHub gives whatever the workflow token writes. */
export const ACTIONS_BOT = 'github-actions[bot]';

export interface ActionGitHub {
  /** A client for the repository (a new one each call, as Probot hands out). */
  client(): Promise<GitHubClient>;
  /** A token for git (clone and push). */
  mintToken(): Promise<string>;
  /** Who GitHub says wrote the bot's comments and pull requests. */
  login(): Promise<string>;
  /** The commit identity (FROGNANO_BOT_NAME/EMAIL when set). */
  identity(): Promise<BotIdentity>;
  /** GitHub's clock when it first answered this process (ms), from the `date` header. */
  firstAnswerAt(): number | undefined;
  /** The last status comment body this process wrote. */
  lastStatusBody(): string | undefined;
  /** The last other comment this process wrote (a refusal, an answer). */
  lastCommentBody(): string | undefined;
}

interface Seen {
  firstAt?: number;
  status?: string;
  comment?: string;
}

export function actionGitHub(
  env: ActionEnv,
  options: { log: Logger; gitBaseUrl: string; botIdentity?: BotIdentity },
): ActionGitHub {
  const seen: Seen = {};
  const Octokit = observing(appOctokit(options.log), seen);
  const common = {
    firstAnswerAt: () => seen.firstAt,
    lastStatusBody: () => seen.status,
    lastCommentBody: () => seen.comment,
  };
  const noreply = noreplyDomainFor(options.gitBaseUrl);
  const { credential } = env;
  if (credential.kind === 'token') {
    registerSecret(credential.token);
    const client = async () =>
      new Octokit({
        auth: { token: credential.token },
        baseUrl: env.apiUrl,
        log: options.log,
      }) as GitHubClient;
    return {
      ...common,
      client,
      mintToken: () => Promise.resolve(credential.token),
      login: () => Promise.resolve(ACTIONS_BOT),
      identity: once(async () => {
        if (options.botIdentity) return options.botIdentity;
        const { data } = await (await client()).rest.users.getByUsername({ username: ACTIONS_BOT });
        return { name: ACTIONS_BOT, email: `${data.id}+${ACTIONS_BOT}@${noreply}` };
      }),
    };
  }
  const probot = new (Probot.defaults({
    appId: credential.appId,
    privateKey: credential.privateKey,
    baseUrl: env.apiUrl,
    log: options.log,
    Octokit,
  }))();
  const app = async () => (await probot.auth()) as GitHubClient;
  const installationId = once(async () => {
    const { data } = await (
      await app()
    ).rest.apps.getRepoInstallation({
      owner: env.owner,
      repo: env.repo,
    });
    return data.id;
  });
  const client = async () => (await probot.auth(await installationId())) as GitHubClient;
  const resolved = once(async () =>
    resolveBotIdentity({ app: await app(), installation: await client() }, noreply),
  );
  return {
    ...common,
    client,
    mintToken: async () => {
      const { data } = await (
        await app()
      ).rest.apps.createInstallationAccessToken({
        installation_id: await installationId(),
      });
      registerSecret(data.token);
      return data.token;
    },
    login: async () => (await resolved()).name,
    identity: async () => options.botIdentity ?? resolved(),
  };
}

/** Remembers the answer; a failure is forgotten, so the next call asks again. */
function once<T>(fn: () => Promise<T>): () => Promise<T> {
  let pending: Promise<T> | undefined;
  return () => {
    pending ??= fn();
    pending.catch(() => (pending = undefined));
    return pending;
  };
}

/** The client class, noting GitHub's first `date` and every status comment body written. */
function observing(Base: typeof ProbotOctokit, seen: Seen): typeof ProbotOctokit {
  const plugin = (octokit: GitHubClient) => {
    octokit.hook.after('request', (response, options) => {
      const date = Date.parse(String(response.headers.date ?? ''));
      if (seen.firstAt === undefined && Number.isFinite(date)) seen.firstAt = date;
      const body = (options as { body?: unknown }).body;
      if (
        options.method === 'GET' ||
        !/\/issues\/(\{[a-z_]+\}\/)?comments/.test(options.url) ||
        typeof body !== 'string'
      ) {
        return;
      }
      if (body.startsWith(STATUS_MARKER)) seen.status = body;
      else seen.comment = body;
    });
  };
  return Base.plugin(plugin as never) as typeof ProbotOctokit;
}
