// Checks on the patch text that crosses back from the sandbox. The text was produced by
// git inside a container the agent controlled (its .git config included), so it is read
// the way `git apply -p1` would read it, not trusted to be well-formed.
import picomatch from 'picomatch';
import type { PolicyViolation } from './run-types.js';
import { headerPaths, stripComponent, unquote } from './patch-names.js';

export const DEFAULT_MAX_PATCH_BYTES = 1024 * 1024;

export interface PatchPolicy {
  /** Globs (picomatch, dotfiles included); a glob without `/` matches a name at any depth. */
  blockedPaths: readonly string[];
  maxPatchBytes?: number;
}

/** Every path the patch touches, in order of first appearance (both sides of renames and copies). */
export function patchFiles(patch: string): string[] {
  const seen = new Set<string>();
  for (const block of splitBlocks(patch)) for (const p of block) seen.add(p);
  return [...seen];
}

export function checkPatch(patch: string, policy: PatchPolicy): PolicyViolation[] {
  const violations: PolicyViolation[] = [];
  const maxBytes = policy.maxPatchBytes ?? DEFAULT_MAX_PATCH_BYTES;
  const size = Buffer.byteLength(patch, 'utf8');
  if (size > maxBytes) {
    violations.push({
      rule: 'patch_size',
      detail: `the patch is ${size} bytes, more than the ${maxBytes} allowed`,
    });
  }
  const matchers = compileAll(policy.blockedPaths);
  for (const file of patchFiles(patch)) {
    const v = pathViolation(file, matchers);
    if (v) violations.push(v);
  }
  for (const file of gitlinks(patch)) violations.push(gitlinkViolation(file));
  for (const link of patchSymlinks(patch)) {
    const v = symlinkViolation(link.path, link.target);
    if (v) violations.push(v);
  }
  if (!violations.some((v) => v.rule === 'git_dir')) {
    for (const line of patch.split('\n')) {
      // Belt and braces: a header naming `.git` is refused even if it names no usable file.
      if (line.startsWith('diff --git ') && /(^|[\s/"])\.git([\s/"]|$)/i.test(line.slice(11))) {
        violations.push({
          rule: 'git_dir',
          detail: `the patch header "${line.slice(0, 120)}" names a .git path`,
        });
      }
    }
  }
  return violations;
}

/**
 * The same checks on what git itself changed when it applied the patch to a clean clone
 * (`Workspace.changesFromPatch`): whatever the text parser above misread, git's reading is
 * the one that gets published.
 */
export function checkAppliedChanges(
  changes: readonly { path: string; newMode: string; linkTarget?: string }[],
  policy: PatchPolicy,
): PolicyViolation[] {
  const matchers = compileAll(policy.blockedPaths);
  const violations: PolicyViolation[] = [];
  for (const change of changes) {
    const v = pathViolation(change.path, matchers);
    if (v) violations.push(v);
    if (change.newMode === '160000') violations.push(gitlinkViolation(change.path));
    if (change.newMode === '120000') {
      const link = symlinkViolation(change.path, change.linkTarget ?? '');
      if (link) violations.push(link);
    }
  }
  return violations;
}

/**
 * A link whose target leaves the repository (`/etc`, `~/.ssh/id_rsa`, `../../../etc/passwd`)
 * or points into `.git`: whatever later reads the checkout through it (a reviewer's editor, a
 * CI job, a tool that follows links) reads the host's files instead of the change.
 */
export function symlinkViolation(link: string, target: string): PolicyViolation | undefined {
  const why = linkEscape(link, target);
  return why
    ? { rule: 'symlink', detail: `${link} is a link to ${JSON.stringify(target)}, ${why}` }
    : undefined;
}

