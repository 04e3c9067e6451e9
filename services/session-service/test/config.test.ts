import { loadConfig } from '../src/config';

describe('session-service settings', () => {
  const base = {
    MONGODB_URL: 'mongodb://127.0.0.1:27017',
    REDIS_URL: 'redis://127.0.0.1:6379',
    INTERNAL_SECRET_AUTH_SERVICE: 'a'.repeat(24),
    INTERNAL_SECRET_CONTENT_SERVICE: 'c'.repeat(24),
  };

  it('takes one secret per caller, with rate limits on by default, and reads the registry from the auth database', () => {
    const c = loadConfig(base);
    expect(c.RATE_LIMIT_ENABLED).toBe(true);
    expect(c.TRUSTED_PROXY_HOPS).toBe(1);
    expect([c.MONGODB_DATABASE, c.REGISTRY_MONGODB_DATABASE]).toEqual(['sessions', 'auth']);
  });

  it('calls no other service: refuses the auth-service settings it once read, and the registry in its own database', () => {
    for (const variable of ['AUTH_SERVICE_URL', 'AUTH_SERVICE_INTERNAL_SECRET'])
      expect(() => loadConfig({ ...base, [variable]: 's'.repeat(24) })).toThrow(
        new RegExp(`${variable}: is no longer read: the session-service no longer calls the auth-service`),
      );
    expect(() => loadConfig({ ...base, REGISTRY_MONGODB_DATABASE: 'sessions' })).toThrow(
      /REGISTRY_MONGODB_DATABASE: must name the auth-service's database/,
    );
  });

  it('names a missing or short secret without printing its value', () => {
    const { INTERNAL_SECRET_CONTENT_SERVICE: _, ...missing } = base;
    expect(() => loadConfig(missing)).toThrow(/INTERNAL_SECRET_CONTENT_SERVICE: is required/);
    expect(() => loadConfig({ ...base, INTERNAL_SECRET_AUTH_SERVICE: 'short-secret' })).toThrow(
      /INTERNAL_SECRET_AUTH_SERVICE: invalid value \(hidden\)/,
    );
    expect(() => loadConfig({ ...base, INTERNAL_SECRET_AUTH_SERVICE: 'short-secret' })).not.toThrow(/short-secret/);
  });

  it('refuses one secret for two callers, and the old shared INTERNAL_SECRET', () => {
    expect(() => loadConfig({ ...base, INTERNAL_SECRET_CONTENT_SERVICE: base.INTERNAL_SECRET_AUTH_SERVICE })).toThrow(
      /INTERNAL_SECRET_CONTENT_SERVICE: must differ/,
    );
    expect(() => loadConfig({ ...base, INTERNAL_SECRET: 'x'.repeat(24) })).toThrow(
      /INTERNAL_SECRET: is no longer read/,
    );
  });

  it('reads the rate-limit settings', () => {
    const c = loadConfig({
      ...base,
      RATE_LIMIT_ENABLED: 'false',
      RATE_LIMIT_PER_KEY_POINTS: '0',
      TRUSTED_PROXY_HOPS: '2',
    });
    expect([c.RATE_LIMIT_ENABLED, c.RATE_LIMIT_PER_KEY_POINTS, c.TRUSTED_PROXY_HOPS]).toEqual([false, 0, 2]);
    expect(() => loadConfig({ ...base, RATE_LIMIT_PER_ADDRESS_POINTS: '-1' })).toThrow(/RATE_LIMIT_PER_ADDRESS_POINTS/);
  });
});
