// One commit of a patch on a given commit, in an empty work directory, as the bot: fetch that
// commit alone, check it out, apply the patch to the index, commit with the message given. The
// first publish starts from the run's base commit, a revision from the pull request's head.
import { writeFile } from 'node:fs/promises';
import { join } from 'node:path';

type Git = (args: string[], what: string) => Promise<string>;

export async function commitPatch(c: {
  /** A local git command; `remote`, one that talks to the server (retried when transient). */
  run: Git;
  remote: Git;
  dir: string;
  gitUrl: string;
  from: { commit: string; what: string };
  patch: string;
  message: string;
  bot: { name: string; email: string };
}): Promise<string> {
  await c.run(['init', '-q'], 'git init');
  await c.remote(
    ['fetch', '-q', '--no-tags', '--depth=1', c.gitUrl, c.from.commit],
    `fetching ${c.from.what}`,
  );
  await c.run(['checkout', '-q', '--detach', c.from.commit], `checking out ${c.from.what}`);
  const patchFile = join(c.dir, 'change.patch');
  // Byte for byte what the runner checked (it adds a final newline when missing).
  await writeFile(patchFile, c.patch.endsWith('\n') ? c.patch : `${c.patch}\n`);
  await c.run(['apply', '--index', '--whitespace=nowarn', patchFile], 'applying the patch');
  const messageFile = join(c.dir, 'message.txt');
  await writeFile(messageFile, c.message);
  const identity = ['-c', `user.name=${c.bot.name}`, '-c', `user.email=${c.bot.email}`];
  await c.run(
    [...identity, 'commit', '-q', '--no-verify', '--no-gpg-sign', '-F', messageFile],
    'committing',
  );
  return (await c.run(['rev-parse', 'HEAD'], 'reading the commit')).trim();
}
