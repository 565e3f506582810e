import { Writable } from 'node:stream';
import { describe, expect, it } from 'vitest';
import { capLogLine, createLogger, MAX_LOG_LINE, serializeError } from '../src/log.js';

function capture() {
  const lines: string[] = [];
  const sink = new Writable({
    write(chunk: Buffer, _enc, done) {
      lines.push(...chunk.toString('utf8').split('\n').filter(Boolean));
      done();
    },
  });
  return { lines, log: createLogger({ level: 'debug', destination: sink }) };
}

describe('log lines', () => {
  it('drop the payload @octokit/webhooks attaches to a rejected delivery, keep the rest', () => {
    const error = Object.assign(new Error('signature does not match event payload and secret'), {
      status: 400,
      event: {
        id: 'd-1',
        name: 'issues',
        payload: `{"evil":"${'p'.repeat(5000)}"}`,
        signature: 's',
      },
    });
    const aggregate = Object.assign(new AggregateError([error], error.message), {
      event: error.event,
    });
    const { lines, log } = capture();
    log.error(error);
    log.error({ err: aggregate }, 'rejected');
    expect(lines).toHaveLength(2);
    for (const line of lines) {
      expect(line).not.toContain('evil');
      expect(line).toContain('d-1');
      expect(line).toMatch(/\[omitted: 50\d\d characters\]/);
    }
    expect(serializeError('not an error')).toBe('not an error');
  });

  it('replace a line over the cap by a valid JSON line saying so', () => {
    const { lines, log } = capture();
    log.info({ big: 'y'.repeat(3 * MAX_LOG_LINE) }, 'huge');
    expect(lines).toHaveLength(1);
    expect(lines[0]!.length).toBeLessThanOrEqual(MAX_LOG_LINE);
    const parsed = JSON.parse(lines[0]!) as Record<string, unknown>;
    expect(parsed).toMatchObject({ level: 30, msg: 'log line cut' });
    expect(parsed.length).toBeGreaterThan(3 * MAX_LOG_LINE);
    expect(capLogLine('short\n')).toBe('short\n');
  });
});
