// The task the model is given, byte for byte (leaf-protocol.md §1): what the agent phase sends,
// and what the run's result shows a reviewer.
import type { RunRequest } from './run-types.js';

/**
 * leaf-protocol.md §1: the issue, then (only if present) a blank line and each extra guidance:
 * the config's `instructions`, the instruction files' texts, the text after `/frognano retry`.
 */
export function taskText(
  request: Pick<RunRequest, 'issueText' | 'extraGuidance'>,
  config: { instructions?: string | undefined },
  instructionTexts: readonly string[] = [],
): string {
  const parts = [request.issueText];
  if (config.instructions?.trim()) parts.push(config.instructions.trim());
  for (const text of instructionTexts) if (text.trim()) parts.push(text.trim());
  if (request.extraGuidance?.trim()) parts.push(request.extraGuidance.trim());
  return parts.join('\n\n');
}
