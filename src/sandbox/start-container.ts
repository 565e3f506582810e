// A DockerSandbox's container from options to running: the options checked, its name and labels,
// and the start (home and workdir, disk guard, tool helper); used at creation and on a rebuild.
import { randomBytes } from 'node:crypto';
import type Docker from 'dockerode';
import { SandboxFailure } from '../leaf/sandbox.js';
import {
  DockerSandboxOptions,
  LABEL_CREATED,
  LABEL_REPO,
  LABEL_RUN,
  SANDBOX_HOME,
  SANDBOX_WORKDIR,
  type ResolvedDockerSandboxOptions,
} from './docker-sandbox-options.js';
import type { SandboxLimitExceeded } from './disk-guard.js';
import { errorText } from './engine-error-text.js';
import { ownerLabels } from './owner.js';
import { packDirectories } from './sandbox-skeleton.js';
import { HelperPythonMissing } from './tool-helper-channel.js';

/** What startSandbox needs of the sandbox it starts (DockerSandbox). */
export interface StartingSandbox {
  guardDisk(engineQuota: boolean, intervalMs: number): Promise<void>;
  startHelper(): Promise<void>;
  dispose(): Promise<void>;
  readonly limitExceeded: SandboxLimitExceeded | undefined;
}

export function parseOptions(options: DockerSandboxOptions): ResolvedDockerSandboxOptions {
  const parsed = DockerSandboxOptions.safeParse(options);
  if (!parsed.success) {
    const issue = parsed.error.issues[0];
    throw new Error(
      `invalid DockerSandbox option ${issue?.path.join('.') || '(root)'}: ${issue?.message}`,
    );
  }
  return parsed.data;
}

/** The container's name and labels: the run, the repository, when, and who may reap it. */
export function sandboxIdentity(resolved: ResolvedDockerSandboxOptions): {
  name: string;
  labels: Record<string, string>;
} {
  const created = new Date().toISOString();
  const labels: Record<string, string> = {
    ...resolved.labels,
    ...(resolved.owner ? ownerLabels(resolved.owner) : {}),
    [LABEL_RUN]: resolved.runId,
    [LABEL_REPO]: resolved.repo,
    [LABEL_CREATED]: created,
  };
  return { name: containerName(resolved.runId), labels };
}

export function containerName(runId: string): string {
  return `frognano-${runId}-${randomBytes(3).toString('hex')}`;
}

/** The created container made ready: home and workdir, started, guarded, its helper up. */
export async function startSandbox(
  sandbox: StartingSandbox,
  container: Docker.Container,
  { quota, diskCheckMs, name }: { quota: boolean; diskCheckMs: number; name: string },
): Promise<void> {
  try {
    // putArchive runs in the engine, not as uid 1000, so it can give the sandbox user its
    // home and /testbed in any image, even one without them.
    await container.putArchive(packDirectories([SANDBOX_HOME, SANDBOX_WORKDIR]), { path: '/' });
    await container.start();
    await sandbox.guardDisk(quota, diskCheckMs);
    await sandbox.startHelper();
  } catch (error) {
    // The reason it failed matters more than a failed cleanup (the reaper gets those).
    await sandbox.dispose().catch(() => undefined);
    if (sandbox.limitExceeded) throw sandbox.limitExceeded;
    if (error instanceof HelperPythonMissing)
      throw new SandboxFailure(error.message, { cause: error });
    if (error instanceof SandboxFailure) throw error;
    throw new SandboxFailure(`could not start sandbox container ${name}: ${errorText(error)}`, {
      cause: error,
    });
  }
}
