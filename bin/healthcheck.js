#!/usr/bin/env node
// The image's HEALTHCHECK: healthy while this container's App answers `GET /ping` with PONG, on
// PORT (start, serve: the webhook server) or on FROGNANO_METRICS_PORT (worker: its own small
// server). Plain node and no dependency: the image has no curl.
/* global fetch, AbortSignal */
const env = process.env;
const wildcard = !env.HOST || env.HOST === '0.0.0.0' || env.HOST === '::';
const host = wildcard ? '127.0.0.1' : env.HOST.includes(':') ? `[${env.HOST}]` : env.HOST;
const ports = [env.PORT || '3000', env.FROGNANO_METRICS_PORT || '9464'].filter((p) => p !== '0');

async function ping(port) {
  const response = await fetch(`http://${host}:${port}/ping`, {
    signal: AbortSignal.timeout(4000),
  });
  if ((await response.text()) !== 'PONG') throw new Error(`no PONG on port ${port}`);
}

Promise.any(ports.map(ping)).then(
  () => process.exit(0),
  () => {
    // Docker keeps this in `docker inspect`'s health log.
    console.error(`unhealthy: no PONG from GET /ping at ${host} on port ${ports.join(' or ')}`);
    process.exit(1);
  },
);
