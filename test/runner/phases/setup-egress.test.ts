import { describe, expect, it } from 'vitest';
import { diagnoseSetupFailure } from '../../../src/runner/phases/setup-egress.js';

describe("naming why setup's network failed a command", () => {
  it('names only what was refused while the command ran', () => {
    const before = [{ host: 'a.org', port: 443, count: 2, reason: 'not allowed' }];
    const after = [
      { host: 'a.org', port: 443, count: 2, reason: 'not allowed' },
      { host: 'example.org', port: 443, count: 1, reason: 'not allowed' },
    ];
    expect(diagnoseSetupFailure('', before, after)).toBe(
      'example.org:443 refused by the setup network; add it to network_allow',
    );
    expect(diagnoseSetupFailure('', after, after)).toBeUndefined();
  });

  it('names connections past the proxy cap as too many, not as a host to allow', () => {
    const after = [{ host: '*', port: 41000, count: 3, reason: 'too many connections' }];
    expect(diagnoseSetupFailure('', [], after)).toBe(
      'too many connections through the setup network at once; open fewer in parallel',
    );
  });

  it.each([
    [
      "HTTPSConnectionPool(host='pypi.org', port=443): Max retries exceeded (Caused by SSLError(SSLCertVerificationError(1, '[SSL: CERTIFICATE_VERIFY_FAILED] certificate verify failed: self-signed certificate in certificate chain')))",
      'pypi.org',
    ],
    [
      'npm ERR! request to https://registry.npmjs.org/is-number failed, reason: unable to get local issuer certificate',
      'registry.npmjs.org',
    ],
    ['npm ERR! code SELF_SIGNED_CERT_IN_CHAIN', 'a download'],
  ])('names an untrusted certificate: %s', (output, host) => {
    expect(diagnoseSetupFailure(output, [], [])).toBe(
      `${host}: certificate not trusted; set FROGNANO_SETUP_CA_FILE`,
    );
  });
});
