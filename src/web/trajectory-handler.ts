// Serves run trajectories: run ids only (no path from the URL reaches the file system); from this
// host's data directory, else from the shared queue (the run was made on another host).
import type { IncomingMessage, ServerResponse } from 'node:http';
import { readRunArtifact } from '../queue/read-run-artifact.js';
import type { RunArtifacts } from '../queue/types.js';

export function trajectoryHandler(dataDir: string, queue?: Pick<RunArtifacts, 'getArtifact'>) {
  return async (req: IncomingMessage, res: ServerResponse): Promise<boolean> => {
    const m = /^\/frognano\/runs\/([0-9a-f-]{36})\/trajectory\.json$/.exec(req.url ?? '');
    if (req.method !== 'GET' || !m) return false;
    try {
      const body = await readRunArtifact(m[1] as string, 'trajectory.json', { dataDir, queue });
      if (!body) throw new Error('no such trajectory');
      // The content was written by a model: never let a browser sniff it into a page.
      res
        .writeHead(200, {
          'content-type': 'application/json; charset=utf-8',
          'x-content-type-options': 'nosniff',
          'content-security-policy': "default-src 'none'; sandbox",
          'content-disposition': 'inline; filename="trajectory.json"',
        })
        .end(body);
    } catch {
      res.writeHead(404).end();
    }
    return true;
  };
}
