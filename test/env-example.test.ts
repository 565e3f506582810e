// `.env.example` is copied to `.env` (README) and that file is passed to the App's container
// with `docker run --env-file .env`, where every `NAME=` line sets NAME, empty or not, over the
// image's own ENV. So the example must not assign what the Dockerfile sets (HOST=0.0.0.0 and
// FROGNANO_DATA_DIR=/data, among others): it lists those commented out.
import { readFileSync } from 'node:fs';
import { describe, expect, it } from 'vitest';

const assigned = (text: string): string[] =>
  text
    .split('\n')
    .map((line) => /^([A-Za-z_][A-Za-z0-9_]*)=/.exec(line.trim())?.[1])
    .filter((name): name is string => name !== undefined);

function dockerfileEnv(): string[] {
  const text = readFileSync('Dockerfile', 'utf8').replace(/\\\n/g, ' ');
  const names: string[] = [];
  for (const line of text.split('\n')) {
    const match = /^ENV\s+(.*)$/.exec(line.trim());
    if (!match) continue;
    for (const pair of (match[1] as string).split(/\s+/)) {
      const name = /^([A-Za-z_][A-Za-z0-9_]*)=/.exec(pair)?.[1];
      if (name) names.push(name);
    }
  }
  return names;
}

describe('.env.example', () => {
  it('does not assign the variables the Docker image sets (docker run --env-file would blank them)', () => {
    const image = dockerfileEnv();
    expect(image).toEqual(expect.arrayContaining(['HOST', 'FROGNANO_DATA_DIR', 'NODE_ENV']));
    const example = assigned(readFileSync('.env.example', 'utf8'));
    expect(example.filter((name) => image.includes(name))).toEqual([]);
  });

  it('still names every one of them, commented out', () => {
    const text = readFileSync('.env.example', 'utf8');
    for (const name of dockerfileEnv()) expect(text).toMatch(new RegExp(`^# ${name}=`, 'm'));
  });
});
