// The doctor's model checks, one line per endpoint of FROGNANO_MODEL_URL: it serves
// FROGNANO_MODEL, its context length covers FROGNANO_MAX_CONTEXT_TOKENS, and (with Redis) what
// the workers' shared state says of it: loops in flight, a down mark. With `--probe`, one small
// Leaf request each: tool calls structured or only text, reasoning separated or not.
// The doctor only reads the shared state: its own findings never mark an endpoint down.
import type { ProcessConfig } from '../config.js';
import { inspectModelEndpoint, type ServedModel } from '../leaf/openai-model.js';
import { probeEndpoint, type ProbeResult } from '../model-fleet/conformance-probe.js';
import { endpointModelConfig } from '../model-fleet/endpoint-config.js';
import { parseEndpoints, splitModelUrls, type EndpointSpec } from '../model-fleet/endpoint-url.js';
import { errorChain } from '../model-fleet/endpoint-failure.js';
import type { DownMark } from '../model-fleet/fleet-store.js';
import { RedisFleetStore } from '../model-fleet/redis-store.js';
import { loadQueueConfig } from '../queue/open-queue.js';
import type { CheckResult } from './doctor-check-result.js';
import { modelConfigFrom } from '../model-fleet/model-config-from.js';

export interface NamedResult {
  name: string;
  result: CheckResult;
}

const SERVER_FLAGS = '--enable-auto-tool-choice --tool-call-parser qwen3_coder';

interface Shared {
  loops: Map<string, number>;
  marks: Map<string, DownMark>;
}

export async function modelEndpointChecks(
  config: ProcessConfig,
  env: NodeJS.ProcessEnv,
  options: { probe?: boolean } = {},
): Promise<NamedResult[]> {
  const endpoints = parseEndpoints(splitModelUrls(config.FROGNANO_MODEL_URL));
  const several = endpoints.length > 1;
  const label = (base: string, e: EndpointSpec) => (several ? `${base} ${e.name}` : base);
  const shared = await sharedState(env, endpoints);
  const model = modelConfigFrom(config);
  const inspected = await Promise.all(
    endpoints.map(async (e) => {
      try {
        return {
          served: await inspectModelEndpoint(endpointModelConfig(model, e), { timeoutMs: 5000 }),
        };
      } catch (error) {
        return { error: errorChain(error) };
      }
    }),
  );
  // One endpoint down of several only warns: runs go on with the others.
  const anyServes = inspected.some((i) => i.served);
  const results: NamedResult[] = [];
  for (const [index, e] of endpoints.entries()) {
    const found = inspected[index]!;
    const result = found.served
      ? servedResult(config, e, found.served, shared)
      : failedResult(e, found.error!, shared, several && anyServes);
    results.push({ name: label('model endpoint', e), result });
    if (!options.probe) continue;
    const probes = found.served
      ? await probeResults(endpointModelConfig(model, e))
      : skippedProbe('the model endpoint check failed');
    results.push(
      { name: label('model tool calls', e), result: probes.toolCalls },
      { name: label('model reasoning', e), result: probes.reasoning },
    );
  }
  return results;
}

function servedResult(
  config: ProcessConfig,
  e: EndpointSpec,
  served: ServedModel,
  shared: Shared | undefined,
): CheckResult {
  const detail = `${e.baseUrl} serves ${served.id}${sharedWords(e, config, shared)}`;
  const want = config.FROGNANO_MAX_CONTEXT_TOKENS;
  const length = served.maxModelLen;
  if (length !== null && length < want) {
    return {
      ok: false,
      severity: 'warn',
      problem: `${detail}, but its context length (max_model_len) is ${length} tokens, below FROGNANO_MAX_CONTEXT_TOKENS ${want}: long runs end in context errors`,
      fix: `start the server with --max-model-len ${want} (vLLM) or --context-length ${want} (SGLang), or set FROGNANO_MAX_CONTEXT_TOKENS=${length}`,
    };
  }
  return { ok: true, detail };
}

function failedResult(
  e: EndpointSpec,
  message: string,
  shared: Shared | undefined,
  othersServe: boolean,
): CheckResult {
  const [problem, fix] = splitFix(message);
  const mark = shared?.marks.get(e.name);
  return {
    ok: false,
    severity: othersServe ? 'warn' : 'block',
    problem: `${problem}${mark ? `; ${markWords(mark)}` : ''}${othersServe ? '; runs use the other endpoints' : ''}`,
    fix: fix ?? 'set FROGNANO_MODEL_URL and FROGNANO_MODEL',
  };
}

