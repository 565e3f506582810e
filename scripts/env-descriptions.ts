// What each environment variable means, for docs/reference.md. The names, defaults and accepted
// values come from the zod schemas that validate them (scripts/write-reference.ts); a test fails
// when a schema has a variable this file does not describe, or this file one no schema has.

/** Variables validated by a zod schema: name → meaning (one line, Markdown). */
export const ENV_DESCRIPTIONS: Readonly<Record<string, string>> = {
  // src/config.ts: the model and the sandbox
  FROGNANO_MODEL_URL:
    'OpenAI-compatible base URL of the model server, or several, comma-separated (one per GPU server).',
  FROGNANO_MODEL: 'The model name as the server serves it.',
  FROGNANO_API_KEY: 'Bearer key, if the model server wants one.',
  FROGNANO_TEMPERATURE: "Sampling temperature (FrogNano's evaluated value).",
  FROGNANO_MAX_COMPLETION_TOKENS:
    'Output cap per turn; 32000 for long-turn work such as SWE-bench Pro or Terminal-Bench 2 style tasks.',
  FROGNANO_MAX_CONTEXT_TOKENS: 'Context budget of one agent loop.',
  FROGNANO_MODEL_TIMEOUT_SECONDS: 'Timeout of one model request.',
  FROGNANO_MODEL_MAX_RETRIES: 'Retries with backoff on connection errors, 5xx and 429.',
  FROGNANO_MODEL_MAX_LOOPS:
    'Agent loops talking to one endpoint at once (with Redis: across all workers).',
  FROGNANO_SANDBOX:
    '`docker`, or `local` (a temporary copy and child processes: development only).',
  FROGNANO_SANDBOX_IMAGE: 'Default sandbox image (only the built-in default builds itself).',
  FROGNANO_SANDBOX_MEMORY: 'Memory limit of a sandbox (swap equal to it).',
  FROGNANO_SANDBOX_CPUS: 'CPU limit of a sandbox.',
  FROGNANO_SANDBOX_PIDS: 'Process limit of a sandbox.',
  FROGNANO_SANDBOX_RUNTIME:
    "The engine runtime of the agent's and verification's sandboxes: unset, gVisor (`runsc`) when the engine offers it and a test start works, else the default; `runc` opts out; another name is used as given.",
  FROGNANO_SETUP_NETWORK_CAP:
    'The most setup network a repository may ask for (`network:`); a repository asking more gets this.',
  FROGNANO_PIP_INDEX_URL:
    'A PyPI mirror: setup gets it as `PIP_INDEX_URL`, and its host is allowed in `registries` mode.',
  FROGNANO_NPM_REGISTRY:
    'An npm registry mirror: setup gets it as `npm_config_registry`, and its host is allowed in `registries` mode.',
  FROGNANO_SETUP_ALLOW_HOSTS:
    'More hosts setup may reach in `registries` mode, comma-separated: `host`, `host:port` or `*.suffix` (a plain entry may name a private address).',
  FROGNANO_SETUP_CA_FILE:
    "A PEM bundle setup's tools trust besides the image's roots (a TLS-inspecting proxy).",
  FROGNANO_SETUP_SECRETS:
    'Names of variables passed to setup commands only (never the agent, the tests or a log); files setup writes persist in the snapshot.',
  FROGNANO_SANDBOX_DISK: 'Most a sandbox may write to disk (its layer and /tmp).',
  FROGNANO_DISK_FLOOR:
    "Stop a run when the Docker engine's disk has less free than this (`0`: off).",
  FROGNANO_DATA_DIR: 'Queue database, clone cache, trajectories, kept changes.',
  FROGNANO_MAX_STEPS_CAP: 'Bounds `max_steps` of repository configs (unset: no cap).',
  FROGNANO_MAX_TIMEOUT_MINUTES_CAP:
    'Bounds `timeout_minutes` of repository configs (unset: no cap).',
  FROGNANO_MAX_ATTEMPTS: 'Bounds `attempts`, `--attempts` and `/frognano retry xN` (1–8).',
  FROGNANO_METRICS_PORT: "`frognano worker`'s own `/metrics` port (`0`: none).",
  LOG_LEVEL: 'Log level (pino).',
  // src/github/app-config.ts: the GitHub App
  APP_ID: "The App's numeric id (written by the registration flow).",
  PRIVATE_KEY: "The App's private key, PEM (or use `PRIVATE_KEY_PATH`).",
  PRIVATE_KEY_PATH: "A file holding the App's private key.",
  WEBHOOK_SECRET: "The App's webhook secret.",
  WEBHOOK_PATH: 'Where webhooks arrive.',
  WEBHOOK_PROXY_URL: 'Development: a smee.io channel that forwards deliveries here.',
  PORT: 'Port of the webhook server, the run pages and `/metrics`.',
  HOST: "Address the server listens on (Probot's default: `localhost`; the Docker image sets `0.0.0.0`).",
  GHE_HOST: 'GitHub Enterprise Server host (API `https://HOST/api/v3`, git `https://HOST`).',
  GHE_PROTOCOL: 'Protocol of `GHE_HOST`.',
  GITHUB_API_URL: 'REST API base URL (overrides the one `GHE_HOST` implies).',
  FROGNANO_GIT_URL: 'Git host repositories are cloned from and pushed to.',
  FROGNANO_LABEL: 'The label that starts a run.',
  FROGNANO_CONCURRENCY: 'Runs at the same time (with Redis: per worker).',
  FROGNANO_PUBLIC_URL: 'Base URL of the run pages, linked from pull requests and status comments.',
  FROGNANO_STATUS_THROTTLE_MS: 'Least time between two edits of a status comment.',
  FROGNANO_RETENTION_DAYS: 'Finished runs and their trajectories are deleted after this many days.',
  FROGNANO_REPLAY_WINDOW_HOURS:
    'How long a webhook delivery id is remembered, so a redelivery starts nothing twice.',
  FROGNANO_MAX_QUEUED_PER_REPO: 'Most runs one repository may have queued (unset: no cap).',
  FROGNANO_BOT_NAME: "The bot's git author name (unset: asked from GitHub once).",
  FROGNANO_BOT_EMAIL: "The bot's git author e-mail (unset: asked from GitHub once).",
  // src/queue/open-queue.ts: the queue
  FROGNANO_REDIS_URL:
    '`redis://host:6379`: the shared queue of many machines (unset: SQLite in the data directory).',
  FROGNANO_REDIS_PREFIX: 'Key prefix in Redis, for installations sharing one Redis.',
  FROGNANO_LOST_WORKER_SECONDS:
    'A worker silent this long is lost: its run is requeued and its model slots freed.',
};

