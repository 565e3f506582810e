import { SANDBOX_GID, SANDBOX_UID } from './docker-sandbox-options.js';

/**
 * A tar of directories owned by the sandbox user, extracted at `/`. Missing parents are
 * made by the engine and stay root's.
 */
export function packDirectories(dirs: string[]): Buffer {
  const blocks = dirs.map((dir) => {
    const name = `${dir.split('/').filter(Boolean).join('/')}/`;
    if (Buffer.byteLength(name) > 100)
      throw new Error(`directory path too long for the sandbox skeleton: ${dir}`);
    return tarDirectoryHeader(name, SANDBOX_UID, SANDBOX_GID, 0o755);
  });
  blocks.push(Buffer.alloc(1024));
  return Buffer.concat(blocks);
}

/** One ustar header for a directory (small and fixed, so no stream is needed). */
function tarDirectoryHeader(name: string, uid: number, gid: number, mode: number): Buffer {
  const header = Buffer.alloc(512);
  const octal = (value: number, length: number) =>
    value.toString(8).padStart(length - 1, '0') + '\0';
  header.write(name, 0, 100, 'utf8');
  header.write(octal(mode, 8), 100, 'ascii');
  header.write(octal(uid, 8), 108, 'ascii');
  header.write(octal(gid, 8), 116, 'ascii');
  header.write(octal(0, 12), 124, 'ascii');
  header.write(octal(Math.floor(Date.now() / 1000), 12), 136, 'ascii');
  header.write('        ', 148, 'ascii');
  header.write('5', 156, 'ascii');
  header.write('ustar\0', 257, 'ascii');
  header.write('00', 263, 'ascii');
  header.write('frognano', 265, 'ascii');
  header.write('frognano', 297, 'ascii');
  let sum = 0;
  for (const byte of header) sum += byte;
  header.write(sum.toString(8).padStart(6, '0') + '\0 ', 148, 'ascii');
  return header;
}
