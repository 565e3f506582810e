// Files of a commit's tree, read from git's objects (never from a checkout a run could have
// changed). git resolves symbolic links inside the tree (`cat-file --follow-symlinks`) and names
// the ones that lead out of it, which are refused: only what the repository itself holds is read.
import { spawn } from 'node:child_process';

export type TreeFile =
  | { path: string; kind: 'file'; size: number; bytes: Buffer }
  | { path: string; kind: 'missing' }
  | { path: string; kind: 'outside'; target: string }
  | { path: string; kind: 'other'; what: string };

interface GitRepo {
  dir: string;
  env: Record<string, string>;
}

/**
 * `paths` as they are at `commit`, each file's first `maxBytes` bytes (`size` is its whole
 * size). Paths must be validated repository paths (no newline).
 */
export async function readTreeFiles(
  repo: GitRepo,
  commit: string,
  paths: readonly string[],
  maxBytes: number,
): Promise<TreeFile[]> {
  if (paths.length === 0) return [];
  const input = paths.map((p) => `${commit}:${p}\n`).join('');
  const out = await git(repo, ['cat-file', '--batch-check', '--follow-symlinks'], input);
  const entries = parseBatchCheck(out, paths);
  const files: TreeFile[] = [];
  for (const entry of entries) {
    if ('sha' in entry) {
      const bytes = await git(repo, ['cat-file', 'blob', entry.sha], '', maxBytes);
      files.push({ path: entry.path, kind: 'file', size: entry.size, bytes });
    } else {
      files.push(entry);
    }
  }
  return files;
}

type Entry = Exclude<TreeFile, { kind: 'file' }> | { path: string; sha: string; size: number };

/** One answer per path, in order: `<sha> <type> <size>`, `<name> missing`, or a link's two lines. */
function parseBatchCheck(out: Buffer, paths: readonly string[]): Entry[] {
  const entries: Entry[] = [];
  let at = 0;
  const line = (): string => {
    const nl = out.indexOf(0x0a, at);
    const end = nl < 0 ? out.length : nl;
    const text = out.subarray(at, end).toString('utf8');
    at = end + 1;
    return text;
  };
  for (const path of paths) {
    const head = line();
    const link = /^(symlink|dangling|loop|notdir) (\d+)$/.exec(head);
    if (link) {
      const size = Number(link[2]);
      const rest = out.subarray(at, at + size).toString('utf8');
      at += size + 1;
      entries.push(
        link[1] === 'symlink'
          ? { path, kind: 'outside', target: rest }
          : { path, kind: 'other', what: LINK_WORDS[link[1] as keyof typeof LINK_WORDS] },
      );
      continue;
    }
    const object = /^([0-9a-f]{40,64}) (\w+) (\d+)$/.exec(head);
    if (!object) {
      entries.push({ path, kind: 'missing' });
    } else if (object[2] === 'blob') {
      entries.push({ path, sha: object[1]!, size: Number(object[3]) });
    } else {
      entries.push({
        path,
        kind: 'other',
        what: object[2] === 'tree' ? 'a directory' : 'a submodule',
      });
    }
  }
  return entries;
}

const LINK_WORDS = {
  dangling: 'a symbolic link to nothing',
  loop: 'a loop of symbolic links',
  notdir: 'under a path that is not a directory',
} as const;

/** Runs git with `input`; with `maxBytes`, stops it once that much output has come. */
function git(repo: GitRepo, args: string[], input: string, maxBytes?: number): Promise<Buffer> {
  return new Promise((resolve, reject) => {
    const child = spawn('git', args, { cwd: repo.dir, env: repo.env, stdio: 'pipe' });
    const out: Buffer[] = [];
    let length = 0;
    let enough = false;
    const err: Buffer[] = [];
    child.stdout.on('data', (b: Buffer) => {
      if (enough) return;
      out.push(b);
      length += b.length;
      if (maxBytes !== undefined && length >= maxBytes) {
        enough = true;
        child.kill();
      }
    });
    child.stderr.on('data', (b: Buffer) => err.push(b));
    child.on('error', reject);
    child.on('close', (code) => {
      const bytes = Buffer.concat(out);
      if (enough) resolve(bytes.subarray(0, maxBytes));
      else if (code === 0) resolve(bytes);
      else {
        const why = Buffer.concat(err).toString('utf8').trim().split('\n')[0] ?? '';
        reject(new Error(`git ${args[0]} ${args[1]} failed: ${why}`));
      }
    });
    child.stdin.on('error', () => undefined);
    child.stdin.end(input);
  });
}
