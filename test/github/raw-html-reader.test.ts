// The raw HTML reader on parse5's tokenizer: pieces read as one stream, text kept verbatim, and
// what a browser does at the edges (lookahead at a piece's end, `</>`, the end of input, raw text).
import { describe, expect, it } from 'vitest';
import { createRawHtmlReader } from '../../src/github/raw-html-reader.js';
import { sanitizeIssueText } from '../../src/github/sanitize-issue-text.js';

describe('createRawHtmlReader', () => {
  it('carries an open comment, tag or hidden element over to the next piece', () => {
    const reader = createRawHtmlReader();
    expect(reader.read('a<!-- x', false)).toBe('a');
    expect(reader.hiding()).toBe(true);
    expect(reader.read('y -->b<div title="c', false)).toBe('b');
    expect(reader.hiding()).toBe(true);
    expect(reader.read('d">e<p hidden>', false)).toBe('e');
    expect(reader.hiding()).toBe(true);
    expect(reader.read('f</p>g', true)).toBe('g');
  });

  it('keeps text verbatim, character references undecoded, and shows an image as [image]', () => {
    const reader = createRawHtmlReader();
    expect(reader.read('<b>a &amp; b&lt;i&gt;</b> <img src=x alt="y"> 😀', false)).toBe(
      'a &amp; b&lt;i&gt; [image] 😀',
    );
    expect(reader.hiding()).toBe(false);
  });

  it('decides a declaration at the end of a piece, so the Markdown after it shows', () => {
    const reader = createRawHtmlReader();
    expect(reader.read('<!x>', false)).toBe('');
    expect(reader.hiding()).toBe(false);
    expect(sanitizeIssueText('a <!x> b')).toBe('a  b');
  });

  it('drops `</>` as a browser does, and shows `</` at the end of input', () => {
    expect(sanitizeIssueText('<div>ab</>cd</div>')).toBe('abcd');
    expect(sanitizeIssueText('<div></')).toBe('</');
  });

  it('reads attributes as a browser does: a quoted value holds markup, a word in it is no attribute', () => {
    expect(sanitizeIssueText('<span title="a hidden b">shown</span>')).toBe('shown');
    expect(sanitizeIssueText('a <span title="x>y" hidden>gone</span> b')).toBe('a  b');
    expect(sanitizeIssueText('<div class="a\n\nb\nstill in the tag')).toBe('');
  });

  it('reads script and style content as text up to their end tag', () => {
    expect(sanitizeIssueText('<script>\n<!--\n</script>\nshown')).toBe('shown');
    expect(sanitizeIssueText('<style>\n</div>gone\n</style>\nshown')).toBe('shown');
    expect(sanitizeIssueText('<div hidden><script></div>gone</script></div>shown')).toBe('shown');
  });
});
