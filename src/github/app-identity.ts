// What the App is on GitHub, asked through its own (JWT) client: the commit identity of its bot
// (once per process) and fresh installation tokens for git.
import type { GitHubClient } from './octokit.js';
import { type BotIdentity, noreplyDomainFor, resolveBotIdentity } from './publishing/index.js';

export interface AppIdentity {
  /** The App's own client (JWT). */
  appClient: () => Promise<GitHubClient>;
  /** The commit identity; `countAppCall` counts a request the run's hook does not see. */
  botIdentity: (installation: GitHubClient, countAppCall: () => void) => Promise<BotIdentity>;
  /** True once `botIdentity` answers without asking GitHub. */
  botIdentityKnown: () => boolean;
  /**
   * A fresh installation token (one REST call), through the App's client so it honours the API
   * base URL: `octokit.auth({ refresh: true })` would ask api.github.com even on GHES.
   */
  mintInstallationToken: (installationId: number) => Promise<string>;
}

export function appIdentity(
  appAuth: () => Promise<unknown>,
  config: { botIdentity?: BotIdentity; gitBaseUrl: string },
): AppIdentity {
  const appClient = async () => (await appAuth()) as GitHubClient;
  // Asked once per process; a failed attempt is forgotten so the next run asks again.
  let identity: Promise<BotIdentity> | undefined;
  let known = config.botIdentity !== undefined;
  const botIdentity = (installation: GitHubClient, countAppCall: () => void) => {
    if (config.botIdentity) return Promise.resolve(config.botIdentity);
    identity ??= appClient().then(async (app) => {
      countAppCall();
      const resolved = await resolveBotIdentity(
        { app, installation },
        noreplyDomainFor(config.gitBaseUrl),
      );
      known = true;
      return resolved;
    });
    identity.catch(() => (identity = undefined));
    return identity;
  };
  const mintInstallationToken = async (installationId: number): Promise<string> => {
    const { data } = await (
      await appClient()
    ).rest.apps.createInstallationAccessToken({
      installation_id: installationId,
    });
    return data.token;
  };
  return { appClient, botIdentity, botIdentityKnown: () => known, mintInstallationToken };
}
