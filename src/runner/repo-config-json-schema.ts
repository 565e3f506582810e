// JSON Schema of `.github/frognano.yml`, generated from the zod schema the run validates with
// (never written by hand): editors use schema/frognano.schema.json to complete and check the
// file. `npm run schema` writes it; a test keeps the file in step.
import { z } from 'zod';
import { RepoConfig } from './repo-config-schema.js';

export function repoConfigJsonSchema(): Record<string, unknown> {
  // What a file may say (the input side of the schema), in the draft editors know best.
  const generated = z.toJSONSchema(RepoConfig, {
    io: 'input',
    target: 'draft-7',
    unrepresentable: 'any',
  });
  const { $schema, ...rest } = generated;
  return {
    $schema,
    title: 'frognano repository configuration (.github/frognano.yml)',
    description:
      'How frognano runs on this repository. All keys are optional; `frognano config validate` checks a file as a run would.',
    ...rest,
  };
}
