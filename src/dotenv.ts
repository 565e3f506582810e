// The one way every command reads its settings: `.env` in the current directory, then the
// environment. A variable set in the environment wins (Node's loadEnvFile never overwrites one),
// so `FOO=x frognano …` overrides what .env says, and Probot's registration flow can write the
// App's credentials to .env for the next start to find.
import { existsSync } from 'node:fs';
import { resolve } from 'node:path';

/**
 * Loads `<cwd>/.env` into the process environment, without overwriting a variable already set.
 * An environment given by a caller (a test, an embedding) is its whole environment: left alone.
 */
export function loadDotenv(env: NodeJS.ProcessEnv, cwd: string = process.cwd()): void {
  if (env !== process.env) return;
  const file = resolve(cwd, '.env');
  if (existsSync(file)) process.loadEnvFile(file);
}