function linkEscape(link: string, target: string): string | undefined {
  if (target === '' || target.includes('\0')) return 'which is not a usable link target';
  // `~` is no path to the kernel, but it is to every shell and many tools that show links.
  if (/^(?:[/\\~]|[A-Za-z]:)/.test(target)) return 'which is outside the repository';
  const parts = link.split('/').slice(0, -1);
  for (const seg of target.split(/[/\\]/)) {
    if (seg === '' || seg === '.') continue;
    if (seg === '..') {
      if (parts.length === 0) return 'which is outside the repository';
      parts.pop();
    } else parts.push(seg);
  }
  if (touchesGitDir(parts.join('/'))) return 'which is inside .git';
  return undefined;
}

/**
 * The links a patch text adds or changes, with their targets: blocks whose new mode is
 * 120000, their target being the added line of the hunk. (git's own reading, in
 * `checkAppliedChanges`, is the one that counts; this catches what it cannot be asked about.)
 */
export function patchSymlinks(patch: string): { path: string; target: string }[] {
  const links: { path: string; target: string }[] = [];
  let current: { path: string; link: boolean; target: string[] } | undefined;
  const flush = () => {
    if (current?.link) links.push({ path: current.path, target: current.target.join('\n') });
    current = undefined;
  };
  let inHunk = false;
  for (const line of patch.split('\n')) {
    if (line.startsWith('diff --git ')) {
      flush();
      const rest = line.slice('diff --git '.length);
      current = { path: headerPaths(rest)?.at(-1) ?? rest, link: false, target: [] };
      inHunk = false;
      continue;
    }
    if (!current) continue;
    if (!inHunk) {
      if (
        /^(?:new file mode|new mode) 120000\s*$/.test(line) ||
        /^index [0-9a-f]+\.\.[0-9a-f]+ 120000\s*$/.test(line)
      )
        current.link = true;
      else if (/^\+\+\+ /.test(line) && !line.startsWith('+++ /dev/null'))
        current.path = stripComponent(unquote(line.slice(4).replace(/\t.*$/, '')));
      else if (line.startsWith('@@')) inHunk = true;
    } else if (line.startsWith('+')) current.target.push(line.slice(1));
  }
  flush();
  return links;
}

type Matcher = { glob: string; match: (p: string) => boolean };

function compileAll(globs: readonly string[]): Matcher[] {
  return globs.map((glob) => ({ glob, match: compile(glob) }));
}

function pathViolation(file: string, matchers: readonly Matcher[]): PolicyViolation | undefined {
  if (touchesGitDir(file)) return { rule: 'git_dir', detail: `${file} is inside a .git directory` };
  if (escapesRepository(file))
    return { rule: 'blocked_path', detail: `${file} is outside the repository` };
  const hit = matchers.find(({ match }) => candidates(file).some((c) => match(c)));
  return hit
    ? { rule: 'blocked_path', detail: `${file} matches blocked path ${hit.glob}` }
    : undefined;
}

// A submodule commit (and, with .gitmodules, its URL) is nothing a sandbox without network can
// have produced; in a CI that checks out submodules it fetches code from elsewhere.
function gitlinkViolation(file: string): PolicyViolation {
  return {
    rule: 'blocked_path',
    detail: `${file} would become a submodule (gitlink), which the bot may not add or change`,
  };
}

