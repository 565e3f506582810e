// Whether a sandbox's container is gone (removed, or no longer running), as opposed to only its
// tool helper having died: a gone container is a lost sandbox (leaf-protocol.md §8, item 8).
import type Docker from 'dockerode';

/** Why the container counts as gone, or undefined while it runs (or the engine cannot say). */
export async function containerGone(container: Docker.Container): Promise<string | undefined> {
  const short = container.id.slice(0, 12);
  let info: Docker.ContainerInspectInfo;
  try {
    info = await container.inspect();
  } catch (error) {
    const status = (error as { statusCode?: number }).statusCode;
    return status === 404 ? `the sandbox container ${short} was removed` : undefined;
  }
  const state = info.State;
  if (state.Running && !state.Dead) return undefined;
  const how = state.OOMKilled ? 'killed for memory' : `exited with code ${state.ExitCode}`;
  return `the sandbox container ${short} is not running (${how})`;
}

/** A dead helper's exit status (128 + the signal, as a shell reports a killed runner). */
export async function helperExitCode(exec: Docker.Exec): Promise<number | undefined> {
  // The engine records the exit a moment after the stream ends.
  for (let poll = 0; poll < 20; poll += 1) {
    try {
      const info = await exec.inspect();
      if (!info.Running && typeof info.ExitCode === 'number') return info.ExitCode;
    } catch {
      return undefined;
    }
    await new Promise((resolve) => setTimeout(resolve, 100));
  }
  return undefined;
}
