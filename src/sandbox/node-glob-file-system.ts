// The file system Python's glob walks, on the host (the local sandbox's Glob).
import { lstat, opendir, stat } from 'node:fs/promises';
import { join } from 'node:path';
import type { GlobFileSystem } from '../leaf/python-glob.js';
import { refuseNul } from './local-files.js';

/**
 * The file system Python's glob sees, on the host: directory order as the OS lists it
 * (libuv's readdir sorts, opendir does not), symlinks followed for directories.
 */
export function nodeGlobFileSystem(
  absolute: (path: string) => string = (path) => path,
): GlobFileSystem {
  return {
    listdir: async (path, dirsOnly) => {
      // os.scandir raises ValueError here (glob does not catch it); lexists/isdir say False.
      refuseNul(path, 'scandir: embedded null character in path');
      const dir = absolute(path);
      const names: string[] = [];
      try {
        for await (const entry of await opendir(dir)) {
          if (!dirsOnly) {
            names.push(entry.name);
            continue;
          }
          const mayBeDir =
            entry.isDirectory() ||
            entry.isSymbolicLink() ||
            !(
              entry.isFile() ||
              entry.isFIFO() ||
              entry.isSocket() ||
              entry.isBlockDevice() ||
              entry.isCharacterDevice()
            );
          const isDir =
            mayBeDir &&
            (await stat(join(dir, entry.name)).then(
              (info) => info.isDirectory(),
              () => false,
            ));
          if (isDir) names.push(entry.name);
        }
      } catch {
        // Python's _iterdir swallows OSError, keeping the names listed so far.
      }
      return names;
    },
    lexists: (path) =>
      path.includes('\0')
        ? Promise.resolve(false)
        : lstat(absolute(path)).then(
            () => true,
            () => false,
          ),
    isdir: (path) =>
      path.includes('\0')
        ? Promise.resolve(false)
        : stat(absolute(path)).then(
            (info) => info.isDirectory(),
            () => false,
          ),
  };
}
