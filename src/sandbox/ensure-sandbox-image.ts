// The default sandbox image builds itself: through the engine from sandbox/Dockerfile when a
// registry answers, otherwise offline with sandbox/build-offline.sh (debootstrap + docker
// import) when this process may run it. Both run the same recipe (sandbox/setup-image.sh).
import { spawn } from 'node:child_process';
import { accessSync, constants } from 'node:fs';
import { delimiter, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import type Docker from 'dockerode';
import { oneLine } from '../one-line.js';
import { DEFAULT_SANDBOX_IMAGE } from './docker-sandbox.js';

/** sandbox/ at the repository root, from src/sandbox/ (tsx) and dist/sandbox/ (node) alike. */
export const SANDBOX_RECIPE_DIR = fileURLToPath(new URL('../../sandbox/', import.meta.url));
const RECIPE_FILES = ['Dockerfile', 'packages.txt', 'setup-image.sh'];

export class SandboxImageError extends Error {
  constructor(message: string) {
    super(message);
    this.name = 'SandboxImageError';
  }
}

export type ImageSource = 'present' | 'engine' | 'offline';

export interface EnsureSandboxImageOptions {
  docker: Docker;
  image?: string;
  env?: NodeJS.ProcessEnv;
  /** One line per build step (both recipes), for a terminal or a log. */
  progress?: (line: string) => void;
  /** An engine build that prints nothing for this long counts as failed (a silent registry). */
  stallMs?: number;
  /** Where the recipe lives; default the repository's sandbox/ (which only builds the default image). */
  recipeDir?: string;
}

/**
 * Makes sure `image` exists, building the default image when it is missing; returns how.
 * Throws SandboxImageError with one line saying which builds were tried and why each failed.
 */
export async function ensureSandboxImage(options: EnsureSandboxImageOptions): Promise<ImageSource> {
  const { docker } = options;
  const image = options.image ?? DEFAULT_SANDBOX_IMAGE;
  const progress = options.progress ?? (() => undefined);
  if (await imageExists(docker, image)) return 'present';
  if (image !== DEFAULT_SANDBOX_IMAGE && !options.recipeDir) {
    throw new SandboxImageError(
      `sandbox image ${image} is missing and only the default ${DEFAULT_SANDBOX_IMAGE} builds itself: pull or build ${image}, or unset FROGNANO_SANDBOX_IMAGE`,
    );
  }
  const recipeDir = options.recipeDir ?? SANDBOX_RECIPE_DIR;

  progress(`sandbox image ${image} is missing: building it from sandbox/Dockerfile`);
  let engineFailure: string;
  try {
    await buildWithEngine(docker, image, recipeDir, progress, options.stallMs ?? 120_000);
    return 'engine';
  } catch (error) {
    engineFailure = error instanceof Error ? error.message : String(error);
  }

  const env = options.env ?? process.env;
  const offlineBlocker = offlineBuildBlocker(env);
  if (offlineBlocker) {
    throw new SandboxImageError(
      `sandbox image ${image} is missing and cannot be built here: the engine build failed (${engineFailure}) and the offline build needs ${offlineBlocker}; build it once with \`sudo bash sandbox/build-offline.sh\` or \`docker build -t ${image} sandbox/\``,
    );
  }
  progress(
    `engine build failed (${engineFailure}); building offline with sandbox/build-offline.sh`,
  );
  try {
    await buildOffline(image, recipeDir, env, progress);
  } catch (error) {
    const reason = error instanceof Error ? error.message : String(error);
    throw new SandboxImageError(
      `sandbox image ${image} is missing and neither build worked: the engine build failed (${engineFailure}); the offline build failed (${reason})`,
    );
  }
  if (!(await imageExists(docker, image))) {
    throw new SandboxImageError(
      `sandbox/build-offline.sh finished but ${image} is not on the engine: is DOCKER_HOST the same engine for the docker CLI?`,
    );
  }
  return 'offline';
}

export async function imageExists(docker: Docker, image: string): Promise<boolean> {
  try {
    await docker.getImage(image).inspect();
    return true;
  } catch (error) {
    if ((error as { statusCode?: number }).statusCode === 404) return false;
    throw error;
  }
}

/** Why this process cannot run the offline build, or undefined when it can. */
export function offlineBuildBlocker(env: NodeJS.ProcessEnv = process.env): string | undefined {
  const missing = ['debootstrap', 'docker', 'chroot', 'flock'].filter((tool) => !onPath(tool, env));
  const isRoot = process.getuid?.() === 0;
  const needs = [
    ...(isRoot ? [] : ['root (debootstrap and chroot)']),
    ...missing.map((tool) => `${tool} on PATH`),
  ];
  return needs.length > 0 ? needs.join(' and ') : undefined;
}

function onPath(tool: string, env: NodeJS.ProcessEnv): boolean {
  const dirs = (env.PATH ?? '').split(delimiter).concat(['/usr/sbin', '/sbin']);
  return dirs.some((dir) => {
    try {
      accessSync(join(dir, tool), constants.X_OK);
      return true;
    } catch {
      return false;
    }
  });
}

async function buildWithEngine(
  docker: Docker,
  image: string,
  recipeDir: string,
  progress: (line: string) => void,
  stallMs: number,
): Promise<void> {
  const stream = await docker.buildImage({ context: recipeDir, src: RECIPE_FILES }, { t: image });
  await new Promise<void>((resolve, reject) => {
    let timer: NodeJS.Timeout | undefined;
    const arm = () => {
      clearTimeout(timer);
      timer = setTimeout(() => {
        (stream as NodeJS.ReadableStream & { destroy?: () => void }).destroy?.();
        reject(new Error(`no progress for ${Math.round(stallMs / 1000)} s`));
      }, stallMs);
    };
    arm();
    docker.modem.followProgress(
      stream,
      (error: Error | null, events: BuildEvent[]) => {
        clearTimeout(timer);
        const failed = events.find((event) => event.error ?? event.errorDetail);
        if (error) reject(error);
        else if (failed) reject(new Error(whole(failed.error ?? failed.errorDetail?.message)));
        else resolve();
      },
      (event: BuildEvent) => {
        arm();
        const text = whole(event.stream ?? event.status);
        // Steps and their first output lines; apt's per-package chatter is left out.
        if (text && (/^Step \d+\/\d+/.test(text) || event.status)) progress(text);
      },
    );
  });
}

interface BuildEvent {
  stream?: string;
  status?: string;
  error?: string;
  errorDetail?: { message?: string };
}

/** A build's output or error as one line, never cut: Docker's own text, shown whole. */
function whole(text: string | undefined): string {
  return oneLine(text ?? '', Number.POSITIVE_INFINITY);
}

function buildOffline(
  image: string,
  recipeDir: string,
  env: NodeJS.ProcessEnv,
  progress: (line: string) => void,
): Promise<void> {
  return new Promise((resolve, reject) => {
    const child = spawn('bash', [join(recipeDir, 'build-offline.sh')], {
      env: { ...env, FROGNANO_SANDBOX_IMAGE: image },
      stdio: ['ignore', 'ignore', 'pipe'],
    });
    const tail: string[] = [];
    let pending = '';
    child.stderr.setEncoding('utf8').on('data', (chunk: string) => {
      const lines = (pending + chunk).split('\n');
      pending = lines.pop() ?? '';
      for (const line of lines) {
        if (!line.trim()) continue;
        tail.push(line);
        if (tail.length > 5) tail.shift();
        if (line.startsWith('[build-offline')) progress(line);
      }
    });
    child.once('error', reject);
    child.once('close', (code) => {
      if (code === 0) resolve();
      else reject(new Error(`exit ${code}: ${whole(tail.at(-1) ?? pending)}`));
    });
  });
}
