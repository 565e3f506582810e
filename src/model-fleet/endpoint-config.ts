// The client configuration of one endpoint of the fleet: the shared request settings, its own
// base URL, and its basic-auth header (which takes the Authorization header's place).
import { ModelConfig, type ModelConfigInput } from '../leaf/openai-model.js';
import type { EndpointSpec } from './endpoint-url.js';

export function endpointModelConfig(
  model: Omit<ModelConfigInput, 'baseUrl'>,
  endpoint: EndpointSpec,
  headers: Record<string, string> = {},
): ModelConfig {
  return ModelConfig.parse({
    ...model,
    baseUrl: endpoint.baseUrl,
    headers: {
      ...model.headers,
      ...headers,
      ...(endpoint.authorization ? { authorization: endpoint.authorization } : {}),
    },
  });
}
