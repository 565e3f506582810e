// Removes the setup snapshot images a test or benchmark made, found by their repo label.
import type Docker from 'dockerode';
import { SNAPSHOT_LABEL, SNAPSHOT_REPO_LABEL } from '../../src/sandbox/snapshot-cache.js';

export async function removeSnapshotImages(
  docker: Docker,
  repos: readonly string[],
): Promise<void> {
  const images = await docker
    .listImages({ filters: JSON.stringify({ label: [`${SNAPSHOT_LABEL}=1`] }) })
    .catch(() => []);
  for (const image of images) {
    if (!repos.includes(image.Labels?.[SNAPSHOT_REPO_LABEL] ?? '')) continue;
    // Untag first: a tag shared with a newer snapshot must not take that one down too.
    for (const tag of image.RepoTags ?? []) {
      await docker
        .getImage(tag)
        .remove()
        .catch(() => undefined);
    }
    await docker
      .getImage(image.Id)
      .remove({ force: true })
      .catch(() => undefined);
  }
}
