import { DEFAULT_URL_POLICY, isPublicAddress, refuseUrl } from '../../src/webhooks/urlPolicy';

describe('which addresses a webhook may reach', () => {
  it.each([
    ['8.8.8.8', true],
    ['1.1.1.1', true],
    ['127.0.0.1', false],
    ['10.1.2.3', false],
    ['172.16.0.1', false],
    ['172.31.255.255', false],
    ['172.32.0.1', true],
    ['192.168.1.1', false],
    ['169.254.169.254', false],
    ['100.64.0.1', false],
    ['0.0.0.0', false],
    ['224.0.0.1', false],
    ['255.255.255.255', false],
    ['2606:4700:4700::1111', true],
    ['::1', false],
    ['::', false],
    ['fe80::1', false],
    ['fc00::1', false],
    ['fd12:3456::1', false],
    ['ff02::1', false],
    ['::ffff:127.0.0.1', false],
    ['::ffff:7f00:1', false],
    ['::ffff:10.0.0.1', false],
    ['::ffff:8.8.8.8', true],
    ['64:ff9b::a9fe:a9fe', false],
    ['64:ff9b:1::a9fe:a9fe', false], // NAT64, local use
    ['::ffff:0:a9fe:a9fe', false], // IPv4-translated
    ['2002:a9fe:a9fe::1', false], // 6to4 of 169.254.169.254
    ['2002:808:808::1', true], // 6to4 of 8.8.8.8
    ['[::1]', false],
    ['not-an-address', false],
  ])('%s is public: %s', (address, expected) => {
    expect(isPublicAddress(address)).toBe(expected);
  });
});

describe('which receiver URLs are registered', () => {
  const strict = DEFAULT_URL_POLICY;
  const local = { ...strict, allowHttp: true, allowPrivate: true };

  it.each([
    ['https://example.com/hook', null],
    ['https://8.8.8.8/hook', null],
    ['http://example.com/hook', /https/],
    ['ftp://example.com/hook', /https/],
    ['not a url', /absolute/],
    ['https://user:pw@example.com/', /user name/],
    ['https://127.0.0.1/hook', /private/],
    ['https://[::1]/hook', /private/],
    ['https://[::ffff:192.168.0.1]/hook', /private/],
    ['https://169.254.169.254/latest', /private/],
    ['https://localhost/hook', /loopback/],
    ['https://localhost./hook', /loopback/],
    ['https://foo.localhost./hook', /loopback/],
    [`https://example.com/${'a'.repeat(2048)}`, /longer/],
  ])('%s under the default policy: %s', (url, refusal) => {
    const refused = refuseUrl(url, strict);
    if (refusal === null) expect(refused).toBeNull();
    else expect(refused).toMatch(refusal);
  });

  it('allows http and private addresses only when configured', () => {
    expect(refuseUrl('http://127.0.0.1:8080/hook', local)).toBeNull();
    expect(refuseUrl('http://127.0.0.1:8080/hook', { ...strict, allowHttp: true })).toMatch(/private/);
  });
});
