// What the endpoints bench's scripted GPU servers answer, and how fast: shared by the bench
// (its bound) and the server processes (curve-endpoint.ts).
import { FIXED_CALC } from '../../test/support/python-repo.js';
import {
  finalAnswer,
  toolCall,
  type RecordedRequest,
  type ResponseSpec,
} from '../../test/support/scripted-model-server.js';

/** One request alone on its GPU. */
export const BASE_MS = 1500;

/** Each loop's answers, one per request: looks around, fixes add(), says so. */
const SCRIPT: readonly ResponseSpec[] = [
  toolCall('Glob', { pattern: '**/*.py' }),
  toolCall('Write', { file_path: 'calc.py', content: FIXED_CALC }),
  finalAnswer('Fixed add().'),
];
export const REQUESTS_PER_RUN = SCRIPT.length;

/** The loop's next answer: the one after as many as it has been told tool results of. */
export function answerTo(request: RecordedRequest): ResponseSpec {
  const told = (request.body?.messages ?? []).filter((m) => m.role === 'tool').length;
  return SCRIPT[Math.min(told, SCRIPT.length - 1)]!;
}

/** The H200 curve for a 4B model: [sequences at once, cost relative to one]. */
const CURVE: readonly [number, number][] = [
  [1, 1.0],
  [2, 1.07],
  [4, 1.36],
  [8, 1.8],
];

/** The curve between its points, and past 8 along its last slope. */
export function batchCost(inFlight: number): number {
  const b = Math.max(1, inFlight);
  for (let i = 1; i < CURVE.length; i++) {
    const [b0, c0] = CURVE[i - 1]!;
    const [b1, c1] = CURVE[i]!;
    if (b <= b1 || i === CURVE.length - 1) return c0 + ((c1 - c0) * (b - b0)) / (b1 - b0);
  }
  return 1;
}
