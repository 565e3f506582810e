// The setup network's allow list (issue 25): which host:port the egress proxy lets through.
// Entries are `host` (ports 80 and 443), `host:port` (that port only), `*.suffix` (any name
// under the suffix, not the suffix itself) or `*.suffix:port`; IPv6 literals in brackets.
// Only the operator's plain entries (FROGNANO_SETUP_ALLOW_HOSTS, the mirrors), never a wildcard
// and never a repository's `network_allow`, let a name reach a loopback, link-local or private
// address: `*.corp.example` must not make an internal name a way onto the host's network, and a
// repository must not be able to ask for the cloud metadata service or the bot's own services.

/** pip and npm's public registries: what `registries` mode allows with no entry at all. */
export const REGISTRY_HOSTS: readonly string[] = Object.freeze([
  'pypi.org',
  'files.pythonhosted.org',
  'registry.npmjs.org',
]);

/** A host without a port allows the ports registries and mirrors are served on. */
const DEFAULT_PORTS: readonly number[] = [80, 443];

interface AllowRule {
  /** Lowercase name or address; for a wildcard, the suffix after `*.`. */
  host: string;
  wildcard: boolean;
  /** Undefined: DEFAULT_PORTS. */
  port?: number;
  text: string;
  /** An operator's entry: if plain, it may reach an internal address. */
  operator: boolean;
}

export class AllowEntryError extends Error {
  constructor(message: string) {
    super(message);
    this.name = 'AllowEntryError';
  }
}

const NAME_RE =
  /^(?=.{1,253}$)([a-z0-9_](?:[a-z0-9_-]{0,61}[a-z0-9_])?)(\.[a-z0-9_](?:[a-z0-9_-]{0,61}[a-z0-9_])?)*\.?$/;
const IPV6_RE = /^[0-9a-f:.]+$/;

/** One entry, checked: throws AllowEntryError with a line that says the accepted forms. */
export function parseAllowEntry(raw: string, operator = false): AllowRule {
  const text = raw.trim().toLowerCase();
  const bad = (why: string) =>
    new AllowEntryError(
      `${JSON.stringify(raw)} ${why}; use host, host:port or *.suffix (like files.example.com, 10.0.0.5:8080, *.corp.example)`,
    );
  if (text.includes('/')) throw bad('is a URL or path, not a host');
  let host = text;
  let port: number | undefined;
  const bracketed = /^\[([^\]]+)\](?::(\d+))?$/.exec(text);
  if (bracketed) {
    host = bracketed[1]!;
    if (bracketed[2] !== undefined) port = Number(bracketed[2]);
    if (!IPV6_RE.test(host)) throw bad('is not an IPv6 address in brackets');
  } else if ((text.match(/:/g) ?? []).length === 1) {
    const at = text.lastIndexOf(':');
    host = text.slice(0, at);
    if (!/^\d{1,5}$/.test(text.slice(at + 1))) throw bad('has a port that is not a number');
    port = Number(text.slice(at + 1));
  } else if (text.includes(':')) {
    if (!IPV6_RE.test(text)) throw bad('is not a host name');
  }
  if (port !== undefined && (port < 1 || port > 65535)) throw bad('has a port outside 1-65535');
  const wildcard = host.startsWith('*.');
  if (wildcard) host = host.slice(2);
  if (host.includes('*')) throw bad('has a * that is not a leading *.');
  if (!host.includes(':') && !NAME_RE.test(host)) throw bad('is not a host name');
  host = host.replace(/\.$/, '');
  return {
    host,
    wildcard,
    ...(port !== undefined ? { port } : {}),
    text: ruleText(host, wildcard, port),
    operator,
  };
}

function ruleText(host: string, wildcard: boolean, port: number | undefined): string {
  const shown = host.includes(':') ? `[${host}]` : host;
  return `${wildcard ? '*.' : ''}${shown}${port !== undefined ? `:${port}` : ''}`;
}

/** The allow list in force: what passes, and what may even reach an internal address. */
export class AllowList {
  private readonly rules: AllowRule[];

  /**
   * `operator`: the operator's entries (its allow list, its mirrors); `others`: the registries
   * and the repository's `network_allow`. Throws AllowEntryError for the first bad entry.
   */
  constructor(operator: Iterable<string>, others: Iterable<string> = []) {
    const seen = new Map<string, AllowRule>();
    for (const entry of others) {
      const rule = parseAllowEntry(entry);
      seen.set(rule.text, rule);
    }
    // An operator's entry wins over the same text from elsewhere.
    for (const entry of operator) {
      const rule = parseAllowEntry(entry, true);
      seen.set(rule.text, rule);
    }
    this.rules = [...seen.values()];
  }

  /** The entries, normalized and sorted (what the run's facts show). */
  get entries(): string[] {
    return this.rules.map((rule) => rule.text).sort();
  }

  allows(host: string, port: number): boolean {
    return this.rules.some((rule) => matches(rule, normalHost(host), port));
  }

  /** Allowed by a plain operator entry: such a host may resolve to an internal address. */
  allowsExactly(host: string, port: number): boolean {
    return this.rules.some(
      (rule) => rule.operator && !rule.wildcard && matches(rule, normalHost(host), port),
    );
  }
}

function matches(rule: AllowRule, host: string, port: number): boolean {
  const portOk = rule.port === undefined ? DEFAULT_PORTS.includes(port) : rule.port === port;
  if (!portOk) return false;
  return rule.wildcard ? host.endsWith(`.${rule.host}`) : host === rule.host;
}

function normalHost(host: string): string {
  return host
    .trim()
    .toLowerCase()
    .replace(/^\[(.*)\]$/, '$1')
    .replace(/\.$/, '');
}

/** `host:port` of a mirror URL (the port its scheme implies when it names none). */
export function mirrorEntry(url: string): string {
  const parsed = new URL(url);
  const port = parsed.port || (parsed.protocol === 'https:' ? '443' : '80');
  return `${parsed.hostname}:${port}`;
}

/** A comma-separated list (FROGNANO_SETUP_ALLOW_HOSTS), blanks dropped. */
export function splitAllowList(raw: string | undefined): string[] {
  return (raw ?? '')
    .split(',')
    .map((entry) => entry.trim())
    .filter((entry) => entry !== '');
}
