// `npm run schema`: writes schema/frognano.schema.json from the zod schema, formatted as the
// repository formats JSON (so `prettier --check` and the test that regenerates it agree).
import { writeFile } from 'node:fs/promises';
import { fileURLToPath } from 'node:url';
import prettier from 'prettier';
import { repoConfigJsonSchema } from '../src/runner/repo-config-json-schema.js';

export const SCHEMA_FILE = fileURLToPath(
  new URL('../schema/frognano.schema.json', import.meta.url),
);

export async function configSchemaText(): Promise<string> {
  const options = (await prettier.resolveConfig(SCHEMA_FILE)) ?? {};
  return prettier.format(JSON.stringify(repoConfigJsonSchema()), { ...options, parser: 'json' });
}

if (process.argv[1] === fileURLToPath(import.meta.url)) {
  await writeFile(SCHEMA_FILE, await configSchemaText());
  process.stdout.write(`wrote ${SCHEMA_FILE}\n`);
}
