import { env, parseEnv } from '../src';

describe('parseEnv', () => {
  const shape = {
    LIST: env.list('RS256,ES256'),
    FLAG: env.bool(true),
    PORT: env.port(8080),
    SOME_SECRET: env.secret(),
  };
  const secret = { SOME_SECRET: 's'.repeat(16) };

  it('parses defaults like given values (a list default becomes an array, a flag a boolean)', () => {
    expect(parseEnv(shape, secret)).toEqual({
      LIST: ['RS256', 'ES256'],
      FLAG: true,
      PORT: 8080,
      SOME_SECRET: 's'.repeat(16),
    });
    expect(parseEnv(shape, { ...secret, LIST: ' a, b ,,', FLAG: 'no', PORT: '81' })).toMatchObject({
      LIST: ['a', 'b'],
      FLAG: false,
      PORT: 81,
    });
  });

  it('names the missing or malformed variable and never echoes a secret', () => {
    expect(() => parseEnv(shape, {})).toThrow(/^configuration: SOME_SECRET: is required/);
    expect(() => parseEnv(shape, { ...secret, PORT: '70000' })).toThrow(/^configuration: PORT: invalid value "70000"/);
    expect(() => parseEnv(shape, { SOME_SECRET: 'short-one' })).toThrow(
      /^configuration: SOME_SECRET: invalid value \(hidden\): must be at least 16/,
    );
  });

  it('takes http(s) URLs and refuses other text', () => {
    const urls = { U: env.url() };
    expect(parseEnv(urls, { U: 'http://gateway:8080' }).U).toBe('http://gateway:8080');
    expect(() => parseEnv(urls, { U: 'not a url' })).toThrow(/^configuration: U: invalid value "not a url"/);
  });
});
