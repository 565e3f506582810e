// Where a run's repository comes from: a clone URL (its credential taken out of it) or a local
// directory, and the name of its cached mirror.
import { createHash } from 'node:crypto';
import { readFile, stat } from 'node:fs/promises';
import path from 'node:path';
import { CloneError } from './clone-error.js';

export interface Source {
  /** What git is given (no userinfo). */
  url: string;
  /** Key for the mirror cache. */
  key: string;
  /** For messages. */
  display: string;
  embedded?: { username: string; password: string };
}

export async function resolveSource(repo: string): Promise<Source> {
  const trimmed = repo.trim();
  if (/^[a-z][a-z0-9+.-]*:\/\//i.test(trimmed)) {
    const url = new URL(trimmed);
    let embedded: Source['embedded'];
    if (url.username || url.password) {
      embedded = {
        username: decodeURIComponent(url.username),
        password: decodeURIComponent(url.password),
      };
      url.username = '';
      url.password = '';
    }
    const clean = url.toString();
    return {
      url: clean,
      key: clean.replace(/\/+$/, '').replace(/\.git$/, ''),
      display: clean,
      embedded,
    };
  }
  if (/^[\w.-]+@[\w.-]+:/.test(trimmed))
    return { url: trimmed, key: trimmed.replace(/\.git$/, ''), display: trimmed };
  const dir = path.resolve(trimmed);
  const info = await stat(dir).catch(() => undefined);
  if (!info?.isDirectory()) {
    throw new CloneError(`${repo} is neither a clone URL nor a local directory`);
  }
  return { url: dir, key: `local:${dir}`, display: dir };
}

export function mirrorName(source: Source): string {
  const base = (source.key.split(/[/:]/).filter(Boolean).pop() ?? 'repo')
    .replace(/[^A-Za-z0-9._-]/g, '_')
    .slice(0, 40);
  const hash = createHash('sha256').update(source.key).digest('hex').slice(0, 16);
  return `${base}-${hash}.git`;
}

export async function isMirror(dir: string): Promise<boolean> {
  try {
    return (await readFile(path.join(dir, 'config'), 'utf8')).includes('mirror = true');
  } catch {
    return false;
  }
}
