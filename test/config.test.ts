import { describe, expect, it } from 'vitest';
import {
  ConfigError,
  loadProcessConfig,
  parseByteSize,
  repoConfigCaps,
  setupNetworkEnv,
} from '../src/config.js';

describe('loadProcessConfig', () => {
  it('gives FrogNano defaults for an empty environment', () => {
    const config = loadProcessConfig({});
    expect(config.FROGNANO_MODEL_URL).toBe('http://localhost:8000/v1');
    expect(config.FROGNANO_MODEL).toBe('microsoft/FrogNano-4B-2609');
    expect(config.FROGNANO_TEMPERATURE).toBe(0.6);
    expect(config.FROGNANO_MAX_COMPLETION_TOKENS).toBe(8192);
    expect(config.FROGNANO_MAX_CONTEXT_TOKENS).toBe(131072);
    expect(config.FROGNANO_SANDBOX).toBe('docker');
    expect(config.FROGNANO_SANDBOX_MEMORY).toBe(4 * 1024 ** 3);
  });

  it('parses values and strips a trailing slash from the model URL', () => {
    const config = loadProcessConfig({
      FROGNANO_MODEL_URL: 'http://gpu-box:30000/v1/',
      FROGNANO_TEMPERATURE: '0',
      FROGNANO_SANDBOX_MEMORY: '512m',
      FROGNANO_SANDBOX: 'local',
    });
    expect(config.FROGNANO_MODEL_URL).toBe('http://gpu-box:30000/v1');
    expect(config.FROGNANO_TEMPERATURE).toBe(0);
    expect(config.FROGNANO_SANDBOX_MEMORY).toBe(512 * 1024 ** 2);
    expect(config.FROGNANO_SANDBOX).toBe('local');
  });

  it('reports every bad variable on its own line, naming what is expected', () => {
    let error: unknown;
    try {
      loadProcessConfig({
        FROGNANO_MODEL_URL: 'localhost:8000',
        FROGNANO_TEMPERATURE: 'hot',
        FROGNANO_SANDBOX_PIDS: '-3',
        FROGNANO_SANDBOX_RUNTIME: 'runsc --platform=kvm',
      });
    } catch (caught) {
      error = caught;
    }
    expect(error).toBeInstanceOf(ConfigError);
    const lines = (error as ConfigError).problems;
    expect(lines).toHaveLength(4);
    expect(lines).toContain(
      'FROGNANO_MODEL_URL must be an http(s) URL such as http://localhost:8000/v1 (got "localhost:8000")',
    );
    expect(lines).toContain('FROGNANO_TEMPERATURE must be a number from 0 to 2 (got "hot")');
    expect(lines).toContain('FROGNANO_SANDBOX_PIDS must be a positive integer (got "-3")');
    expect(lines).toContain(
      'FROGNANO_SANDBOX_RUNTIME must name a Docker runtime registered with the engine (runsc for gVisor), or runc to opt out (got "runsc --platform=kvm")',
    );
  });
});

describe('parseByteSize', () => {
  it.each([
    ['1048576', 1048576],
    ['64k', 65536],
    ['1.5g', 1.5 * 1024 ** 3],
    ['256MiB', 256 * 1024 ** 2],
  ])('%s is %d bytes', (raw, bytes) => {
    expect(parseByteSize(raw)).toBe(bytes);
  });
});

