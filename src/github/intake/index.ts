// The intake room's door: webhook deliveries become decisions (triggers, commands, permission
// checks) and queued runs; the webhook body guard keeps hostile bodies out first.
export {
  Intake,
  repoKey,
  statusCommentId,
  type AcceptedTrigger,
  type IntakeDeps,
} from './intake.js';
export { hasWriteAccess } from './permission-check.js';
export { decideTrigger, issueKey } from './triggers.js';
export {
  WEBHOOK_BODY_TIMEOUT_MS,
  guardWebhookBodies,
  webhookBodySha256,
} from './webhook-body-guard.js';
