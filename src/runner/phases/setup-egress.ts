// What setup's network is in a Docker run (issue 25): the mode (after the operator's cap), the
// egress proxy and its network in `registries` mode, and what setup's commands get besides:
// the proxy, the operator's mirrors, a CA bundle to trust, the operator's setup secrets. Only
// setup's commands get this environment; the agent and the verify phases never do (it is not
// the container's environment, and a snapshot does not keep it).
import { readFile } from 'node:fs/promises';
import type Docker from 'dockerode';
import { setupNetworkEnv } from '../../config.js';
import type { Sandbox } from '../../leaf/sandbox.js';
import { registerSecret } from '../../redact.js';
import { SANDBOX_HOME } from '../../sandbox/docker-sandbox.js';
import { AllowList, REGISTRY_HOSTS, mirrorEntry } from '../../sandbox/egress-allow.js';
import type {
  BlockedConnection,
  EgressFacts,
  SetupNetworkMode,
} from '../../sandbox/egress-facts.js';
import { sandboxOwner } from '../../sandbox/owner.js';
import { openSetupNetwork, type SetupNetwork } from '../../sandbox/setup-network.js';
import { combined, errorText } from '../command-output.js';
import type { RunContext } from '../run-context.js';
import type { Prepared } from './config.js';

/** Where setup's tools find the CA bundle (the image's own roots plus the operator's). */
export const SETUP_CA_PATH = `${SANDBOX_HOME}/.frognano/setup-ca.pem`;

/** Clients give up quickly on a refusal instead of retrying for the whole setup limit. */
const FAIL_FAST_ENV: Readonly<Record<string, string>> = {
  npm_config_fetch_retries: '1',
  npm_config_fetch_retry_mintimeout: '1000',
  npm_config_fetch_retry_maxtimeout: '3000',
  PIP_RETRIES: '1',
  PIP_DEFAULT_TIMEOUT: '15',
};

export interface SetupEgress {
  mode: SetupNetworkMode;
  /** The sandbox's network while setup runs: `none`, `bridge` or the setup network's name. */
  dockerNetwork: string;
  /** Setup's commands' environment. */
  env: Record<string, string>;
  facts(): EgressFacts;
  /** Puts the CA bundle in place before the first command. */
  prepare(sandbox: Sandbox, signal: AbortSignal): Promise<void>;
  close(): Promise<void>;
}

/** Opens setup's network for this run (the proxy and its network only in `registries`). */
export async function openSetupEgress(
  run: RunContext,
  prepared: Prepared,
  docker: Docker,
): Promise<SetupEgress> {
  const settings = setupNetworkEnv(run.env);
  const mode: SetupNetworkMode = prepared.setupNetwork ? prepared.config.network : 'none';
  const cappedFrom = prepared.networkAsked;
  const ca = settings.FROGNANO_SETUP_CA_FILE
    ? await readCaFile(settings.FROGNANO_SETUP_CA_FILE)
    : undefined;
  const env = { ...mirrorEnv(settings), ...(ca ? caEnv() : {}), ...secretEnv(run, settings) };
  let network: SetupNetwork | undefined;
  if (mode === 'registries') {
    const operator = [
      ...(settings.FROGNANO_SETUP_ALLOW_HOSTS ?? []),
      ...[settings.FROGNANO_PIP_INDEX_URL, settings.FROGNANO_NPM_REGISTRY]
        .filter((url): url is string => url !== undefined)
        .map(mirrorEntry),
    ];
    const allow = new AllowList(operator, [
      ...REGISTRY_HOSTS,
      ...(prepared.config.network_allow ?? []),
    ]);
    network = await openSetupNetwork({
      docker,
      runId: run.request.runId,
      owner: sandboxOwner(run.dataDir),
      allow,
      log: run.log,
    });
    Object.assign(env, proxyEnv(network.proxyUrl), FAIL_FAST_ENV);
  }
  const facts = (): EgressFacts => ({
    ...(network ? network.proxy.facts() : { mode, allowedHosts: [], blocked: [] }),
    ...(cappedFrom ? { cappedFrom } : {}),
  });
  return {
    mode,
    dockerNetwork: network?.name ?? (mode === 'open' ? 'bridge' : 'none'),
    env,
    facts,
    prepare: (sandbox, signal) => (ca ? installCa(sandbox, ca, signal) : Promise.resolve()),
    close: () => network?.close() ?? Promise.resolve(),
  };
}

/** The proxy for every client setup may use; no NO_PROXY: a mirror on the host goes through it. */
function proxyEnv(url: string): Record<string, string> {
  return {
    HTTP_PROXY: url,
    HTTPS_PROXY: url,
    http_proxy: url,
    https_proxy: url,
    npm_config_proxy: url,
    npm_config_https_proxy: url,
    NO_PROXY: '',
    no_proxy: '',
  };
}

