// Text bound for a terminal that the model (or a repository, or a model server) chose: control
// characters would move the cursor, recolour, retitle the window or rewrite earlier lines (an
// escape sequence, or `\r[frognano] done: ...`), and bidirectional controls reorder what is shown.
// Each one is shown as a visible escape instead, so the line says what it really holds.

const UNSAFE =
  // eslint-disable-next-line no-control-regex -- these are the characters being made visible
  /[\u0000-\u001f\u007f-\u009f\u061c\u200e\u200f\u2028\u2029\u202a-\u202e\u2066-\u2069]/gu;

export function terminalText(text: string): string {
  return text.replace(UNSAFE, (c) => {
    if (c === '\n') return '\\n';
    if (c === '\r') return '\\r';
    if (c === '\t') return '\\t';
    const code = c.codePointAt(0) ?? 0;
    return code <= 0xff
      ? `\\x${code.toString(16).padStart(2, '0')}`
      : `\\u${code.toString(16).padStart(4, '0')}`;
  });
}
