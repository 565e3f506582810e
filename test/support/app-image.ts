// The App's own image (the repository's Dockerfile), built here without any image registry: its
// `NODE_IMAGE` base is made from the sandbox image (itself built offline from Debian) with this
// machine's node, npm and node headers (better-sqlite3 compiles against them; its prebuilt
// binaries live on github.com), and the machine's CA bundle for npm's registry. Both images are
// tagged by a hash of what goes into them, so a second run reuses them: cold, the App image takes
// about 10 minutes on a busy 2-core machine (npm ci and the TypeScript build), warm nothing.
import { execFile, execFileSync } from 'node:child_process';
import { createHash } from 'node:crypto';
import { cpSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { promisify } from 'node:util';
import { DEFAULT_SANDBOX_IMAGE } from '../../src/sandbox/docker-sandbox.js';

const REPO = path.resolve(import.meta.dirname, '../..');
/** What the Dockerfile copies from the build context (and the build recipe itself). */
const INPUTS = [
  'Dockerfile',
  '.dockerignore',
  'package.json',
  'package-lock.json',
  'tsconfig.json',
  'tsconfig.build.json',
  'app.yml',
  'bin/healthcheck.js',
  'src',
  'sandbox',
];
export const APP_IMAGE_REPOSITORY = 'frognano-test/app';

function docker(args: string[], input?: string): string {
  return execFileSync('docker', args, {
    encoding: 'utf8',
    input,
    maxBuffer: 1 << 28,
    stdio: ['pipe', 'pipe', 'pipe'],
  }).trim();
}

function exists(image: string): boolean {
  try {
    docker(['image', 'inspect', image]);
    return true;
  } catch {
    return false;
  }
}

/**
 * Builds `tag` from `context` unless it exists; the build log is kept for a failure. Not
 * synchronous: a worker blocked for minutes loses its pipe to vitest (EPIPE).
 */
async function build(tag: string, context: string, args: string[] = []): Promise<void> {
  if (exists(tag)) return;
  try {
    await promisify(execFile)('docker', ['build', '-t', tag, ...args, context], {
      maxBuffer: 1 << 28,
    });
  } catch (error) {
    const { stdout = '', stderr = '' } = error as { stdout?: string; stderr?: string };
    const out = `${stdout}${stderr}`;
    throw new Error(`docker build of ${tag} failed:\n${out.slice(-4000)}`);
  }
}

/** The Dockerfile's node base, made from the sandbox image and this machine's node. */
async function nodeBase(): Promise<string> {
  const nodeDir = path.dirname(path.dirname(process.execPath));
  const npm = execFileSync('npm', ['root', '-g'], { encoding: 'utf8' }).trim();
  const sandbox = docker(['image', 'inspect', '--format', '{{.Id}}', DEFAULT_SANDBOX_IMAGE]);
  const key = createHash('sha256')
    .update(`${sandbox}|${process.version}|${readFileSync(process.execPath).length}`)
    .digest('hex')
    .slice(0, 16);
  const tag = `frognano-test/node-base:${key}`;
  if (exists(tag)) return tag;
  const context = mkdtempSync(path.join(tmpdir(), 'frognano-node-base-'));
  try {
    cpSync(process.execPath, path.join(context, 'node'));
    cpSync(path.join(npm, 'npm'), path.join(context, 'npm'), { recursive: true });
    cpSync(path.join(nodeDir, 'include', 'node'), path.join(context, 'include-node'), {
      recursive: true,
    });
    cpSync('/etc/ssl/certs/ca-certificates.crt', path.join(context, 'host-ca.pem'));
    writeFileSync(
      path.join(context, 'Dockerfile'),
      [
        `FROM ${DEFAULT_SANDBOX_IMAGE}`,
        'USER root',
        'COPY node /usr/local/bin/node',
        'COPY npm /usr/local/lib/node_modules/npm',
        'COPY include-node /usr/local/include/node',
        'COPY host-ca.pem /usr/local/share/frognano-host-ca.pem',
        // The sandbox's uid 1000 becomes the `node` user the App's image runs as.
        'RUN ln -s ../lib/node_modules/npm/bin/npm-cli.js /usr/local/bin/npm \\',
        ' && usermod -l node -d /home/node -m "$(id -nu 1000)" && groupmod -n node "$(id -ng 1000)"',
        'ENV npm_config_nodedir=/usr/local NODE_EXTRA_CA_CERTS=/usr/local/share/frognano-host-ca.pem \\',
        '    PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin HOME=/root',
        'WORKDIR /',
        'CMD ["node"]',
        '',
      ].join('\n'),
    );
    await build(tag, context);
    return tag;
  } finally {
    rmSync(context, { recursive: true, force: true });
  }
}

function hashInputs(base: string): string {
  const hash = createHash('sha256').update(base);
  const files = execFileSync('git', ['ls-files', '-co', '--exclude-standard', ...INPUTS], {
    cwd: REPO,
    encoding: 'utf8',
  })
    .split('\n')
    .filter(Boolean)
    .sort();
  for (const file of files) {
    hash.update(`${file}\0`);
    try {
      hash.update(readFileSync(path.join(REPO, file)));
    } catch {
      hash.update('(deleted)');
    }
  }
  return hash.digest('hex').slice(0, 16);
}

/** The App's image for this working tree: reused when one with the same inputs exists. */
export async function ensureAppImage(): Promise<string> {
  const base = await nodeBase();
  const tag = `${APP_IMAGE_REPOSITORY}:${hashInputs(base)}`;
  if (exists(tag)) return tag;
  await build(tag, REPO, ['--build-arg', `NODE_IMAGE=${base}`, '--label', 'frognano-test.app=1']);
  // Older trees' App images: only their own layers go (the base and build cache stay).
  for (const old of docker([
    'images',
    '--filter',
    'label=frognano-test.app=1',
    '--format',
    '{{.Repository}}:{{.Tag}}',
  ]).split('\n'))
    if (old.startsWith(`${APP_IMAGE_REPOSITORY}:`) && old !== tag)
      try {
        docker(['rmi', old]);
      } catch {
        // In use by a container of another test run: left.
      }
  return tag;
}
