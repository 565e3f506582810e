// The setup network's egress proxy (issue 25): an HTTP proxy on the host that a setup container
// in `registries` mode reaches and nothing else. CONNECT tunnels https, absolute-URI requests
// forward plain http (mirrors on http). It lets through only what the allow list names, resolves
// names itself and connects to the very address it checked (no second lookup to rebind), never
// to the host, link-local or private addresses unless that exact host is allowed. Every refusal
// is answered at once with a 403 whose status line says what to do (clients fail fast instead
// of retrying), and counted in the facts. A setup holds at most so many connections at once
// (past the cap a 503, counted too), and a tunnel that carries no byte either way for its idle
// time is cut: a setup must not pin the bot's sockets.
import { lookup } from 'node:dns/promises';
import {
  createServer,
  request as httpRequest,
  type IncomingMessage,
  type Server,
  type ServerResponse,
} from 'node:http';
import { connect, isIP, type AddressInfo, type Socket } from 'node:net';
import type { Duplex } from 'node:stream';
import type { Logger } from '../log.js';
import { refusedAddressReason, ownAddresses } from './egress-address.js';
import type { AllowList } from './egress-allow.js';
import type { BlockedConnection, EgressFacts } from './egress-facts.js';

/** How long a connection to an allowed destination may take to open. */
const CONNECT_TIMEOUT_MS = 15_000;
/** Client connections one proxy holds at once (a package manager opens tens, not hundreds). */
const MAX_CONNECTIONS = 256;
/** A tunnel with no byte either way for this long is cut. */
const IDLE_TIMEOUT_MS = 5 * 60_000;

export interface EgressProxyOptions {
  allow: AllowList;
  /** The address to listen on (the setup network's gateway); port 0 picks one. */
  host: string;
  port?: number;
  log: Logger;
  /** Another resolver than the system's (tests name hosts this machine's DNS does not know). */
  resolve?: (host: string) => Promise<string[]>;
  /**
   * When the bot runs in a sibling container: the engine host's own addresses and the subnets
   * of the bot container's networks, refused like this host's (engine-host-addresses.ts).
   */
  engineHost?: { addresses: readonly string[]; subnets: readonly string[] };
  /** Client connections at once (default 256); past it a 503, counted. */
  maxConnections?: number;
  /** A tunnel idle this long either way is cut (default 5 minutes). */
  idleTimeoutMs?: number;
}

export interface EgressProxy {
  /** `http://host:port`, as the container's HTTP(S)_PROXY. */
  readonly url: string;
  readonly port: number;
  /** The facts so far: the allow list and every refusal with its count. */
  facts(): EgressFacts;
  /** Refusals so far (all counts summed): a command's share is the difference. */
  refusals(): number;
  /** Stops listening and cuts every tunnel. Idempotent. */
  close(): Promise<void>;
}

type Verdict = { address: string } | { refused: string } | { failed: string };

/** Starts the proxy; resolves once it listens. */
export async function startEgressProxy(options: EgressProxyOptions): Promise<EgressProxy> {
  const state = new ProxyState(options);
  const server = createServer((req, res) => {
    if (state.turnedAway(req.socket)) return void res.destroy();
    state.forward(req, res).catch((error: unknown) => {
      options.log.warn({ err: String(error) }, 'egress proxy request failed');
      if (!res.headersSent) res.writeHead(502).end();
      else res.destroy();
    });
  });
  server.on('connect', (req: IncomingMessage, socket: Duplex, head: Buffer) => {
    if (state.turnedAway(req.socket)) return void socket.destroy();
    state.tunnel(req, socket as Socket, head).catch((error: unknown) => {
      options.log.warn({ err: String(error) }, 'egress proxy tunnel failed');
      socket.destroy();
    });
  });
  await listen(server, options.host, options.port ?? 0);
  const { port } = server.address() as AddressInfo;
  server.on('connection', (socket: Socket) => state.admit(socket, port));
  const shown = options.host.includes(':') ? `[${options.host}]` : options.host;
  let closing: Promise<void> | undefined;
  return {
    url: `http://${shown}:${port}`,
    port,
    facts: () => state.facts(),
    refusals: () => state.refusalCount(),
    close: () => (closing ??= state.closeAll(server)),
  };
}

function listen(server: Server, host: string, port: number): Promise<void> {
  return new Promise((resolve, reject) => {
    server.once('error', reject);
    server.listen({ host, port, exclusive: true }, () => {
      server.off('error', reject);
      resolve();
    });
  });
}

