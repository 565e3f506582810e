// What `frognano action` is given, and what it read of its environment before handling the event
// (apart from run-action.ts, which loads handle-trigger.ts only for an event that is ours).
import type { Logger } from 'pino';
import type { ProcessConfig } from '../config.js';
import type { AppConfig } from '../github/app-config.js';
import type { ActionEnv } from './action-env.js';

export interface ActionSetup {
  env: ActionEnv;
  config: AppConfig;
  processConfig: ProcessConfig;
  /** How often a running run looks for a cancel made by another workflow run. */
  cancelPollMs: number;
}

export interface RunActionOptions {
  env: NodeJS.ProcessEnv;
  cwd?: string;
  log: Logger;
  stderr: (line: string) => void;
  /** Aborted when the workflow run is cancelled (SIGINT, SIGTERM): the run stops, cancelled. */
  signal?: AbortSignal;
}
