// What an endpoint says of itself, so a run can be traced to the weights and server that
// produced it: `GET /models` (id, root, max_model_len, owned_by) and the server's version
// (`GET /version` on vLLM, `GET /get_server_info` on SGLang), where it has one.
import { z } from 'zod';
import { readCappedText } from '../leaf/model-fetch.js';
import type { ServedModel } from '../leaf/openai-model.js';

export interface EndpointIdentity extends ServedModel {
  serverVersion: string | null;
}

const Versioned = z.object({ version: z.string() });

/** The server's root (`…/v1` removed), where vLLM and SGLang serve their own routes. */
export function serverRoot(baseUrl: string): string {
  return baseUrl.replace(/\/+$/, '').replace(/\/v1$/, '');
}

/** The version, or null when the server has no such route (a proxy, llama.cpp, …). */
export async function fetchServerVersion(
  baseUrl: string,
  headers: Record<string, string>,
  timeoutMs = 3000,
): Promise<string | null> {
  for (const route of ['/version', '/get_server_info']) {
    try {
      const response = await fetch(`${serverRoot(baseUrl)}${route}`, {
        headers,
        signal: AbortSignal.timeout(timeoutMs),
      });
      if (!response.ok) continue;
      const read = await readCappedText(response);
      if (read.tooLarge) continue;
      const parsed = Versioned.safeParse(JSON.parse(read.text));
      if (parsed.success) return parsed.data.version.slice(0, 100);
    } catch {
      // Not there, or not JSON: try the next route.
    }
  }
  return null;
}
