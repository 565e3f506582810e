// `npm run bench`: runs every bench/*.bench.ts in sequence, each printing its own lines.
import { readdir } from 'node:fs/promises';
import path from 'node:path';
import { fileURLToPath, pathToFileURL } from 'node:url';

const benchDir = path.dirname(fileURLToPath(import.meta.url));

async function main(): Promise<void> {
  const only = process.argv[2];
  const files = (await readdir(benchDir))
    .filter((name) => name.endsWith('.bench.ts') && (!only || name.includes(only)))
    .sort();
  if (files.length === 0)
    throw new Error(`no benchmark matches ${only ?? '*.bench.ts'} in ${benchDir}`);
  for (const file of files) {
    console.log(`\n== ${file} ==`);
    const module = (await import(pathToFileURL(path.join(benchDir, file)).href)) as {
      default?: () => Promise<void>;
    };
    if (typeof module.default !== 'function') {
      throw new Error(`${file} must export a default async function run()`);
    }
    await module.default();
  }
}

main().catch((error: unknown) => {
  console.error(error instanceof Error ? error.message : String(error));
  process.exitCode = 1;
});
