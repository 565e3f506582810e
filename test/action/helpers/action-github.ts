// GitHub as a workflow run sees it, on the strict fake: the sender's permission, reactions, the
// bot's status comment (edited in place, listed as GitHub holds it, with its reactions, so a
// second workflow run reads what the first wrote), github-actions[bot] as the author.
import { mockConfigFile, REPO_PATH, type GitHubMock } from '../../github/helpers/app-harness.js';

export const ACTIONS_BOT = 'github-actions[bot]';
export const MAINTAINER = { login: 'Codertocat', id: 21031067 };
export const READER = { login: 'a-reader', id: 777 };

/** Who may write: the maintainer; anyone else is read-only. */
export function mockPermissions(gh: GitHubMock, writers = [MAINTAINER.login]): void {
  // Routes are matched in order: the writers' before the catch-all.
  for (const login of writers) mockWriter(gh, login);
  gh.intercept({
    method: 'GET',
    path: new RegExp(`^${REPO_PATH}/collaborators/[^/]+/permission$`),
    status: 200,
    persist: true,
    auth: 'installation',
    reply: () => ({ permission: 'read', role_name: 'read' }),
    optional: true,
  });
}

function mockWriter(gh: GitHubMock, login: string): void {
  const spec = {
    method: 'GET' as const,
    path: `${REPO_PATH}/collaborators/${login}/permission`,
    status: 200,
    persist: true,
    auth: 'installation' as const,
    optional: true,
    reply: () => ({ permission: 'write', role_name: 'write' }),
  };
  gh.intercept(spec);
}

/** The owner's `.github` repository has no frognano.yml (every run asks). */
export function mockNoOwnerConfig(gh: GitHubMock): void {
  mockConfigFile(gh, { repo: '.github', status: 404, persist: true, optional: true });
}

/** 👀 on the triggering issue or comment. */
export function mockTriggerReactions(gh: GitHubMock): void {
  gh.intercept({
    method: 'POST',
    path: new RegExp(`^${REPO_PATH}/(issues/\\d+|issues/comments/(4242|5151))/reactions$`),
    status: 201,
    auth: 'installation',
    persist: true,
    optional: true,
    reply: (body) => {
      gh.reactions.push(String(body.content));
      return { id: 1, content: body.content };
    },
  });
}

/** Who github-actions[bot] is (the commit e-mail carries its id). */
export function mockActionsIdentity(gh: GitHubMock): void {
  gh.intercept({
    method: 'GET',
    path: '/users/github-actions%5Bbot%5D',
    status: 200,
    auth: 'installation',
    persist: true,
    reply: () => ({ login: ACTIONS_BOT, id: 41898282, type: 'Bot' }),
  });
}

export interface Reaction {
  id: number;
  content: string;
  user: { login: string };
  created_at: string;
}

export interface StatusThread {
  /** The status comment as GitHub holds it now. */
  comment: { id: number; body: string; user: { login: string; type: string } } | undefined;
  reactions: Reaction[];
}

/**
 * The issue's (or pull request's) comments: the bot's status comment, created once as 1000 + N
 * and edited in place, listed with its current body; its reactions, added and removed. Plain
 * comments (refusals, answers) are recorded in `gh.comments`.
 */
export function mockStatusThread(
  gh: GitHubMock,
  issueNumber: number,
  bot = ACTIONS_BOT,
): StatusThread {
  const thread: StatusThread = { comment: undefined, reactions: [] };
  const id = 1000 + issueNumber;
  gh.intercept({
    method: 'GET',
    path: `${REPO_PATH}/issues/${issueNumber}/comments`,
    status: 200,
    auth: 'installation',
    persist: true,
    optional: true,
    reply: () => (thread.comment ? [thread.comment] : []),
  });
  gh.intercept({
    method: 'POST',
    path: `${REPO_PATH}/issues/${issueNumber}/comments`,
    status: 201,
    auth: 'installation',
    persist: true,
    optional: true,
    reply: (body) => {
      const text = String(body.body);
      if (!text.startsWith('<!-- frognano:status -->')) {
        gh.comments.push(text);
        return { id: 2000 + gh.comments.length };
      }
      gh.statusBodies.push(text);
      thread.comment = { id, body: text, user: { login: bot, type: 'Bot' } };
      return { id };
    },
  });
  gh.intercept({
    method: 'PATCH',
    path: `${REPO_PATH}/issues/comments/${id}`,
    status: 200,
    auth: 'installation',
    persist: true,
    optional: true,
    reply: (body) => {
      gh.statusBodies.push(String(body.body));
      if (thread.comment) thread.comment.body = String(body.body);
      return { id };
    },
  });
  mockStatusReactions(gh, thread, id, bot);
  return thread;
}

function mockStatusReactions(gh: GitHubMock, thread: StatusThread, id: number, bot: string) {
  let next = 1;
  const path = `${REPO_PATH}/issues/comments/${id}/reactions`;
  gh.intercept({
    method: 'GET',
    path,
    status: 200,
    auth: 'installation',
    persist: true,
    optional: true,
    reply: () => thread.reactions,
  });
  gh.intercept({
    method: 'POST',
    path,
    status: 201,
    auth: 'installation',
    persist: true,
    optional: true,
    reply: (body) => {
      const reaction = {
        id: next++,
        content: String(body.content),
        user: { login: bot },
        created_at: new Date().toISOString(),
      };
      thread.reactions.push(reaction);
      return reaction;
    },
  });
  gh.intercept({
    method: 'DELETE',
    path: new RegExp(`^${path}/\\d+$`),
    status: 204,
    auth: 'installation',
    persist: true,
    optional: true,
    reply: (_body, path) => {
      const gone = Number(path.split('/').at(-1));
      thread.reactions = thread.reactions.filter((r) => r.id !== gone);
      return '';
    },
    headers: { 'content-type': 'text/plain' },
  });
}
