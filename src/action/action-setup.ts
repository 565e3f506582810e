// What `frognano action` read of its environment before handling the event.
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
