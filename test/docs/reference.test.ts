// docs/reference.md is what the zod schemas say: regenerated here and compared, so a variable or
// key added, renamed or given another default without `npm run docs` fails the suite.
import { readFileSync } from 'node:fs';
import { describe, expect, it } from 'vitest';
import { ENV_DESCRIPTIONS, OTHER_VARIABLES } from '../../scripts/env-descriptions.js';
import { REFERENCE_FILE, referenceText, schemaVariables } from '../../scripts/write-reference.js';

describe('docs/reference.md', () => {
  it('is what `npm run docs` writes from the schemas', async () => {
    expect(readFileSync(REFERENCE_FILE, 'utf8')).toBe(await referenceText());
  });

  it('describes every variable a schema validates, and none that no schema has', () => {
    const variables = schemaVariables();
    expect(variables.filter((name) => !ENV_DESCRIPTIONS[name])).toEqual([]);
    expect(Object.keys(ENV_DESCRIPTIONS).filter((name) => !variables.includes(name))).toEqual([]);
    expect(Object.keys(OTHER_VARIABLES).filter((name) => variables.includes(name))).toEqual([]);
  });

  it('lists every variable .env.example names', () => {
    const example = readFileSync('.env.example', 'utf8');
    const named = [...example.matchAll(/^#?\s*([A-Z][A-Z0-9_]+)=/gm)].map((m) => m[1]!);
    const reference = readFileSync(REFERENCE_FILE, 'utf8');
    expect(named.filter((name) => !reference.includes(`\`${name}\``))).toEqual([]);
  });
});
