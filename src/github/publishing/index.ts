// The publishing room's door: a run's change becomes a pushed branch and a draft pull request
// (or a follow-up commit on it), its body the evidence; `/frognano use K` republishes an attempt;
// `/frognano ci` pushes an empty commit so the repository's workflows run.
export { ciCommandHandler, ciFailedReply, ciReply, pushCiCommit } from './ci-commit.js';
export {
  notOursLine,
  ownPullRequest,
  prepareFollowUp,
  publishFollowUp,
  type FollowUpBrief,
} from './follow-up.js';
export { removePublishLeftovers } from './publish-leftovers.js';
export { attemptsTable, changesSection, trajectoryTable, verdictLine } from './pr-body.js';
export {
  finishPublish,
  publishFailure,
  publishRun,
  resumablePublish,
  type PublishContext,
} from './publish-run.js';
export {
  noreplyDomainFor,
  resolveBotIdentity,
  type BotIdentity,
  type GitRunner,
} from './publish.js';
export { publishedRun } from './published-run.js';
export { renderSummary, type SummaryMeta } from './render-summary.js';
export { REVISION_NOTE, issueNumberOfBranch, type PublishedAttempt } from './revision-record.js';
export { servedBySection } from './served-by.js';
export { runtimeWords } from './runtime-words.js';
export { useAttempt, useCommandHandler } from './use-attempt.js';