class ProxyState {
  private readonly blocked = new Map<string, BlockedConnection>();
  private readonly sockets = new Set<Socket>();
  private readonly hostAddresses: ReadonlySet<string>;
  private readonly hostSubnets: readonly string[];
  private clients = 0;
  /** Connections past the cap: the HTTP parser may still read a request from one. */
  private readonly turned = new WeakSet<Socket>();

  constructor(private readonly options: EgressProxyOptions) {
    this.hostAddresses = new Set([
      ...ownAddresses(),
      ...(options.engineHost?.addresses ?? []).map((a) => a.toLowerCase()),
    ]);
    this.hostSubnets = options.engineHost?.subnets ?? [];
  }

  /** A client's connection: tracked, or past the cap answered with a 503 and counted. */
  admit(socket: Socket, proxyPort: number): void {
    const cap = this.options.maxConnections ?? MAX_CONNECTIONS;
    if (this.clients >= cap) {
      this.record('*', proxyPort, 'too many connections');
      this.options.log.warn({ cap }, 'egress proxy refused a connection past its cap');
      this.turned.add(socket);
      socket.on('error', () => undefined);
      socket.end(
        statusLine(503, `too many connections through the setup network (at most ${cap} at once)`),
      );
      return;
    }
    this.clients++;
    socket.once('close', () => this.clients--);
    this.track(socket);
  }

  track(socket: Socket): void {
    // A kept-alive upstream socket serves many requests: one listener for all of them.
    if (this.sockets.has(socket)) return;
    this.sockets.add(socket);
    socket.once('close', () => this.sockets.delete(socket));
  }

  turnedAway(socket: Socket): boolean {
    return this.turned.has(socket);
  }

  facts(): EgressFacts {
    const blocked = [...this.blocked.values()]
      .map((entry) => ({ ...entry }))
      .sort((a, b) => a.host.localeCompare(b.host) || a.port - b.port);
    return { mode: 'registries', allowedHosts: this.options.allow.entries, blocked };
  }

  refusalCount(): number {
    let sum = 0;
    for (const entry of this.blocked.values()) sum += entry.count;
    return sum;
  }

  /** CONNECT host:port: a raw tunnel to the checked address, or a 403 that says why not. */
  async tunnel(req: IncomingMessage, client: Socket, head: Buffer): Promise<void> {
    const target = parseAuthority(req.url ?? '');
    if (!target) return void client.end(statusLine(400, 'CONNECT needs host:port'));
    const verdict = await this.judge(target.host, target.port);
    if ('refused' in verdict) return void client.end(refusal(target, verdict.refused));
    if ('failed' in verdict) return void client.end(statusLine(502, verdict.failed));
    const upstream = connect({ host: verdict.address, port: target.port });
    this.track(upstream);
    upstream.setTimeout(CONNECT_TIMEOUT_MS, () => upstream.destroy(new Error('connect timed out')));
    let connected = false;
    upstream.once('connect', () => {
      connected = true;
      upstream.setTimeout(0);
      // Bytes either way pass through the client's socket: its idle time is the tunnel's.
      client.setTimeout(this.options.idleTimeoutMs ?? IDLE_TIMEOUT_MS, () => {
        this.options.log.info(
          { host: target.host, port: target.port },
          'egress proxy cut an idle tunnel',
        );
        client.destroy();
        upstream.destroy();
      });
      client.write('HTTP/1.1 200 Connection Established\r\n\r\n');
      if (head.length > 0) upstream.write(head);
      upstream.pipe(client);
      client.pipe(upstream);
    });
    upstream.once('error', (error) => {
      if (client.writable && !connected)
        client.end(statusLine(502, `${target.host}:${target.port}: ${error.message}`));
      else client.destroy();
    });
    client.once('error', () => upstream.destroy());
    client.once('close', () => upstream.destroy());
  }

