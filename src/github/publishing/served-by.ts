// Which model servers answered a run (per attempt with several), and what each said of itself
// (served id, root, max_model_len, server and version), so a pull request or a summary.md can be
// traced to the weights and server that produced it. Shared by the PR body and summary.md.
// Server-reported text is shown as inline code only: a server cannot write markup here.
import type { ModelEndpointRecord } from '../../leaf/trajectory.js';
import type { RunResult } from '../../runner/run-types.js';
import { inlineCode } from '../markdown.js';

export function servedBySection(result: RunResult, options: { chosen?: string } = {}): string {
  const attempts = result.attempts && result.attempts.length > 1 ? result.attempts : undefined;
  const groups = attempts
    ? attempts.map((a) => ({
        label: `Attempt ${a.attempt}${a.selected ? ` (${options.chosen ?? 'published'})` : ''}`,
        servedBy: a.servedBy ?? [],
      }))
    : [{ label: undefined, servedBy: result.servedBy ?? [] }];
  if (groups.every((g) => g.servedBy.length === 0)) return '';
  const lines = ['## Model servers', ''];
  for (const group of groups) {
    if (group.label === undefined) {
      lines.push(...group.servedBy.map((r) => `- ${servedLine(r)}`));
    } else {
      lines.push(`- ${group.label}:${group.servedBy.length === 0 ? ' no model request' : ''}`);
      lines.push(...group.servedBy.map((r) => `  - ${servedLine(r)}`));
    }
  }
  return lines.join('\n');
}

function servedLine(r: ModelEndpointRecord): string {
  const steps =
    r.first_step === null || r.last_step === null
      ? 'no step'
      : r.first_step === r.last_step
        ? `step ${r.first_step + 1}`
        : `steps ${r.first_step + 1}–${r.last_step + 1}`;
  const server = [r.owned_by, r.server_version].filter((x): x is string => !!x).join(' ');
  const facts = [
    r.root && r.root !== r.model_id ? `root ${inlineCode(short(r.root))}` : undefined,
    r.max_model_len !== null ? `max_model_len ${r.max_model_len}` : undefined,
    server ? `server ${inlineCode(short(server))}` : undefined,
  ].filter((x): x is string => x !== undefined);
  const model = r.model_id ? inlineCode(short(r.model_id)) : 'model not reported';
  const left = r.error ? `; the run left it: ${inlineCode(short(r.error, 200))}` : '';
  return `${inlineCode(r.endpoint)}: ${steps}, ${model}${facts.length > 0 ? ` (${facts.join(', ')})` : ''}${left}`;
}

function short(text: string, max = 120): string {
  return text.length > max ? `${text.slice(0, max - 1)}…` : text;
}