function compile(glob: string): (p: string) => boolean {
  const pattern = glob.replace(/^\.\//, '').replace(/\/$/, '/**');
  return picomatch(pattern, { dot: true, nocase: true, basename: !pattern.includes('/') });
}

/** The path and each directory above it, so `secrets` also blocks `secrets/key.pem`. */
function candidates(file: string): string[] {
  const parts = file.split('/');
  return parts.map((_, i) => parts.slice(0, i + 1).join('/')).reverse();
}

function touchesGitDir(file: string): boolean {
  // Case-insensitive file systems, and Windows trimming trailing dots and spaces, make
  // these `.git` too when the patch is applied there.
  return file
    .split(/[/\\]/)
    .some(
      (seg) => seg.replace(/[. ]+$/, '').toLowerCase() === '.git' || seg.toLowerCase() === '.git',
    );
}

function escapesRepository(file: string): boolean {
  return file.startsWith('/') || file.split(/[/\\]/).some((seg) => seg === '..');
}

/** Paths the patch turns into (or keeps as) gitlinks: mode 160000 on the new side. */
function gitlinks(patch: string): string[] {
  const out = new Set<string>();
  let current: string | undefined;
  for (const line of patch.split('\n')) {
    if (line.startsWith('diff --git ')) {
      const rest = line.slice('diff --git '.length);
      current = headerPaths(rest)?.at(-1) ?? rest;
      continue;
    }
    if (
      /^(?:new file mode|new mode) 160000\s*$/.test(line) ||
      /^index [0-9a-f]+\.\.[0-9a-f]+ 160000\s*$/.test(line)
    ) {
      out.add(current ?? '(unnamed)');
    }
  }
  return [...out];
}

// A line of a binary hunk: `literal N` / `delta N`, or base85 data (a length letter, then
// base85 characters only). Anything else ends the binary hunk, as it does for `git apply`,
// which then looks for the next header, a bare `---`/`+++` pair included.
const BINARY_HUNK_LINE = /^(?:(?:literal|delta) \d+|[A-Za-z][0-9A-Za-z!#$%&()*+;<=>?@^_`{|}~-]*|)$/;

/** Paths per `diff --git` block (and per bare `---`/`+++` pair outside any block). */
function splitBlocks(patch: string): string[][] {
  const blocks: string[][] = [];
  let current: string[] | undefined;
  let pendingHeader: string | undefined;
  const add = (p: string | undefined) => {
    if (p === undefined || p === '' || p === '/dev/null') return;
    if (!current) blocks.push((current = []));
    if (!current.includes(p)) current.push(p);
  };
  const closeBlock = () => {
    // An asymmetric unquoted header names its files only through rename/---/+++ lines;
    // if none came, fall back to a plausible split so nothing goes unchecked.
    if (pendingHeader !== undefined && current && current.length === 0) {
      const cut = pendingHeader.indexOf(' ', pendingHeader.indexOf('/'));
      const parts =
        cut > 0 ? [pendingHeader.slice(0, cut), pendingHeader.slice(cut + 1)] : [pendingHeader];
      for (const p of parts) add(stripComponent(p));
    }
    pendingHeader = undefined;
  };
  let inBinary = false;
  let oldLeft = 0;
  let newLeft = 0;
  for (const line of patch.split('\n')) {
    if (oldLeft > 0 || newLeft > 0) {
      // Inside a hunk: `--- x` here is a removed line `-- x`, not a file name.
      const tag = line[0];
      if (tag === '-' || tag === ' ' || line === '') oldLeft--;
      if (tag === '+' || tag === ' ' || line === '') newLeft--;
      continue;
    }
    if (line.startsWith('diff --git ')) {
      closeBlock();
      blocks.push((current = []));
      inBinary = false;
      const rest = line.slice('diff --git '.length);
      const names = headerPaths(rest);
      if (names) for (const p of names) add(p);
      else pendingHeader = rest;
      continue;
    }
    if (inBinary && BINARY_HUNK_LINE.test(line)) continue;
    inBinary = false;
    if (line === 'GIT binary patch') {
      inBinary = true;
      continue;
    }
    let m: RegExpExecArray | null;
    if ((m = /^@@ -\d+(?:,(\d+))? \+\d+(?:,(\d+))? @@/.exec(line))) {
      oldLeft = m[1] === undefined ? 1 : Number(m[1]);
      newLeft = m[2] === undefined ? 1 : Number(m[2]);
    } else if ((m = /^(?:---|\+\+\+) (.*)$/.exec(line))) {
      const name = unquote(m[1]!.replace(/\t.*$/, ''));
      if (name !== '/dev/null') add(stripComponent(name));
    } else if ((m = /^(?:rename|copy) (?:from|to) (.*)$/.exec(line))) {
      add(unquote(m[1]!));
    }
  }
  closeBlock();
  return blocks;
}