/** Read directly (no schema): name → [default, meaning]. */
export const OTHER_VARIABLES: Readonly<Record<string, readonly [string, string]>> = {
  GITHUB_CLIENT_ID: [
    '(registration flow)',
    "The App's OAuth client id: with the secret, turns on `/runs`.",
  ],
  GITHUB_CLIENT_SECRET: ['(registration flow)', "The App's OAuth client secret."],
  NODE_ENV: ['', '`production`: no registration flow (the Docker image sets it).'],
  NO_SMEE_SETUP: ['', 'Registration flow: `true` skips the smee.io channel.'],
  GH_ORG: ['', 'Registration flow: register the App under this organization.'],
  DOCKER_HOST: ['the local socket', 'Docker engine: `tcp://` or `ssh://` for a remote one.'],
  DOCKER_CERT_PATH: ['', 'TLS client certificates for a `tcp://` engine.'],
  DOCKER_TLS_VERIFY: ['', "`1`: verify the engine's TLS certificate."],
  LOG_FORMAT: ['', '`frognano action`: `json` for JSON log lines instead of readable ones.'],
  FROGNANO_ALLOW_LOCAL_SANDBOX_IN_ACTIONS: [
    '',
    "Under GitHub Actions the local sandbox is refused (the model could read the job's secrets) unless this is exactly `i-understand-the-model-can-read-job-secrets`.",
  ],
};
