import { describe, expect, it } from 'vitest';
import { refusedAddressReason } from '../../src/sandbox/egress-address.js';
import {
  AllowEntryError,
  AllowList,
  REGISTRY_HOSTS,
  mirrorEntry,
  parseAllowEntry,
  splitAllowList,
} from '../../src/sandbox/egress-allow.js';

describe('the setup network allow list', () => {
  it('allows a plain host on ports 80 and 443 only', () => {
    const list = new AllowList(['Files.Example.com']);
    expect(list.allows('files.example.com', 443)).toBe(true);
    expect(list.allows('FILES.example.com.', 80)).toBe(true);
    expect(list.allows('files.example.com', 8443)).toBe(false);
    expect(list.allows('example.com', 443)).toBe(false);
    expect(list.allows('evil-files.example.com', 443)).toBe(false);
  });

  it('allows host:port on that port only', () => {
    const list = new AllowList(['127.0.0.1:8080', '[::1]:9000']);
    expect(list.allows('127.0.0.1', 8080)).toBe(true);
    expect(list.allows('127.0.0.1', 80)).toBe(false);
    expect(list.allows('::1', 9000)).toBe(true);
    expect(list.allows('[::1]', 9000)).toBe(true);
    expect(list.allowsExactly('127.0.0.1', 8080)).toBe(true);
  });

  it("lets only the operator's plain entries reach internal addresses", () => {
    const list = new AllowList(['10.0.0.5:8080'], ['169.254.169.254:80', 'pypi.org']);
    expect(list.allows('169.254.169.254', 80)).toBe(true);
    expect(list.allowsExactly('169.254.169.254', 80)).toBe(false);
    expect(list.allowsExactly('pypi.org', 443)).toBe(false);
    expect(list.allowsExactly('10.0.0.5', 8080)).toBe(true);
  });

  it('allows names under a *.suffix, not the suffix itself, and never exactly', () => {
    const list = new AllowList(['*.corp.example']);
    expect(list.allows('pypi.corp.example', 443)).toBe(true);
    expect(list.allows('a.b.corp.example', 80)).toBe(true);
    expect(list.allows('corp.example', 443)).toBe(false);
    expect(list.allows('notcorp.example', 443)).toBe(false);
    expect(list.allowsExactly('pypi.corp.example', 443)).toBe(false);
  });

  it('shows its entries normalized, sorted, once each', () => {
    const list = new AllowList(['registry.npmjs.org', 'PYPI.org', 'pypi.org', '*.X.org:8443']);
    expect(list.entries).toEqual(['*.x.org:8443', 'pypi.org', 'registry.npmjs.org']);
  });

  it.each([
    ['http://example.com', 'is a URL or path, not a host'],
    ['example.com:http', 'port that is not a number'],
    ['example.com:70000', 'outside 1-65535'],
    ['ex*ample.com', 'leading *.'],
    ['', 'is not a host name'],
    ['exa mple.com', 'is not a host name'],
  ])('refuses %j with one line naming the accepted forms', (raw, why) => {
    expect(() => parseAllowEntry(raw)).toThrow(AllowEntryError);
    expect(() => parseAllowEntry(raw)).toThrow(why);
    expect(() => parseAllowEntry(raw)).toThrow('use host, host:port or *.suffix');
  });

  it('takes a mirror URL as its host:port', () => {
    expect(mirrorEntry('http://127.0.0.1:8123/simple')).toBe('127.0.0.1:8123');
    expect(mirrorEntry('https://pypi.corp.example/simple/')).toBe('pypi.corp.example:443');
    expect(mirrorEntry('http://npm.corp.example/')).toBe('npm.corp.example:80');
  });

  it('splits the operator list on commas', () => {
    expect(splitAllowList(' a.org, ,b.org:81,')).toEqual(['a.org', 'b.org:81']);
    expect(splitAllowList(undefined)).toEqual([]);
  });

  it('starts from the public registries', () => {
    const list = new AllowList(REGISTRY_HOSTS);
    expect(list.allows('registry.npmjs.org', 443)).toBe(true);
    expect(list.allows('files.pythonhosted.org', 443)).toBe(true);
    expect(list.allows('github.com', 443)).toBe(false);
  });
});

describe('the setup network address classifier', () => {
  const none = new Set<string>();
  it.each([
    ['127.0.0.1', 'loopback address'],
    ['127.8.9.10', 'loopback address'],
    ['0.0.0.0', 'loopback address'],
    ['::1', 'loopback address'],
    ['::ffff:127.0.0.1', 'loopback address'],
    ['169.254.169.254', 'link-local address'],
    ['fe80::1', 'link-local address'],
    ['fe80::1%eth0', 'link-local address'],
    ['10.1.2.3', 'private address'],
    ['172.16.0.1', 'private address'],
    ['172.31.255.255', 'private address'],
    ['192.168.1.1', 'private address'],
    ['fd00::1', 'private address'],
    ['::ffff:10.0.0.1', 'private address'],
  ])('refuses %s (%s)', (address, reason) => {
    expect(refusedAddressReason(address, none)).toBe(reason);
  });

  it.each([
    '203.0.113.7', // where registry.npmjs.org resolves on some machines: reserved, not refused
    '192.0.2.10',
    '198.51.100.1',
    '172.32.0.1',
    '151.101.0.223',
    '2606:4700::6810:84e5',
  ])('lets %s through', (address) => {
    expect(refusedAddressReason(address, none)).toBeUndefined();
  });

  it("refuses the host's own public addresses", () => {
    expect(refusedAddressReason('198.51.100.9', new Set(['198.51.100.9']))).toBe(
      'address of this host',
    );
  });
});
