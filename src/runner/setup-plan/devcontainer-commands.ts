// The repository's devcontainer as a setup candidate: its lifecycle commands, in the order the
// devcontainer CLI runs them. devcontainer.json is JSON with comments and trailing commas.
import { shellQuote } from '../../shell-quote.js';
import type { PlannedCommand, TreeTexts } from './setup-plan-types.js';

export const DEVCONTAINER_FILES = ['.devcontainer/devcontainer.json', '.devcontainer.json'];
const LIFECYCLE = ['onCreateCommand', 'updateContentCommand', 'postCreateCommand'] as const;

export function devcontainerCommands(texts: TreeTexts): {
  file?: string;
  commands: PlannedCommand[];
} {
  const file = DEVCONTAINER_FILES.find((f) => texts.has(f));
  if (!file) return { commands: [] };
  const parsed = parseJsonc(texts.get(file)!);
  if (typeof parsed !== 'object' || parsed === null) return { file, commands: [] };
  const commands: PlannedCommand[] = [];
  for (const key of LIFECYCLE) {
    for (const command of lifecycleCommands((parsed as Record<string, unknown>)[key]))
      commands.push({ command, from: `${file} ${key}` });
  }
  return { file, commands };
}

/** A string runs in a shell; an array is argv; an object holds named commands of either form. */
function lifecycleCommands(value: unknown): string[] {
  if (typeof value === 'string') return value.trim() ? [value] : [];
  if (Array.isArray(value))
    return value.length > 0 && value.every((v) => typeof v === 'string')
      ? [value.map((v) => shellQuote(v)).join(' ')]
      : [];
  if (typeof value === 'object' && value !== null)
    return Object.values(value).flatMap((v) =>
      typeof v === 'string' || Array.isArray(v) ? lifecycleCommands(v) : [],
    );
  return [];
}

/** JSON with `//` and `/* *\/` comments and trailing commas, or undefined. */
export function parseJsonc(text: string): unknown {
  let out = '';
  for (let i = 0; i < text.length; i++) {
    const c = text[i]!;
    if (c === '"') {
      const end = stringEnd(text, i);
      out += text.slice(i, end);
      i = end - 1;
    } else if (c === '/' && text[i + 1] === '/') {
      while (i < text.length && text[i] !== '\n') i++;
      out += '\n';
    } else if (c === '/' && text[i + 1] === '*') {
      const end = text.indexOf('*/', i + 2);
      i = end < 0 ? text.length : end + 1;
    } else out += c;
  }
  try {
    return JSON.parse(out.replace(/,(\s*[}\]])/g, '$1'));
  } catch {
    return undefined;
  }
}

function stringEnd(text: string, start: number): number {
  let i = start + 1;
  while (i < text.length && text[i] !== '"') i += text[i] === '\\' ? 2 : 1;
  return Math.min(i + 1, text.length);
}
