// The model client's configuration from process configuration plus CLI overrides.
import type { ProcessConfig } from '../config.js';
import { DEFAULT_REQUEST } from '../leaf/protocol.js';
import { ModelConfig } from '../leaf/openai-model.js';
import { splitModelUrls } from '../model-fleet/endpoint-url.js';

/** With several endpoints (a comma-separated list), `baseUrl` is the first one's. */
export function modelConfigFrom(
  config: ProcessConfig,
  overrides: { baseUrl?: string; model?: string } = {},
): ModelConfig {
  return ModelConfig.parse({
    baseUrl: splitModelUrls(overrides.baseUrl ?? config.FROGNANO_MODEL_URL)[0],
    model: overrides.model ?? config.FROGNANO_MODEL,
    apiKey: config.FROGNANO_API_KEY,
    temperature: config.FROGNANO_TEMPERATURE,
    maxCompletionTokens: config.FROGNANO_MAX_COMPLETION_TOKENS,
    parallelToolCalls: DEFAULT_REQUEST.parallelToolCalls,
    timeoutMs: config.FROGNANO_MODEL_TIMEOUT_SECONDS * 1000,
    maxRetries: config.FROGNANO_MODEL_MAX_RETRIES,
  });
}