function mirrorEnv(settings: ReturnType<typeof setupNetworkEnv>): Record<string, string> {
  return {
    ...(settings.FROGNANO_PIP_INDEX_URL ? { PIP_INDEX_URL: settings.FROGNANO_PIP_INDEX_URL } : {}),
    ...(settings.FROGNANO_NPM_REGISTRY
      ? { npm_config_registry: settings.FROGNANO_NPM_REGISTRY }
      : {}),
  };
}

function caEnv(): Record<string, string> {
  return {
    PIP_CERT: SETUP_CA_PATH,
    REQUESTS_CA_BUNDLE: SETUP_CA_PATH,
    SSL_CERT_FILE: SETUP_CA_PATH,
    CURL_CA_BUNDLE: SETUP_CA_PATH,
    GIT_SSL_CAINFO: SETUP_CA_PATH,
    NODE_EXTRA_CA_CERTS: SETUP_CA_PATH,
    npm_config_cafile: SETUP_CA_PATH,
  };
}

/** The operator's named variables, registered for redaction; a name that is unset is skipped. */
function secretEnv(
  run: RunContext,
  settings: ReturnType<typeof setupNetworkEnv>,
): Record<string, string> {
  const out: Record<string, string> = {};
  for (const name of settings.FROGNANO_SETUP_SECRETS ?? []) {
    const value = run.env[name];
    if (value === undefined || value === '') {
      run.log.warn({ name }, 'FROGNANO_SETUP_SECRETS names a variable that is not set; skipped');
      continue;
    }
    registerSecret(value);
    out[name] = value;
  }
  return out;
}

async function readCaFile(file: string): Promise<string> {
  let text: string;
  try {
    text = await readFile(file, 'utf8');
  } catch (error) {
    throw new Error(
      `FROGNANO_SETUP_CA_FILE ${file} cannot be read (${(error as NodeJS.ErrnoException).code ?? errorText(error)}); set it to a PEM bundle of the certificates setup must trust`,
    );
  }
  if (!text.includes('-----BEGIN CERTIFICATE-----'))
    throw new Error(
      `FROGNANO_SETUP_CA_FILE ${file} holds no PEM certificate (-----BEGIN CERTIFICATE-----); set it to a PEM bundle`,
    );
  return text;
}

/** The image's own roots (when it has a bundle) plus the operator's, as one file. */
async function installCa(sandbox: Sandbox, pem: string, signal: AbortSignal): Promise<void> {
  const done = await sandbox.exec(
    `mkdir -p "$(dirname ${SETUP_CA_PATH})" && { cat /etc/ssl/certs/ca-certificates.crt 2>/dev/null; echo; cat; } > ${SETUP_CA_PATH}`,
    { stdin: pem, timeoutMs: 30_000, signal },
  );
  if (done.exitCode !== 0)
    throw new Error(`could not put the setup CA bundle in the sandbox: ${combined(done)}`);
}

const CERT_FAILURE =
  /CERTIFICATE_VERIFY_FAILED|certificate verify failed|SELF_SIGNED_CERT_IN_CHAIN|self[- ]signed certificate in certificate chain|UNABLE_TO_GET_ISSUER_CERT_LOCALLY|unable to get local issuer certificate|UNABLE_TO_VERIFY_LEAF_SIGNATURE|unable to verify the first certificate/;

/**
 * Why a failed setup command failed, when the network says: the destinations the proxy refused
 * while it ran (`before` and `after` it), or a certificate its tools did not trust (its output).
 */
export function diagnoseSetupFailure(
  output: string,
  before: readonly BlockedConnection[],
  after: readonly BlockedConnection[],
): string | undefined {
  const reasons: string[] = [];
  const earlier = new Map(before.map((b) => [`${b.host}:${b.port}:${b.reason}`, b.count]));
  const refused = after.filter(
    (b) => b.count > (earlier.get(`${b.host}:${b.port}:${b.reason}`) ?? 0),
  );
  for (const b of refused.slice(0, 3))
    reasons.push(
      // The proxy's connection cap (egress-proxy.ts) names no destination: nothing to allow.
      b.reason === 'too many connections'
        ? 'too many connections through the setup network at once; open fewer in parallel'
        : `${b.host}:${b.port} refused by the setup network; add it to network_allow`,
    );
  if (CERT_FAILURE.test(output)) {
    const host =
      /host='([^']+)'/.exec(output)?.[1] ??
      /https:\/\/([A-Za-z0-9.-]+)/.exec(output)?.[1] ??
      'a download';
    reasons.push(`${host}: certificate not trusted; set FROGNANO_SETUP_CA_FILE`);
  }
  return reasons.length > 0 ? reasons.join('; ') : undefined;
}
