// The local sandbox's file operations on the host, as Python performs them: reading a whole
// file safely (a FIFO, a device), pathlib's mkdir, symlinks for realpath, and removing a tree a
// command made read-only.
import { spawnSync } from 'node:child_process';
import { constants as fsConstants } from 'node:fs';
import { lstat, mkdir, open, readlink, rm, stat } from 'node:fs/promises';
import { pathlibParent, type RealpathFileSystem } from '../leaf/python-path.js';
import { fsPath } from '../leaf/python-text.js';
import { PythonError } from '../leaf/sandbox.js';
import { errorCode, pythonOSError } from './python-os-error.js';

// Reading a device such as /dev/zero would grow without end (Python dies of MemoryError).
const MAX_SPECIAL_FILE_BYTES = 64 * 1024 * 1024;

/**
 * open() + read() as Python's read_text does them, but safe for the host: a directory is
 * IsADirectoryError (Python checks after open), a FIFO without a writer reads as empty
 * instead of blocking a thread forever, and an endless device stops with MemoryError.
 */
export async function readWhole(target: string, shownPath: string): Promise<Buffer> {
  const handle = await open(fsPath(target), fsConstants.O_RDONLY | fsConstants.O_NONBLOCK);
  try {
    const info = await handle.stat();
    if (info.isDirectory()) {
      throw pythonOSError(Object.assign(new Error('EISDIR'), { code: 'EISDIR' }), shownPath);
    }
    if (info.isFile()) return await handle.readFile();
    const chunks: Buffer[] = [];
    let total = 0;
    for (;;) {
      const chunk = Buffer.alloc(64 * 1024);
      let bytesRead: number;
      try {
        ({ bytesRead } = await handle.read(chunk, 0, chunk.length, null));
      } catch (error) {
        if (errorCode(error) === 'EAGAIN') break;
        throw error;
      }
      if (bytesRead === 0) break;
      chunks.push(chunk.subarray(0, bytesRead));
      total += bytesRead;
      if (total > MAX_SPECIAL_FILE_BYTES) throw new PythonError('MemoryError', '');
    }
    return Buffer.concat(chunks, total);
  } finally {
    await handle.close();
  }
}

export function refuseNul(path: string, message: string): void {
  if (path.includes('\0')) throw new PythonError('ValueError', message);
}

export const realpathFileSystem: RealpathFileSystem = {
  isSymlink: (path) =>
    lstat(fsPath(path)).then(
      (info) => info.isSymbolicLink(),
      () => undefined,
    ),
  readlink: (path) => readlink(fsPath(path)),
};

/** pathlib's `mkdir(parents=True, exist_ok=True)`, with its errors and their paths. */
export async function pythonMkdirParents(path: string): Promise<void> {
  await pythonMkdir(path, true);
}

async function pythonMkdir(path: string, parents: boolean): Promise<void> {
  try {
    await mkdir(fsPath(path), 0o777);
  } catch (error) {
    if (errorCode(error) === 'ENOENT') {
      const parent = pathlibParent(path);
      if (!parents || parent === path) throw pythonOSError(error, path);
      await pythonMkdir(parent, true);
      await pythonMkdir(path, false);
      return;
    }
    const isDir = await stat(fsPath(path)).then(
      (info) => info.isDirectory(),
      () => false,
    );
    // exist_ok=True: any failure on an existing directory is fine, as in pathlib.
    if (!isDir) throw pythonOSError(error, path);
  }
}

export async function removeTree(path: string): Promise<void> {
  try {
    await rm(path, { recursive: true, force: true });
  } catch {
    // A command may have made directories read-only; give the owner write access back.
    spawnSync('chmod', ['-R', 'u+rwX', path], { stdio: 'ignore' });
    await rm(path, { recursive: true, force: true });
  }
}
