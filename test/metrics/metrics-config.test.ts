import { describe, expect, it } from 'vitest';
import { ConfigError, loadProcessConfig } from '../../src/config.js';

describe('FROGNANO_METRICS_PORT', () => {
  it('defaults to 9464, takes 0 (off) and any TCP port', () => {
    expect(loadProcessConfig({}).FROGNANO_METRICS_PORT).toBe(9464);
    expect(loadProcessConfig({ FROGNANO_METRICS_PORT: '0' }).FROGNANO_METRICS_PORT).toBe(0);
    expect(loadProcessConfig({ FROGNANO_METRICS_PORT: '65535' }).FROGNANO_METRICS_PORT).toBe(65535);
  });

  it('refuses what is not a port, naming the variable', () => {
    for (const bad of ['65536', '-1', '94.64', 'metrics']) {
      const error = (() => {
        try {
          loadProcessConfig({ FROGNANO_METRICS_PORT: bad });
        } catch (e) {
          return e;
        }
      })();
      expect(error, bad).toBeInstanceOf(ConfigError);
      expect((error as ConfigError).problems, bad).toEqual([
        `FROGNANO_METRICS_PORT must be a TCP port (1-65535), or 0 for no metrics server (got "${bad}")`,
      ]);
    }
  });
});
