import { loadConfig } from '../src/config';

describe('content-service configuration', () => {
  const base = {
    REDIS_URL: 'redis://127.0.0.1:6379',
    S3_BUCKET: 'contents',
    S3_ACCESS_KEY_ID: 'k',
    S3_SECRET_ACCESS_KEY: 's',
  };
  const sessions = { SESSION_SERVICE_URL: 'http://session-service:8083' };
  const bearer = { JWT_ISSUER: 'https://issuer.test', JWT_JWKS_URL: 'https://issuer.test/jwks.json' };

  it('accepts sessions with their secret, Bearer with its keys, or both', () => {
    expect(() => loadConfig({ ...base, ...sessions, SESSION_SERVICE_INTERNAL_SECRET: 'x'.repeat(16) })).not.toThrow();
    expect(() => loadConfig({ ...base, ...bearer })).not.toThrow();
    expect(() =>
      loadConfig({
        ...base,
        JWT_ISSUER: 'https://issuer.test',
        JWT_JWKS_FILE: '/etc/jwks.json',
        ...sessions,
        SESSION_SERVICE_INTERNAL_SECRET: 'x'.repeat(16),
      }),
    ).not.toThrow();
  });

  it('stops on a credential set up by halves, naming the missing variable', () => {
    expect(() => loadConfig({ ...base, ...sessions })).toThrow(/SESSION_SERVICE_INTERNAL_SECRET/);
    expect(() => loadConfig({ ...base, JWT_ISSUER: 'https://issuer.test' })).toThrow(/JWT_JWKS_URL/);
    expect(() => loadConfig({ ...base, JWT_JWKS_URL: 'https://issuer.test/jwks.json' })).toThrow(/JWT_ISSUER/);
  });

  it('leaves direct transfer off unless turned on, and bounds its URL lifetime', () => {
    expect(loadConfig({ ...base, ...bearer })).toMatchObject({ DIRECT_TRANSFER: false, DIRECT_URL_SECONDS: 300 });
    expect(
      loadConfig({ ...base, ...bearer, DIRECT_TRANSFER: 'on', DIRECT_S3_ENDPOINT: 'http://s3.example:9000' }),
    ).toMatchObject({ DIRECT_TRANSFER: true, DIRECT_S3_ENDPOINT: 'http://s3.example:9000' });
    expect(() => loadConfig({ ...base, ...bearer, DIRECT_TRANSFER: 'maybe' })).toThrow(/DIRECT_TRANSFER/);
    expect(() => loadConfig({ ...base, ...bearer, DIRECT_URL_SECONDS: '0' })).toThrow(/DIRECT_URL_SECONDS/);
    expect(() => loadConfig({ ...base, ...bearer, DIRECT_S3_ENDPOINT: 'not a url' })).toThrow(/DIRECT_S3_ENDPOINT/);
  });

  it('stops without Redis, where unfinished uploads are kept, naming REDIS_URL', () => {
    const { REDIS_URL: _omitted, ...withoutRedis } = base;
    expect(() => loadConfig({ ...withoutRedis, ...bearer })).toThrow(/REDIS_URL: is required/);
  });

  describe('S3 credentials', () => {
    const noKeys = { REDIS_URL: base.REDIS_URL, S3_BUCKET: base.S3_BUCKET, ...bearer };

    it('takes no S3 keys, leaving them to the AWS default credential chain', () => {
      const c = loadConfig(noKeys);
      expect(c.S3_ACCESS_KEY_ID).toBeUndefined();
      expect(c.S3_SECRET_ACCESS_KEY).toBeUndefined();
    });

    it('takes static S3 keys as a pair', () => {
      expect(loadConfig({ ...noKeys, S3_ACCESS_KEY_ID: 'k', S3_SECRET_ACCESS_KEY: 's' })).toMatchObject({
        S3_ACCESS_KEY_ID: 'k',
        S3_SECRET_ACCESS_KEY: 's',
      });
    });

    it('stops on one S3 key without the other, naming the missing one and never showing the key', () => {
      expect(() => loadConfig({ ...noKeys, S3_ACCESS_KEY_ID: 'AKIAEXAMPLE' })).toThrow(
        /^configuration: S3_SECRET_ACCESS_KEY: is required with S3_ACCESS_KEY_ID/,
      );
      expect(() => loadConfig({ ...noKeys, S3_SECRET_ACCESS_KEY: 'very-secret' })).toThrow(
        /^configuration: S3_ACCESS_KEY_ID: is required with S3_SECRET_ACCESS_KEY/,
      );
      try {
        loadConfig({ ...noKeys, S3_SECRET_ACCESS_KEY: 'very-secret' });
      } catch (error) {
        expect(String(error)).not.toContain('very-secret');
      }
    });

    it('refuses an empty S3 key rather than reading it as unset', () => {
      expect(() => loadConfig({ ...noKeys, S3_ACCESS_KEY_ID: '', S3_SECRET_ACCESS_KEY: 's' })).toThrow(
        /S3_ACCESS_KEY_ID/,
      );
    });
  });
});
