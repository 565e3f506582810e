// A text that may hold a server's whole error page (a proxy's multi-line HTML 502) as it fits an
// error line: whitespace collapsed to single spaces, at most `max` characters.
export function oneLine(text: string, max = 500): string {
  const line = text.replace(/\s+/g, ' ').trim();
  return line.length > max ? `${line.slice(0, max - 1)}…` : line;
}
