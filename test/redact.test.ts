import { describe, expect, it } from 'vitest';
import { Writable } from 'node:stream';
import {
  MAX_REGISTERED_SECRETS,
  redactCredentials,
  redactSecrets,
  registerSecret,
  registeredSecretCount,
} from '../src/redact.js';
import { createLogger } from '../src/log.js';

describe('redactSecrets', () => {
  it('scrubs registered secrets and well-known token shapes', () => {
    registerSecret('s3cret-model-key-123');
    const text = [
      'key s3cret-model-key-123 used',
      'token ghs_abcdefghijklmnopqrstuvwxyz0123456789',
      'url https://x-access-token:ghs_zzzzzzzzzzzzzzzzzzzzzzzz@github.com/o/r.git',
      'Authorization: Basic eC1hY2Nlc3MtdG9rZW46Z2hz',
    ].join('\n');
    const out = redactSecrets(text);
    expect(out).not.toContain('s3cret-model-key-123');
    expect(out).not.toContain('ghs_');
    expect(out).not.toContain('eC1hY2Nlc3MtdG9rZW46Z2hz');
    expect(out).toContain('https://x-access-token:[REDACTED]@github.com/o/r.git');
    expect(out).toContain('Authorization: Basic [REDACTED]');
  });

  it('remembers a bounded number of secrets, the most recently registered ones', () => {
    registerSecret('long-lived-model-api-key');
    for (let i = 0; i < MAX_REGISTERED_SECRETS * 3; i += 1) {
      registerSecret(`installation-token-${i}-abcdef`);
      if (i % 1000 === 0) registerSecret('long-lived-model-api-key');
    }
    registerSecret('long-lived-model-api-key');
    expect(registeredSecretCount()).toBeLessThanOrEqual(MAX_REGISTERED_SECRETS);
    const last = `installation-token-${MAX_REGISTERED_SECRETS * 3 - 1}-abcdef`;
    expect(redactSecrets(`a ${last} b long-lived-model-api-key`)).toBe('a [REDACTED] b [REDACTED]');
  });

  it('replaces a short credential only where it stands alone, and never one of 1-2 characters', () => {
    registerSecret('zq4', { short: true });
    registerSecret('xy', { short: true });
    registerSecret('shortpw');
    expect(redactSecrets('key zq4, "zq4", user:zq4@host; zq42 and azq4 stay')).toBe(
      'key [REDACTED], "[REDACTED]", user:[REDACTED]@host; zq42 and azq4 stay',
    );
    // Without `short`, a short value is not a secret of the process (a setup variable's "1").
    expect(redactSecrets('xy shortpw')).toBe('xy shortpw');
  });

  it("redacts an endpoint's own credentials in its text however short", () => {
    const credentials = ['user:p', 'dXNlcjpw', 'p'];
    expect(
      redactCredentials(
        'upstream http://user:p@gw saw Basic dXNlcjpw, password p; kept: pytest passed',
        credentials,
      ),
    ).toBe(
      'upstream http://[REDACTED]@gw saw Basic [REDACTED], password [REDACTED]; kept: pytest passed',
    );
  });

  it('leaves ordinary text alone', () => {
    expect(redactSecrets('pytest passed in 0.3s')).toBe('pytest passed in 0.3s');
  });
});

describe('createLogger', () => {
  it('redacts secret fields and registered secrets inside messages', () => {
    registerSecret('installation-token-value-xyz');
    const lines: string[] = [];
    const destination = new Writable({
      write(chunk: Buffer, _encoding, done) {
        lines.push(chunk.toString());
        done();
      },
    });
    const logger = createLogger({ level: 'info', destination });
    logger.info({ token: 'abc', detail: 'saw installation-token-value-xyz' }, 'cloned');
    const line = lines.join('');
    expect(line).toContain('"msg":"cloned"');
    expect(line).not.toContain('"abc"');
    expect(line).not.toContain('installation-token-value-xyz');
  });
});
