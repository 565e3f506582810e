// `FROGNANO_SANDBOX=local` in a workflow job: the model's commands would run as the runner's
// user, next to this process, and could read its environment from /proc/<pid>/environ (the
// workflow token, ACTIONS_RUNTIME_TOKEN, the OIDC request token, every job secret). Refused under
// GITHUB_ACTIONS=true unless the operator says, by a name that cannot be set by accident, that
// they accept it.

/** The opt-in variable, and the one value that counts as saying yes. */
export const ALLOW_LOCAL_SANDBOX_VARIABLE = 'FROGNANO_ALLOW_LOCAL_SANDBOX_IN_ACTIONS';
export const ALLOW_LOCAL_SANDBOX_VALUE = 'i-understand-the-model-can-read-job-secrets';

/** The one line that refuses a local sandbox in a workflow job, or undefined when it may run. */
export function localSandboxProblem(
  sandbox: 'docker' | 'local',
  env: NodeJS.ProcessEnv,
): string | undefined {
  if (sandbox !== 'local' || env.GITHUB_ACTIONS !== 'true') return undefined;
  if (env[ALLOW_LOCAL_SANDBOX_VARIABLE] === ALLOW_LOCAL_SANDBOX_VALUE) return undefined;
  return `FROGNANO_SANDBOX=local is refused in GitHub Actions: the model's commands would run next to this process and could read the job's secrets (GITHUB_TOKEN, ACTIONS_RUNTIME_TOKEN) from /proc; use sandbox: docker, or set ${ALLOW_LOCAL_SANDBOX_VARIABLE}=${ALLOW_LOCAL_SANDBOX_VALUE} to accept that`;
}
