// Setup snapshots: after a successful setup, the container is committed to an image keyed
// by what determines setup's result (base image, setup commands, network mode, dependency
// manifests). A later run with the same key starts from that image and skips setup.
//
// What a warm start reuses, and what it does not: the snapshot holds the repository tree as
// it was at setup time, plus everything setup produced, inside /testbed (node_modules, .venv,
// *.egg-info, build output) or outside it (site-packages, ~/.cache). On a hit the pipeline
// deletes the files git TRACKED at setup time and the old .git, then copies the current tree
// in (see `refreshTreeCommand`). Setup's untracked outputs stay, exactly where a cold setup
// would have left them, so a warm run sees what a cold run would see. Because the key hashes
// the dependency manifests, outputs that depend on them are never stale; outputs that depend
// on other files (a setup script that compiles the sources) are reused from the older tree,
// which is why the key also covers every file the setup commands name (see `setupInputs`).
import { createHash } from 'node:crypto';
import { lstat, readdir, readFile } from 'node:fs/promises';
import path from 'node:path';
import type Docker from 'dockerode';
import { shellQuote } from '../shell-quote.js';
import type { SetupNetworkMode } from './egress-facts.js';

export const SNAPSHOT_REPOSITORY = 'frognano-snapshot';
export const SNAPSHOT_LABEL = 'frognano.snapshot';
export const SNAPSHOT_REPO_LABEL = 'frognano.snapshot.repo';
export const SNAPSHOT_KEY_LABEL = 'frognano.snapshot.key';
/** Set at commit time; a hit re-tags the image, which moves Docker's LastTagTime instead. */
export const SNAPSHOT_LAST_USED_LABEL = 'frognano.snapshot.last-used';
export const DEFAULT_SNAPSHOT_CAP = 10;

// Bump when the layout of what goes into a snapshot changes, to orphan old ones.
const KEY_VERSION = 'v1';

/** File names whose content decides what setup installs. */
export const DEPENDENCY_MANIFESTS: readonly RegExp[] = [
  /^requirements.*\.(txt|in)$/i,
  /^constraints.*\.txt$/i,
  /^pyproject\.toml$/,
  /^setup\.(py|cfg)$/,
  /^poetry\.lock$/,
  /^Pipfile(\.lock)?$/,
  /^uv\.lock$/,
  /^pdm\.lock$/,
  /^environment\.ya?ml$/,
  /^conda-lock\.ya?ml$/,
  /^tox\.ini$/,
  /^package(-lock)?\.json$/,
  /^npm-shrinkwrap\.json$/,
  /^yarn\.lock$/,
  /^pnpm-(lock|workspace)\.yaml$/,
  /^\.nvmrc$/,
  /^\.python-version$/,
  /^go\.(mod|sum)$/,
  /^Cargo\.(toml|lock)$/,
  /^Gemfile(\.lock)?$/,
  /^composer\.(json|lock)$/,
];

const SKIP_DIRS = new Set([
  '.git',
  'node_modules',
  '.venv',
  'venv',
  '.tox',
  '.nox',
  '__pycache__',
  'site-packages',
  'dist',
  'build',
]);
const MAX_WALK_ENTRIES = 50_000;

export interface ManifestDigest {
  hash: string;
  /** Tree-relative paths that went into the hash, sorted. */
  files: string[];
}