describe('operator caps on what a repository config may ask', () => {
  it('reads FROGNANO_MAX_STEPS_CAP and FROGNANO_MAX_TIMEOUT_MINUTES_CAP', () => {
    expect(repoConfigCaps({})).toEqual({});
    expect(
      repoConfigCaps({ FROGNANO_MAX_STEPS_CAP: '60', FROGNANO_MAX_TIMEOUT_MINUTES_CAP: '12.5' }),
    ).toEqual({ maxSteps: 60, timeoutMinutes: 12.5 });
  });

  it('reads FROGNANO_MAX_ATTEMPTS (1 to 8)', () => {
    expect(repoConfigCaps({ FROGNANO_MAX_ATTEMPTS: '3' })).toEqual({ attempts: 3 });
    expect(() => repoConfigCaps({ FROGNANO_MAX_ATTEMPTS: '9' })).toThrow(
      'FROGNANO_MAX_ATTEMPTS must be an integer from 1 to 8 (got "9")',
    );
  });

  it('reads FROGNANO_SETUP_NETWORK_CAP (none, registries or open; unset: no cap)', () => {
    expect(repoConfigCaps({ FROGNANO_SETUP_NETWORK_CAP: 'registries' })).toEqual({
      network: 'registries',
    });
    expect(() => repoConfigCaps({ FROGNANO_SETUP_NETWORK_CAP: 'setup' })).toThrow(
      'FROGNANO_SETUP_NETWORK_CAP must be none, registries or open (got "setup")',
    );
  });

  it('names a bad cap', () => {
    expect(() => loadProcessConfig({ FROGNANO_MAX_STEPS_CAP: '0' })).toThrow(
      'FROGNANO_MAX_STEPS_CAP must be a positive integer (got "0")',
    );
    expect(() => repoConfigCaps({ FROGNANO_MAX_TIMEOUT_MINUTES_CAP: 'soon' })).toThrow(
      'FROGNANO_MAX_TIMEOUT_MINUTES_CAP must be a positive number of minutes (got "soon")',
    );
  });
});

describe("setup's network settings", () => {
  it('reads the mirrors, the allow list, the CA file and the secrets', () => {
    expect(
      setupNetworkEnv({
        FROGNANO_PIP_INDEX_URL: 'http://127.0.0.1:8123/simple',
        FROGNANO_NPM_REGISTRY: 'https://npm.corp.example/',
        FROGNANO_SETUP_ALLOW_HOSTS: 'files.corp.example, *.corp.example,10.0.0.5:8080',
        FROGNANO_SETUP_CA_FILE: '/etc/corp-ca.pem',
        FROGNANO_SETUP_SECRETS: 'NPM_TOKEN, PIP_EXTRA_INDEX_URL',
      }),
    ).toEqual({
      FROGNANO_PIP_INDEX_URL: 'http://127.0.0.1:8123/simple',
      FROGNANO_NPM_REGISTRY: 'https://npm.corp.example/',
      FROGNANO_SETUP_ALLOW_HOSTS: ['files.corp.example', '*.corp.example', '10.0.0.5:8080'],
      FROGNANO_SETUP_CA_FILE: '/etc/corp-ca.pem',
      FROGNANO_SETUP_SECRETS: ['NPM_TOKEN', 'PIP_EXTRA_INDEX_URL'],
    });
  });

  it('names each bad one with what to write instead', () => {
    expect(() => setupNetworkEnv({ FROGNANO_PIP_INDEX_URL: 'pypi.corp/simple' })).toThrow(
      'FROGNANO_PIP_INDEX_URL must be an http:// or https:// URL (got "pypi.corp/simple")',
    );
    expect(() => setupNetworkEnv({ FROGNANO_SETUP_ALLOW_HOSTS: 'a.org,https://b.org' })).toThrow(
      'FROGNANO_SETUP_ALLOW_HOSTS has an entry "https://b.org" is a URL or path, not a host; use host, host:port or *.suffix',
    );
    expect(() => setupNetworkEnv({ FROGNANO_SETUP_SECRETS: 'NPM-TOKEN' })).toThrow(
      'FROGNANO_SETUP_SECRETS must be variable names separated by commas',
    );
    expect(() => loadProcessConfig({ FROGNANO_SETUP_NETWORK_CAP: 'all' })).toThrow(
      'FROGNANO_SETUP_NETWORK_CAP must be none, registries or open (got "all")',
    );
  });
});
