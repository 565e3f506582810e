// Logs: readable lines for a person at a terminal, JSON lines for everything else; secrets
// are redacted either way.
import { Writable } from 'node:stream';
import { describe, expect, it } from 'vitest';
import { createLogger } from '../src/log.js';
import { registerSecret } from '../src/redact.js';

function capture(): { destination: Writable; text: () => string } {
  const chunks: string[] = [];
  const destination = new Writable({
    write(chunk: Buffer, _encoding, done) {
      chunks.push(chunk.toString());
      done();
    },
  });
  return { destination, text: () => chunks.join('') };
}

describe('createLogger output format', () => {
  it('writes readable lines when asked to (a terminal)', () => {
    registerSecret('pretty-secret-value-123');
    const out = capture();
    const logger = createLogger({ level: 'info', destination: out.destination, pretty: true });
    logger.info({ runId: 'r1', detail: 'token pretty-secret-value-123' }, 'run started');
    const text = out.text();
    expect(text).toMatch(/^\[\d\d:\d\d:\d\d\.\d{3}\] INFO \(\d+\): run started\n/);
    expect(text).toContain('runId: "r1"');
    expect(text).not.toContain('pretty-secret-value-123');
    expect(() => JSON.parse(text)).toThrow();
  });

  it('writes one JSON object per line otherwise', () => {
    const out = capture();
    const logger = createLogger({ level: 'info', destination: out.destination, pretty: false });
    logger.info({ runId: 'r1' }, 'run started');
    expect(JSON.parse(out.text())).toMatchObject({ level: 30, runId: 'r1', msg: 'run started' });
  });
});
