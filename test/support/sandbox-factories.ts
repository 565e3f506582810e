// The sandboxes the tool conformance suite (test/leaf/tools.test.ts) runs against. Every
// factory must give the same observations; each one is a separate `describe.each` row.
import type { Sandbox } from '../../src/leaf/sandbox.js';
import { createLocalSandbox } from '../../src/sandbox/local-sandbox.js';
import { dockerSandboxFactory } from './docker-sandbox-factory.js';

export interface SandboxFactory {
  name: string;
  /** Why this factory cannot run here (its rows are skipped with a notice), else undefined. */
  unavailable?: () => Promise<string | undefined>;
  /** A sandbox holding a copy of `sourceDir` as its repository root. */
  create(sourceDir: string): Promise<Sandbox>;
}

export const localSandboxFactory: SandboxFactory = {
  name: 'local',
  create: (sourceDir) => createLocalSandbox({ sourceDir }),
};

export const sandboxFactories: SandboxFactory[] = [localSandboxFactory, dockerSandboxFactory];