/** With Redis: the workers' loops on it now, and a down mark in force. */
function sharedWords(e: EndpointSpec, config: ProcessConfig, shared: Shared | undefined): string {
  if (!shared) return '';
  const loops = shared.loops.get(e.name) ?? 0;
  const mark = shared.marks.get(e.name);
  const inFlight = `; ${loops} of ${config.FROGNANO_MODEL_MAX_LOOPS} loops in flight`;
  return mark ? `${inFlight}; ${markWords(mark)}, though it answers now` : inFlight;
}

function markWords(mark: DownMark): string {
  const seconds = Math.max(1, Math.ceil((mark.until - Date.now()) / 1000));
  return `marked down by a worker for ${seconds} s more (${mark.reason})`;
}

async function sharedState(
  env: NodeJS.ProcessEnv,
  endpoints: readonly EndpointSpec[],
): Promise<Shared | undefined> {
  let queue;
  try {
    queue = loadQueueConfig(env);
  } catch {
    return undefined; // the queue check says what is wrong with it
  }
  if (!queue.FROGNANO_REDIS_URL) return undefined;
  const store = new RedisFleetStore({
    url: queue.FROGNANO_REDIS_URL,
    prefix: queue.FROGNANO_REDIS_PREFIX,
  });
  const names = endpoints.map((e) => e.name);
  try {
    const read = Promise.all([store.loads(names), store.downMarks(names)]);
    const timeout = new Promise<never>((_, reject) =>
      setTimeout(() => reject(new Error('Redis did not answer')), 3000).unref(),
    );
    const [loops, marks] = await Promise.race([read, timeout]);
    return { loops, marks };
  } catch {
    return undefined; // the queue check reports Redis itself
  } finally {
    await store.close();
  }
}

async function probeResults(
  config: Parameters<typeof probeEndpoint>[0],
): Promise<{ toolCalls: CheckResult; reasoning: CheckResult }> {
  let probe: ProbeResult;
  try {
    probe = await probeEndpoint(config);
  } catch (error) {
    const problem = `the probe request failed (${errorChain(error)})`;
    return {
      toolCalls: { ok: false, severity: 'block', problem, fix: 'check the server log' },
      reasoning: {
        ok: false,
        severity: 'skipped',
        problem: 'not checked',
        fix: 'the probe request failed',
      },
    };
  }
  return {
    toolCalls: toolCallResult(config.baseUrl, probe),
    reasoning: reasoningResult(config.baseUrl, probe),
  };
}

function toolCallResult(url: string, probe: ProbeResult): CheckResult {
  if (probe.toolCalls === 'structured') {
    return {
      ok: true,
      detail: `${url} answered with a structured tool call (${probe.tool}) in tool_calls`,
    };
  }
  if (probe.toolCalls === 'text') {
    return {
      ok: false,
      severity: 'warn',
      problem: `${url} wrote its tool call (${probe.tool}) as text in the message, not in tool_calls (the bot parses it, but that is not how FrogNano was evaluated)`,
      fix: `start the server with ${SERVER_FLAGS} (SGLang: --tool-call-parser qwen3_coder)`,
    };
  }
  const cut = probe.finishReason === 'length';
  return {
    ok: false,
    severity: 'warn',
    problem: cut
      ? `${url} stopped at the output cap (${probe.completionTokens ?? '?'} tokens) before any tool call`
      : `${url} answered without a tool call (finish_reason ${probe.finishReason ?? 'none'})`,
    fix: cut
      ? 'raise FROGNANO_MAX_COMPLETION_TOKENS, or check that the served model is FrogNano'
      : `check that the served model is FrogNano and the server runs with ${SERVER_FLAGS}`,
  };
}

function reasoningResult(url: string, probe: ProbeResult): CheckResult {
  if (probe.reasoning === 'separated') {
    return { ok: true, detail: `${url} sent its reasoning apart, in ${probe.reasoningField}` };
  }
  return {
    ok: false,
    severity: 'warn',
    problem:
      probe.reasoning === 'in_content'
        ? `${url} left its reasoning (<think>…</think>) in the message content`
        : `${url} sent no reasoning at all (FrogNano thinks before it answers)`,
    fix: 'start the server with --reasoning-parser qwen3',
  };
}

function skippedProbe(why: string): { toolCalls: CheckResult; reasoning: CheckResult } {
  const skipped: CheckResult = { ok: false, severity: 'skipped', problem: 'not checked', fix: why };
  return { toolCalls: skipped, reasoning: skipped };
}

/** Messages from the endpoint check read "problem (reason): fix": split them. */
function splitFix(message: string): [string, string | undefined] {
  const at = message.search(/\)[:;] /);
  if (at < 0) return [message, undefined];
  return [message.slice(0, at + 1), message.slice(at + 3)];
}
