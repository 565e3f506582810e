// What setup's network did, as a run records it and the pull request shows it (issue 25): the
// mode in force, the hosts the egress proxy let through, and every connection it refused.
// Filled by the egress proxy (sandbox/egress-proxy*), read by the run's evidence (Environment).

/** `none`: no network; `registries`: only through the bot's egress proxy; `open`: a bridge. */
export type SetupNetworkMode = 'none' | 'registries' | 'open';

/** One refused destination, counted over the whole setup. */
export interface BlockedConnection {
  host: string;
  port: number;
  count: number;
  /** Why, in a few words: `not allowed`, `private address`, `link-local address`, … */
  reason: string;
}

export interface EgressFacts {
  mode: SetupNetworkMode;
  /** The allow list in force (`pypi.org`, `*.example.com`, `127.0.0.1:8080`, …), sorted. */
  allowedHosts: string[];
  blocked: BlockedConnection[];
  /** What the repository asked for when the operator's FROGNANO_SETUP_NETWORK_CAP lowered it. */
  cappedFrom?: SetupNetworkMode;
}
