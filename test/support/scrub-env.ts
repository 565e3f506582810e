// Tests do not inherit the operator's configuration: a FROGNANO_SANDBOX_IMAGE or APP_ID in the
// shell that runs `npm test` would otherwise change what the tests exercise. Test knobs
// (FROGNANO_TEST_*) stay. Used as a vitest setup file (each test file) and by the global setup.

/** Variables read by src/config.ts and src/github/app-config.ts that a user's shell may hold. */
const APP_VARIABLES = [
  'APP_ID',
  'PRIVATE_KEY',
  'PRIVATE_KEY_PATH',
  'WEBHOOK_SECRET',
  'WEBHOOK_PATH',
  'WEBHOOK_PROXY_URL',
  'GHE_HOST',
  'GHE_PROTOCOL',
  'GITHUB_API_URL',
  'LOG_LEVEL',
];

/** Removes the operator's variables from `env`; returns the names removed. */
export function scrubOperatorEnv(env: NodeJS.ProcessEnv = process.env): string[] {
  const removed = Object.keys(env).filter(
    (key) =>
      (key.startsWith('FROGNANO_') && !key.startsWith('FROGNANO_TEST_')) ||
      APP_VARIABLES.includes(key),
  );
  for (const key of removed) delete env[key];
  return removed;
}

scrubOperatorEnv();
