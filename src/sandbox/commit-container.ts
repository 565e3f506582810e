import type Docker from 'dockerode';
import { SandboxFailure } from '../leaf/sandbox.js';
import { LABEL_OWNER, LABEL_OWNER_HOST, LABEL_OWNER_PID, LABEL_OWNER_PROCESS } from './owner.js';

/**
 * `docker commit` of the container (a setup snapshot). The image keeps the container's
 * config (user, env, workdir) and labels; `labels` are added over them. Returns the image id.
 */
export async function commitContainer(
  container: Docker.Container,
  tag: string,
  labels: Record<string, string>,
): Promise<string> {
  const { repo, tag: version } = splitImageTag(tag);
  const result = (await container.commit({
    _query: {
      container: container.id,
      repo,
      tag: version,
      pause: true,
      comment: 'frognano setup snapshot',
    },
    // A setup snapshot belongs to no process: a container started from it gets its own owner,
    // and one started without any must not inherit this run's. (A run's attempt base passes
    // its owner in `labels`, so reap can remove it if the run is killed.)
    _body: {
      Labels: {
        [LABEL_OWNER]: '',
        [LABEL_OWNER_PROCESS]: '',
        [LABEL_OWNER_PID]: '',
        [LABEL_OWNER_HOST]: '',
        ...labels,
      },
    },
  })) as { Id?: string; id?: string };
  const imageId = result.Id ?? result.id;
  if (!imageId) throw new SandboxFailure(`docker commit of ${container.id} returned no image id`);
  return imageId;
}

function splitImageTag(reference: string): { repo: string; tag: string } {
  const slash = reference.lastIndexOf('/');
  const colon = reference.lastIndexOf(':');
  if (colon > slash) return { repo: reference.slice(0, colon), tag: reference.slice(colon + 1) };
  return { repo: reference, tag: 'latest' };
}
