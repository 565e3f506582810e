// The model client's configuration from process configuration plus CLI overrides.
import { DEFAULT_REQUEST } from '../leaf/protocol.js';
import { ModelConfig } from '../leaf/openai-model.js';
import { splitModelUrls } from './endpoint-url.js';

/**
 * What the model client is made from: config.ts's `ProcessConfig` has it all. Named here, not
 * imported, because config.ts sits above this room (it checks the URLs with endpoint-url.ts).
 */
export interface ModelSettings {
  FROGNANO_MODEL_URL: string;
  FROGNANO_MODEL: string;
  FROGNANO_API_KEY?: string | undefined;
  FROGNANO_TEMPERATURE: number;
  FROGNANO_MAX_COMPLETION_TOKENS: number;
  FROGNANO_MODEL_TIMEOUT_SECONDS: number;
  FROGNANO_MODEL_MAX_RETRIES: number;
}

/** With several endpoints (a comma-separated list), `baseUrl` is the first one's. */
export function modelConfigFrom(
  config: ModelSettings,
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
