// Every relative link in README.md and docs/ leads somewhere: the file exists, and an anchor
// (`#section`, `docs/usage.md#section`) names a heading of that file as GitHub slugs it.
import { existsSync, readdirSync, readFileSync, statSync } from 'node:fs';
import { dirname, join, relative, resolve } from 'node:path';
import GithubSlugger from 'github-slugger';
import type { Heading, Nodes } from 'mdast';
import { fromMarkdown } from 'mdast-util-from-markdown';
import { gfmFromMarkdown } from 'mdast-util-gfm';
import { toString } from 'mdast-util-to-string';
import { gfm } from 'micromark-extension-gfm';
import { describe, expect, it } from 'vitest';

const ROOT = resolve(import.meta.dirname, '../..');

function markdownFiles(): string[] {
  const files = ['README.md'];
  const walk = (dir: string): void => {
    for (const name of readdirSync(join(ROOT, dir))) {
      const path = join(dir, name);
      if (statSync(join(ROOT, path)).isDirectory()) walk(path);
      else if (name.endsWith('.md')) files.push(path);
    }
  };
  walk('docs');
  return files;
}

function parse(file: string): Nodes {
  return fromMarkdown(readFileSync(join(ROOT, file), 'utf8'), {
    extensions: [gfm()],
    mdastExtensions: [gfmFromMarkdown()],
  });
}

function visit(node: Nodes, fn: (node: Nodes) => void): void {
  fn(node);
  if ('children' in node) for (const child of node.children) visit(child as Nodes, fn);
}

const anchorCache = new Map<string, Set<string>>();
/** The anchors GitHub gives a file's headings (and any `<a id>`/`<a name>` it holds). */
function anchorsOf(file: string): Set<string> {
  const cached = anchorCache.get(file);
  if (cached) return cached;
  const slugger = new GithubSlugger();
  const anchors = new Set<string>();
  visit(parse(file), (node) => {
    if (node.type === 'heading') anchors.add(slugger.slug(toString(node as Heading)));
    if (node.type === 'html')
      for (const m of node.value.matchAll(/<a\s+(?:id|name)="([^"]+)"/g)) anchors.add(m[1]!);
  });
  anchorCache.set(file, anchors);
  return anchors;
}

/** Problems with one link of `file`, as `file: link: why`. */
export function linkProblem(file: string, url: string): string | undefined {
  if (/^[a-z][a-z0-9+.-]*:/i.test(url) || url.startsWith('//')) return undefined; // not relative
  const [pathPart, anchor] = url.split('#', 2) as [string, string | undefined];
  const target =
    pathPart === '' ? file : relative(ROOT, resolve(ROOT, dirname(file), decodeURI(pathPart)));
  if (target.startsWith('..')) return `${file}: ${url}: leads out of the repository`;
  if (!existsSync(join(ROOT, target))) return `${file}: ${url}: no such file`;
  if (anchor === undefined || anchor === '') return undefined;
  if (!target.endsWith('.md')) return undefined; // GitHub's line anchors (#L10) in code files
  if (!anchorsOf(target).has(decodeURIComponent(anchor)))
    return `${file}: ${url}: no heading "#${anchor}" in ${target}`;
  return undefined;
}

describe('links in README.md and docs/', () => {
  it('all lead to a file that exists and a heading it has', () => {
    const problems: string[] = [];
    for (const file of markdownFiles()) {
      visit(parse(file), (node) => {
        if (node.type === 'link' || node.type === 'definition') {
          const problem = linkProblem(file, node.url);
          if (problem) problems.push(problem);
        }
      });
    }
    expect(problems).toEqual([]);
  });

  it('notices a broken file link and a missing anchor', () => {
    expect(linkProblem('README.md', 'docs/no-such-file.md')).toMatch(/no such file/);
    expect(linkProblem('README.md', '#no-such-heading-anywhere')).toMatch(/no heading/);
    expect(linkProblem('README.md', 'https://example.com/x#y')).toBeUndefined();
  });
});