/** Hashes every dependency manifest in the tree (path and content), skipping vendored dirs. */
export async function hashDependencyManifests(
  treeDir: string,
  extraFiles: readonly string[] = [],
): Promise<ManifestDigest> {
  const found = new Set<string>();
  let seen = 0;
  const walk = async (rel: string): Promise<void> => {
    const entries = await readdir(path.join(treeDir, rel), { withFileTypes: true }).catch(() => []);
    for (const entry of entries) {
      if (++seen > MAX_WALK_ENTRIES) return;
      const child = rel ? `${rel}/${entry.name}` : entry.name;
      if (entry.isDirectory()) {
        if (!SKIP_DIRS.has(entry.name)) await walk(child);
      } else if (entry.isFile() && DEPENDENCY_MANIFESTS.some((re) => re.test(entry.name))) {
        found.add(child);
      }
    }
  };
  await walk('');
  for (const extra of extraFiles) {
    const normal = path.posix.normalize(extra).replace(/^\.\//, '');
    if (!normal.startsWith('../') && !path.isAbsolute(normal)) found.add(normal);
  }
  const files = [...found].sort();
  const hash = createHash('sha256');
  for (const file of files) {
    hash.update(`${file}\0`);
    const full = path.join(treeDir, file);
    const info = await lstat(full).catch(() => undefined);
    // Symlinks are hashed by target text, never followed out of the untrusted tree.
    if (info?.isFile()) hash.update(await readFile(full));
    else hash.update(info ? `<${info.isSymbolicLink() ? 'link' : 'other'}>` : '<missing>');
    hash.update('\0');
  }
  return { hash: hash.digest('hex'), files };
}

/**
 * Tree files the setup commands mention by relative path (`bash scripts/setup.sh`,
 * `pip install -r ci/reqs.txt`): their content decides setup's result too.
 */
export function setupInputs(setup: readonly string[]): string[] {
  const out = new Set<string>();
  for (const command of setup) {
    for (const token of command.split(/[\s;&|()<>'"=]+/)) {
      if (
        /^(\.\/)?[\w.-]+(\/[\w.-]+)*\.(sh|bash|py|txt|in|cfg|toml|ya?ml|json|lock|mk)$/.test(
          token,
        ) ||
        /^(\.\/)?[\w.-]+\/[\w./-]+$/.test(token)
      ) {
        out.add(token.replace(/^\.\//, ''));
      }
    }
  }
  return [...out].sort();
}

export interface SnapshotKeyInput {
  /**
   * The repository: snapshots are never shared across repositories, since setup's outputs
   * can carry a private repository's code.
   */
  repo: string;
  /** The base image's id (sha256:...), not its name: a rebuilt image must miss. */
  baseImageId: string;
  setup: readonly string[];
  network: SetupNetworkMode;
  manifestsHash: string;
  /** Set when setup copies the project itself (e.g. `pip install .`): then only that commit matches. */
  treeCommit?: string;
}

export function snapshotKey(input: SnapshotKeyInput): string {
  const hash = createHash('sha256');
  hash.update(
    JSON.stringify([
      KEY_VERSION,
      input.repo,
      input.baseImageId,
      input.setup,
      input.network,
      input.manifestsHash,
      input.treeCommit ?? null,
    ]),
  );
  return hash.digest('hex').slice(0, 32);
}

export function snapshotTag(key: string): string {
  return `${SNAPSHOT_REPOSITORY}:${key}`;
}

export function snapshotLabels(params: {
  repo: string;
  key: string;
  now?: Date;
}): Record<string, string> {
  return {
    [SNAPSHOT_LABEL]: '1',
    [SNAPSHOT_REPO_LABEL]: params.repo,
    [SNAPSHOT_KEY_LABEL]: params.key,
    [SNAPSHOT_LAST_USED_LABEL]: (params.now ?? new Date()).toISOString(),
  };
}

/**
 * The snapshot for `key`, if there is one, marked as just used (re-tagging moves its
 * LastTagTime, the clock the LRU eviction reads). Returns its image id.
 */
export async function findSnapshot(docker: Docker, key: string): Promise<string | undefined> {
  const tag = snapshotTag(key);
  let info;
  try {
    info = await docker.getImage(tag).inspect();
  } catch (error) {
    if ((error as { statusCode?: number }).statusCode === 404) return undefined;
    throw error;
  }
  if (info.Config?.Labels?.[SNAPSHOT_LABEL] !== '1') return undefined;
  await docker.getImage(info.Id).tag({ repo: SNAPSHOT_REPOSITORY, tag: key });
  return info.Id;
}

/**
 * The shell command run in the container on a hit, before the current tree is copied in:
 * removes what git tracked at setup time and the old .git, keeping setup's own outputs.
 */
export function refreshTreeCommand(workdir: string): string {
  const dir = shellQuote(workdir);
  return `cd ${dir} && git -c core.fsmonitor=false -c core.hooksPath=/dev/null ls-files -z | xargs -0 -r rm -f -- && rm -rf .git`;
}

export interface SnapshotImage {
  id: string;
  tags: string[];
  key?: string;
  repo?: string;
  lastUsed: number;
}

export async function listSnapshots(docker: Docker): Promise<SnapshotImage[]> {
  const images = await docker.listImages({
    filters: JSON.stringify({ label: [`${SNAPSHOT_LABEL}=1`] }),
  });
  const out: SnapshotImage[] = [];
  for (const image of images) {
    const tags = (image.RepoTags ?? []).filter((t) => t !== '<none>:<none>');
    const labels = image.Labels ?? {};
    let lastUsed = Date.parse(labels[SNAPSHOT_LAST_USED_LABEL] ?? '') || image.Created * 1000;
    const inspected = await docker
      .getImage(image.Id)
      .inspect()
      .catch(() => undefined);
    const tagged = Date.parse(
      (inspected as { Metadata?: { LastTagTime?: string } } | undefined)?.Metadata?.LastTagTime ??
        '',
    );
    if (Number.isFinite(tagged)) lastUsed = Math.max(lastUsed, tagged);
    out.push({
      id: image.Id,
      tags,
      key: labels[SNAPSHOT_KEY_LABEL],
      repo: labels[SNAPSHOT_REPO_LABEL],
      lastUsed,
    });
  }
  return out;
}

/** Untagged ones first, then the least recently used tagged ones beyond `keep`. */
export function snapshotsToEvict(all: readonly SnapshotImage[], keep: number): SnapshotImage[] {
  const dangling = all.filter((s) => s.tags.length === 0);
  const tagged = all.filter((s) => s.tags.length > 0).sort((a, b) => b.lastUsed - a.lastUsed);
  return [...dangling, ...tagged.slice(Math.max(0, keep))];
}

/**
 * Removes untagged snapshot images (replaced by a newer commit of the same key) and the
 * least recently used tagged ones beyond `keep`. An image still used by a container is
 * skipped (the engine refuses), not forced. Returns the removed image ids.
 */
export async function evictSnapshots(
  docker: Docker,
  options: { keep?: number } = {},
): Promise<string[]> {
  const keep = options.keep ?? DEFAULT_SNAPSHOT_CAP;
  const all = await listSnapshots(docker);
  const dangling = all.filter((s) => s.tags.length === 0);
  const tagged = all.filter((s) => s.tags.length > 0).sort((a, b) => b.lastUsed - a.lastUsed);
  const removed: string[] = [];
  for (const image of [...dangling, ...tagged.slice(keep)]) {
    try {
      // Untag by name first so the removal is of our tag only, then the image if unused.
      for (const tag of image.tags) await docker.getImage(tag).remove({ noprune: false });
      if (image.tags.length === 0) await docker.getImage(image.id).remove();
      removed.push(image.id);
    } catch (error) {
      const status = (error as { statusCode?: number }).statusCode;
      if (status !== 409 && status !== 404) throw error;
    }
  }
  return removed;
}
