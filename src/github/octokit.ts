// The one GitHub client type the github/ modules take: Probot's Octokit (throttling and retry on).
import type { ProbotOctokit } from 'probot';

export type GitHubClient = InstanceType<typeof ProbotOctokit>;

export interface RepoRef {
  owner: string;
  repo: string;
}

export interface IssueRef extends RepoRef {
  issueNumber: number;
}
