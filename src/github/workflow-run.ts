// Actions mode: the workflow run a run happened in, and the artifact action.yml uploads its files
// as (the run page, the trajectories, summary.md), for the status comment and the pull request.

export interface WorkflowRunLink {
  /** `$GITHUB_SERVER_URL/$GITHUB_REPOSITORY/actions/runs/$GITHUB_RUN_ID`. */
  url: string;
  /** The artifact's name, as action.yml's upload step gives it. */
  artifact: string;
}

export function workflowRunLink(url: string, runId: string): WorkflowRunLink {
  return { url, artifact: `frognano-run-${runId}` };
}
