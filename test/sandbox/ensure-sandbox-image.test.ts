// The sandbox image builds itself: the engine build from a recipe directory, the offline
// fallback when the engine build fails, and one line naming both reasons when neither works.
// (The real default image is built by the test global setup; sandbox-image.test.ts checks it.)
import { mkdir, mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, expect, it } from 'vitest';
import { connectDocker } from '../../src/sandbox/docker-engine.js';
import {
  ensureSandboxImage,
  imageExists,
  SandboxImageError,
} from '../../src/sandbox/ensure-sandbox-image.js';
import { describeDocker, testRunId } from '../support/docker-engine.js';

describeDocker('ensureSandboxImage', () => {
  const docker = connectDocker();
  const tag = testRunId('ensure-image');
  const image = (name: string) => `frognano-test/${name}:${tag}`;
  const created: string[] = [];
  let work: string;

  async function recipe(name: string, dockerfile: string, offlineScript?: string): Promise<string> {
    const dir = join(work, name);
    await mkdir(dir);
    await writeFile(join(dir, 'Dockerfile'), dockerfile);
    await writeFile(join(dir, 'packages.txt'), 'bash\n');
    await writeFile(join(dir, 'setup-image.sh'), 'true\n');
    if (offlineScript) await writeFile(join(dir, 'build-offline.sh'), offlineScript);
    return dir;
  }

  beforeAll(async () => {
    work = await mkdtemp(join(tmpdir(), 'frognano-ensure-image-'));
  });
  afterAll(async () => {
    for (const name of created) {
      await docker
        .getImage(name)
        .remove({ force: true })
        .catch(() => undefined);
    }
    if (work) await rm(work, { recursive: true, force: true });
  });

  it('leaves an existing image alone', { timeout: 120_000 }, async () => {
    const name = image('present');
    created.push(name);
    const dir = await recipe('present', 'FROM scratch\nCOPY packages.txt /\n');
    expect(await ensureSandboxImage({ docker, image: name, recipeDir: dir })).toBe('engine');
    expect(await ensureSandboxImage({ docker, image: name, recipeDir: dir })).toBe('present');
  });

  it(
    'builds a missing image through the engine, with progress lines',
    { timeout: 120_000 },
    async () => {
      const name = image('engine');
      created.push(name);
      const dir = await recipe('engine', 'FROM scratch\nCOPY packages.txt setup-image.sh /\n');
      const lines: string[] = [];
      const how = await ensureSandboxImage({
        docker,
        image: name,
        recipeDir: dir,
        progress: (line) => lines.push(line),
      });
      expect(how).toBe('engine');
      expect(await imageExists(docker, name)).toBe(true);
      expect(lines[0]).toMatch(/is missing: building it from sandbox\/Dockerfile/);
      expect(lines.some((line) => /^Step 1\/2 : FROM scratch/.test(line))).toBe(true);
    },
  );

  it(
    'falls back to the offline build when the engine build fails',
    { timeout: 120_000 },
    async () => {
      const name = image('offline');
      created.push(name);
      // The engine build fails at once (an unknown instruction); the "offline build" imports an
      // empty file system under the asked-for name, as build-offline.sh does with a real one.
      const dir = await recipe(
        'offline',
        'NOT-AN-INSTRUCTION\n',
        `echo "[build-offline 00:00:00] importing $FROGNANO_SANDBOX_IMAGE" >&2
tar -cf - --files-from /dev/null | docker import - "$FROGNANO_SANDBOX_IMAGE" >/dev/null
`,
      );
      const lines: string[] = [];
      const how = await ensureSandboxImage({
        docker,
        image: name,
        recipeDir: dir,
        progress: (line) => lines.push(line),
      });
      expect(how).toBe('offline');
      expect(await imageExists(docker, name)).toBe(true);
      expect(lines).toContainEqual(
        expect.stringMatching(
          /^engine build failed \(.+\); building offline with sandbox\/build-offline\.sh$/,
        ),
      );
      expect(lines).toContain(`[build-offline 00:00:00] importing ${name}`);
    },
  );

  it('says in one line why neither build works', { timeout: 120_000 }, async () => {
    const name = image('neither');
    const dir = await recipe('neither', 'NOT-AN-INSTRUCTION\n');
    // Without docker on PATH the offline build cannot run.
    const error = await ensureSandboxImage({
      docker,
      image: name,
      recipeDir: dir,
      env: { PATH: '/nonexistent' },
    }).catch((e: unknown) => e);
    expect(error).toBeInstanceOf(SandboxImageError);
    const message = (error as Error).message;
    expect(message.split('\n')).toHaveLength(1);
    expect(message).toMatch(
      new RegExp(
        `^sandbox image ${name.replace(/[/.]/g, '\\$&')} is missing and cannot be built here: the engine build failed \\(.+\\) and the offline build needs .*docker on PATH`,
      ),
    );
  });

  it('reports the offline build failing with its last line', { timeout: 120_000 }, async () => {
    const name = image('offline-fails');
    const dir = await recipe(
      'offline-fails',
      'NOT-AN-INSTRUCTION\n',
      'echo "build-offline.sh: debootstrap failed (mirror http://example.invalid)" >&2\nexit 1\n',
    );
    await expect(ensureSandboxImage({ docker, image: name, recipeDir: dir })).rejects.toThrow(
      /neither build worked: the engine build failed \(.+\); the offline build failed \(exit 1: build-offline\.sh: debootstrap failed \(mirror http:\/\/example\.invalid\)\)$/,
    );
  });

  it('only builds the default image from the repository recipe', { timeout: 120_000 }, async () => {
    await expect(ensureSandboxImage({ docker, image: image('custom-missing') })).rejects.toThrow(
      /only the default frognano\/sandbox:\S+ builds itself: pull or build/,
    );
  });
});