  /** A plain-http request in absolute form (`GET http://host/path`), forwarded as it came. */
  async forward(req: IncomingMessage, res: ServerResponse): Promise<void> {
    let url: URL;
    try {
      url = new URL(req.url ?? '');
    } catch {
      return void res.writeHead(400, 'a proxy request needs an absolute http:// URL').end();
    }
    if (url.protocol !== 'http:')
      return void res.writeHead(400, 'only http:// is forwarded; https goes through CONNECT').end();
    const target = { host: url.hostname.replace(/^\[(.*)\]$/, '$1'), port: Number(url.port || 80) };
    const verdict = await this.judge(target.host, target.port);
    if ('refused' in verdict) {
      const text = refusalText(target, verdict.refused);
      return void res.writeHead(403, text, { 'content-type': 'text/plain' }).end(`${text}\n`);
    }
    if ('failed' in verdict) return void res.writeHead(502, verdict.failed).end();
    const headers = { ...req.headers };
    delete headers['proxy-connection'];
    delete headers['proxy-authorization'];
    const upstream = httpRequest({
      host: verdict.address,
      port: target.port,
      method: req.method,
      path: `${url.pathname}${url.search}`,
      headers: { ...headers, host: url.host },
      timeout: CONNECT_TIMEOUT_MS,
    });
    upstream.once('socket', (socket) => this.track(socket));
    upstream.once('timeout', () => upstream.destroy(new Error('upstream timed out')));
    upstream.once('response', (answer) => {
      res.writeHead(answer.statusCode ?? 502, answer.statusMessage, answer.headers);
      answer.pipe(res);
    });
    upstream.once('error', (error) => {
      if (!res.headersSent) res.writeHead(502, reasonPhrase(error.message)).end();
      else res.destroy();
    });
    req.pipe(upstream);
  }

  /** Allowed, resolved, and every address it resolves to acceptable: the address to use. */
  private async judge(host: string, port: number): Promise<Verdict> {
    const { allow } = this.options;
    if (!allow.allows(host, port)) return this.refuse(host, port, 'not allowed');
    let addresses: string[];
    try {
      addresses = isIP(host) ? [host] : await (this.options.resolve ?? systemResolve)(host);
    } catch (error) {
      return {
        failed: `${host}: name not resolved (${(error as { code?: string }).code ?? 'error'})`,
      };
    }
    if (!allow.allowsExactly(host, port)) {
      // One bad address refuses the name: a client could be steered to any of them.
      for (const address of addresses) {
        const reason = refusedAddressReason(address, this.hostAddresses, this.hostSubnets);
        if (reason) return this.refuse(host, port, reason);
      }
    }
    const first = addresses[0];
    return first ? { address: first } : { failed: `${host}: name not resolved` };
  }

  private refuse(host: string, port: number, reason: string): Verdict {
    this.record(host, port, reason);
    this.options.log.info({ host, port, reason }, 'setup network refused a connection');
    return { refused: reason };
  }

  private record(host: string, port: number, reason: string): void {
    const key = `${host}\n${port}\n${reason}`;
    const entry = this.blocked.get(key) ?? { host, port, count: 0, reason };
    entry.count++;
    this.blocked.set(key, entry);
  }

  async closeAll(server: Server): Promise<void> {
    const closed = new Promise<void>((resolve) => server.close(() => resolve()));
    for (const socket of this.sockets) socket.destroy();
    await closed;
  }
}

async function systemResolve(host: string): Promise<string[]> {
  return (await lookup(host, { all: true, order: 'ipv4first' })).map((a) => a.address);
}

function parseAuthority(authority: string): { host: string; port: number } | undefined {
  const match = /^(?:\[([^\]]+)\]|([^:[\]]+)):(\d{1,5})$/.exec(authority);
  if (!match) return undefined;
  const port = Number(match[3]);
  if (port < 1 || port > 65535) return undefined;
  return { host: (match[1] ?? match[2]!).toLowerCase(), port };
}

/** What a refused client prints: the destination, that the setup network refused it, the fix. */
export function refusalText(target: { host: string; port: number }, reason: string): string {
  const where = target.host.includes(':') ? `[${target.host}]` : target.host;
  return `${where}:${target.port} refused by the setup network (${reason}); add it to network_allow`;
}

function refusal(target: { host: string; port: number }, reason: string): string {
  return statusLine(403, refusalText(target, reason));
}

function statusLine(code: number, text: string): string {
  const line = reasonPhrase(text);
  return `HTTP/1.1 ${code} ${line}\r\nContent-Type: text/plain\r\nContent-Length: ${Buffer.byteLength(line) + 1}\r\nConnection: close\r\n\r\n${line}\n`;
}

/** An HTTP status line's reason phrase: control characters as spaces, at most 300 of them. */
function reasonPhrase(text: string): string {
  // eslint-disable-next-line no-control-regex -- a status line holds no control characters
  return text.replace(/[\u0000-\u001f\u007f]+/g, ' ').slice(0, 300);
}
