// Who may start or cancel a run: people with write, maintain or admin on the repository, asked
// through the API (author_association in the payload says nothing about write access).
import type { GitHubClient, RepoRef } from '../octokit.js';

const ALLOWED_PERMISSIONS = new Set(['admin', 'write']);
const ALLOWED_ROLES = new Set(['admin', 'maintain', 'write']);

export async function hasWriteAccess(
  octokit: GitHubClient,
  params: RepoRef & { username: string },
): Promise<boolean> {
  try {
    const { data } = await octokit.rest.repos.getCollaboratorPermissionLevel({
      owner: params.owner,
      repo: params.repo,
      username: params.username,
    });
    // `permission` folds maintain into write; `role_name` keeps it (and custom roles).
    return (
      ALLOWED_PERMISSIONS.has(data.permission) ||
      ALLOWED_ROLES.has((data as { role_name?: string }).role_name ?? '')
    );
  } catch (error) {
    // 404: not a collaborator (or an unknown user) - certainly no write access.
    if ((error as { status?: number }).status === 404) return false;
    throw error;
  }
}
