// schema/frognano.schema.json is generated from the zod schema the run validates with, and
// kept in step: this test regenerates it and compares.
import { readFileSync } from 'node:fs';
import { describe, expect, it } from 'vitest';
import { KNOWN_KEYS } from '../../src/runner/repo-config.js';
import { SCHEMA_FILE, configSchemaText } from '../../scripts/write-config-schema.js';

interface Schema {
  properties: Record<string, { pattern?: string; items?: { pattern?: string }; enum?: string[] }>;
  additionalProperties: boolean;
}

describe('schema/frognano.schema.json', () => {
  it('is what the zod schema generates (run `npm run schema` after changing it)', async () => {
    expect(readFileSync(SCHEMA_FILE, 'utf8')).toBe(await configSchemaText());
  });

  it('lists every key the run knows and no other, with the checks an editor can make', () => {
    const schema = JSON.parse(readFileSync(SCHEMA_FILE, 'utf8')) as Schema;
    expect(Object.keys(schema.properties)).toEqual([...KNOWN_KEYS]);
    expect(schema.additionalProperties).toBe(false);
    expect(schema.properties.network?.enum).toEqual(['none', 'registries', 'open', 'setup']);
    const path = new RegExp(schema.properties.instructions_files!.items!.pattern!);
    expect(['AGENTS.md', '.github/copilot-instructions.md'].every((p) => path.test(p))).toBe(true);
    expect(['../x', '/etc/passwd', '.git/config', 'a//b'].some((p) => path.test(p))).toBe(false);
    const extend = new RegExp(schema.properties._extends!.pattern!);
    expect(
      ['shared', 'Acme/shared', 'acme/shared:ci/frognano.yaml'].every((e) => extend.test(e)),
    ).toBe(true);
    expect(extend.test('not a repo')).toBe(false);
    const image = new RegExp(schema.properties.image!.pattern!);
    expect(['python:3.12', 'ghcr.io/acme/sandbox:1'].every((i) => image.test(i))).toBe(true);
    expect(['b', 'sha256:6399', 'python 3'].some((i) => image.test(i))).toBe(false);
  });
});
