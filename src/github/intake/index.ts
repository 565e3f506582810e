// The intake room's door: webhook deliveries become decisions (triggers, commands, permission
// checks) and queued runs; the webhook body guard keeps hostile bodies out first.
export { Intake } from './intake.js';
export { decideTrigger } from './triggers.js';
export {
  WEBHOOK_BODY_TIMEOUT_MS,
  guardWebhookBodies,
  webhookBodySha256,
} from './webhook-body-guard.js';
