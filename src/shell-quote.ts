// One word for `sh`, whatever it holds: single quotes, each ' closed, escaped and reopened.
export function shellQuote(value: string): string {
  return `'${value.replace(/'/g, `'\\''`)}'`;
}
