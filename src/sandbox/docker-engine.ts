// Reaching the Docker engine, with a failure that says where we looked and what to do.
import Docker from 'dockerode';

/** Dockerode honours DOCKER_HOST (unix://, tcp://, ssh://) and DOCKER_CERT_PATH/DOCKER_TLS_VERIFY. */
export function connectDocker(env: NodeJS.ProcessEnv = process.env): Docker {
  if (!env.DOCKER_HOST) return new Docker({ socketPath: '/var/run/docker.sock' });
  // Dockerode reads the process environment itself; another environment's plain unix:// or
  // tcp:// engine is spelled out (TLS and ssh:// come from the process environment).
  if (env !== process.env && URL.canParse(env.DOCKER_HOST)) {
    const url = new URL(env.DOCKER_HOST);
    if (url.protocol === 'unix:') return new Docker({ socketPath: url.pathname });
    if (url.protocol === 'tcp:' && !env.DOCKER_TLS_VERIFY) {
      return new Docker({ host: url.hostname, port: Number(url.port || 2375), protocol: 'http' });
    }
  }
  return new Docker();
}

export function describeDockerEndpoint(env: NodeJS.ProcessEnv = process.env): string {
  return env.DOCKER_HOST ? `DOCKER_HOST=${env.DOCKER_HOST}` : 'unix:///var/run/docker.sock';
}

export class DockerUnavailableError extends Error {
  constructor(message: string) {
    super(message);
    this.name = 'DockerUnavailableError';
  }
}

/** Pings the engine within `timeoutMs`; throws DockerUnavailableError with one actionable line. */
export async function assertDockerReachable(
  docker: Docker,
  options: { timeoutMs?: number; env?: NodeJS.ProcessEnv } = {},
): Promise<void> {
  const timeoutMs = options.timeoutMs ?? 3000;
  let timer: NodeJS.Timeout | undefined;
  try {
    await Promise.race([
      docker.ping(),
      new Promise((_, reject) => {
        timer = setTimeout(() => reject(new Error(`no answer within ${timeoutMs} ms`)), timeoutMs);
      }),
    ]);
  } catch (error) {
    const reason = error instanceof Error ? error.message : String(error);
    throw new DockerUnavailableError(
      `no Docker engine at ${describeDockerEndpoint(options.env)} (${reason}); start one (e.g. \`sudo dockerd &\` or \`systemctl start docker\`), set DOCKER_HOST, or use --sandbox local for development`,
    );
  } finally {
    clearTimeout(timer);
  }
}
