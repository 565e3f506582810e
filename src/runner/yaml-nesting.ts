// How deeply a YAML text nests, measured on the lexer's tokens (a flat, bounded pass) before the
// parser composes it: the composer recurses once per level, so a few thousand `[` or indented
// `- ` lines overflow its stack after a long, useless climb.
import { CST, Lexer } from 'yaml';

export interface NestingExcess {
  /** 0-based offset of the token that went one level too deep. */
  offset: number;
}

/** The first place where `text` nests deeper than `max` levels, or undefined. */
export function nestingExcess(text: string, max: number): NestingExcess | undefined {
  let offset = 0;
  let flow = 0;
  const indents: number[] = [];
  let lineStart = true;
  let indent = 0;
  let itemsOnLine = 0;
  let scalarSource = false;
  for (const token of new Lexer().lex(text)) {
    const type = CST.tokenType(token);
    const at = offset;
    // The lexer's own markers (document mode, scalar, flow error end) are not in the text.
    if (type !== 'doc-mode' && type !== 'scalar' && type !== 'flow-error-end') {
      offset += token.length;
    }
    // The token after a scalar marker is the scalar's source (block scalars included): text.
    if (scalarSource) {
      scalarSource = false;
      continue;
    }
    if (type === 'newline') {
      if (flow === 0) {
        lineStart = true;
        indent = 0;
        itemsOnLine = 0;
      }
      continue;
    }
    if (type === 'space') {
      if (lineStart && flow === 0) indent = token.length;
      continue;
    }
    if (
      type === 'comment' ||
      type === 'doc-mode' ||
      type === 'byte-order-mark' ||
      type === 'flow-error-end' ||
      type === 'doc-start' ||
      type === 'doc-end'
    ) {
      continue;
    }
    if (type === 'scalar') scalarSource = true;
    if (lineStart && flow === 0) {
      while (indents.length > 0 && indents[indents.length - 1]! > indent) indents.pop();
      if (indents[indents.length - 1] !== indent) indents.push(indent);
      lineStart = false;
    }
    if (type === 'seq-item-ind' || type === 'explicit-key-ind') itemsOnLine += 1;
    if (type === 'flow-seq-start' || type === 'flow-map-start') flow += 1;
    if (type === 'flow-seq-end' || type === 'flow-map-end') flow = Math.max(0, flow - 1);
    // `- - x` nests a sequence in a sequence on one line.
    if (indents.length + Math.max(0, itemsOnLine - 1) + flow > max) return { offset: at };
  }
  return undefined;
}
