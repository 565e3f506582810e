// A text as it fits one line of an error, a log or a table cell (a proxy's multi-line HTML 502,
// an image build's output): whitespace runs collapsed to single spaces, ends trimmed, at most
// `max` characters (`…` marks the cut; a character is a code point, so no emoji is split).
export function oneLine(text: string, max = 500): string {
  const line = text.replace(/\s+/g, ' ').trim();
  // A code point is one or two UTF-16 units: a line this short has at most `max` of them.
  if (line.length <= max) return line;
  const chars = [...line];
  return chars.length > max ? `${chars.slice(0, max - 1).join('')}…` : line;
}
