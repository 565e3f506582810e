/** The fair-share group of a run: its repository, `owner/name` as GitHub compares them. */
export function repoKey(t: { owner: string; repo: string }): string {
  return `${t.owner}/${t.repo}`.toLowerCase();
}
