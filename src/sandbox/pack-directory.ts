// A tar stream of a host directory tree for the Engine API's putArchive: how a repository
// enters a sandbox (never a bind mount). Symlinks stay symlinks and are never followed, so
// a link in the repository cannot pull host files in; every entry is owned by the sandbox
// user; set-id bits are stripped. Sockets, FIFOs and devices are skipped.
import { createReadStream } from 'node:fs';
import { lstat, readdir, readlink } from 'node:fs/promises';
import { join } from 'node:path';
import { pipeline } from 'node:stream/promises';
import tar from 'tar-stream';

export interface PackOwner {
  uid: number;
  gid: number;
  uname: string;
  gname: string;
}

export interface PackedTree {
  /** The tar stream; consume it (e.g. hand it to putArchive) while `done` settles. */
  stream: tar.Pack;
  /** Resolves with the number of entries once every entry is written; rejects on a host error. */
  done: Promise<number>;
}

/** Packs the contents of `hostDir` (not the directory itself) with relative names. */
export function packDirectory(hostDir: string, owner: PackOwner): PackedTree {
  const pack = tar.pack();
  const done = (async () => {
    let count = 0;
    const walk = async (absDir: string, rel: string): Promise<void> => {
      const names = (await readdir(absDir)).sort();
      for (const name of names) {
        const abs = join(absDir, name);
        const relName = rel === '' ? name : `${rel}/${name}`;
        const st = await lstat(abs);
        const base = {
          uid: owner.uid,
          gid: owner.gid,
          uname: owner.uname,
          gname: owner.gname,
          mtime: st.mtime,
          mode: st.mode & 0o1777,
        };
        if (st.isDirectory()) {
          await writeEntry(pack, { ...base, name: `${relName}/`, type: 'directory' });
          count += 1;
          await walk(abs, relName);
        } else if (st.isSymbolicLink()) {
          const linkname = await readlink(abs);
          await writeEntry(pack, {
            ...base,
            name: relName,
            type: 'symlink',
            linkname,
            mode: 0o777,
          });
          count += 1;
        } else if (st.isFile()) {
          const entry = pack.entry({ ...base, name: relName, type: 'file', size: st.size });
          await pipeline(createReadStream(abs), entry);
          count += 1;
        }
      }
    };
    try {
      await walk(hostDir, '');
      pack.finalize();
      return count;
    } catch (error) {
      pack.destroy(error instanceof Error ? error : new Error(String(error)));
      throw error;
    }
  })();
  // The caller observes failures through `done`; the stream error is the same failure.
  pack.on('error', () => undefined);
  return { stream: pack, done };
}

function writeEntry(pack: tar.Pack, header: Parameters<tar.Pack['entry']>[0]): Promise<void> {
  return new Promise((resolve, reject) => {
    pack.entry(header, (error?: Error | null) => (error ? reject(error) : resolve()));
  });
}
