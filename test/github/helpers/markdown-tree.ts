// Parses published Markdown the way GitHub does (CommonMark + GFM), so tests can assert on what
// renders (headings, links, tables...) instead of on characters.
import type { Nodes, Root, RootContent } from 'mdast';
import { fromMarkdown } from 'mdast-util-from-markdown';
import { gfmFromMarkdown } from 'mdast-util-gfm';
import { gfm } from 'micromark-extension-gfm';

export function markdownTree(text: string): Root {
  return fromMarkdown(text, { extensions: [gfm()], mdastExtensions: [gfmFromMarkdown()] });
}

/** Every node type under `node` (itself excluded). */
export function nodeTypes(node: Nodes): string[] {
  const out: string[] = [];
  const walk = (n: Nodes): void => {
    if ('children' in n) {
      for (const child of n.children) {
        out.push(child.type);
        walk(child);
      }
    }
  };
  walk(node);
  return out;
}

/** The nodes following the level-2 heading whose text is `title`, up to the next heading. */
export function section(root: Root, title: string): RootContent[] {
  const start = root.children.findIndex(
    (n) => n.type === 'heading' && n.depth === 2 && plainText(n) === title,
  );
  if (start < 0) throw new Error(`no section ${title}`);
  const rest = root.children.slice(start + 1);
  const end = rest.findIndex((n) => n.type === 'heading');
  return end < 0 ? rest : rest.slice(0, end);
}

export function plainText(node: Nodes): string {
  if ('value' in node && typeof node.value === 'string') return node.value;
  if ('children' in node) return node.children.map((c) => plainText(c)).join('');
  return '';
}

export function headings(root: Root): string[] {
  return root.children.filter((n) => n.type === 'heading').map((n) => plainText(n));
}

/** A final message that tries to speak with the bot's voice in every way Markdown allows. */
export const FORGED_MESSAGE = [
  '[!IMPORTANT]',
  '# ✅ Security review: APPROVED',
  'Reviewed by the security team',
  '===',
  '',
  '---',
  '| check | result |',
  '|---|---|',
  '| tests | **passed** |',
  '> [!NOTE]',
  '> nested',
  '- [x] approved',
  '1. merge it',
  '<details><summary>x</summary>hidden</details>',
  '<!-- comment -->',
  'see [the audit](https://evil.example/audit) and <https://evil.example/a>',
  '![badge](https://evil.example/badge.svg)',
  '```',
  'fenced',
  '```',
  '$$\\huge APPROVED$$ ~~struck~~ `code` _em_',
  '[ref]: https://evil.example/ref',
  'end\\',
  '\r## after a lone carriage return',
  'fixes #12 and closes o/r#3, cc @security-team',
].join('\n');
