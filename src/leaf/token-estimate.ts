// Token estimate used when the server reports no usage (leaf-protocol.md §5):
// ceil(UTF-8 bytes of the compact JSON / 4).

export function tokensFromBytes(bytes: number): number {
  return Math.ceil(bytes / 4);
}

/**
 * Bytes of the compact JSON array of items whose own encodings are `itemBytes` long:
 * `[` + items joined by `,` + `]`. Lets the loop keep a running total instead of
 * re-serializing the whole history on every step.
 */
export function arrayJsonBytes(itemBytesTotal: number, count: number): number {
  return 2 + itemBytesTotal + Math.max(0, count - 1);
}
