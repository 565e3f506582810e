// The sandbox runtime in one line, for the pull request's evidence and summary.md.
import { inlineCode, textCell } from '../markdown.js';

/** `runsc` (gVisor): why. The reason may quote what the image printed, so it is made inert. */
export function runtimeWords({ name, reason }: { name: string; reason: string }): string {
  const what = name === 'runsc' ? ' (gVisor)' : '';
  return `${inlineCode(name)}${what}: ${textCell(reason, 240)}`;
}
