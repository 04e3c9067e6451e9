import { parseEnv, redisSettings, redisTarget } from '../src';

const target = (env: NodeJS.ProcessEnv, optional = false) => redisTarget(parseEnv(redisSettings(), env), { optional });

describe('redisTarget', () => {
  it('is REDIS_URL as given, or nothing for a service that may run without Redis', () => {
    expect(target({ REDIS_URL: 'redis://user:pw@redis:6379' })).toBe('redis://user:pw@redis:6379');
    expect(target({}, true)).toBeNull();
    expect(() => target({})).toThrow(
      /^configuration: REDIS_URL: is required \(or REDIS_SENTINELS with REDIS_SENTINEL_MASTER\)/,
    );
  });

  it('is Sentinel with the master name and the service user from REDIS_SENTINELS, REDIS_SENTINEL_MASTER, REDIS_USERNAME, REDIS_PASSWORD', () => {
    expect(
      target({
        REDIS_SENTINELS: 'sentinel-0:26379, 10.0.0.2:26380,[::1]:26379',
        REDIS_SENTINEL_MASTER: 'mymaster',
        REDIS_USERNAME: 'auth-service',
        REDIS_PASSWORD: 'pw',
      }),
    ).toEqual({
      sentinels: [
        { host: 'sentinel-0', port: 26379 },
        { host: '10.0.0.2', port: 26380 },
        { host: '::1', port: 26379 },
      ],
      master: 'mymaster',
      username: 'auth-service',
      password: 'pw',
      sentinelPassword: undefined,
    });
  });

  it('names the variable that is missing or wrong', () => {
    const sentinels = { REDIS_SENTINELS: 'sentinel-0:26379' };
    expect(() => target(sentinels)).toThrow(/^configuration: REDIS_SENTINEL_MASTER: is required with REDIS_SENTINELS/);
    expect(() => target({ ...sentinels, REDIS_SENTINEL_MASTER: 'm', REDIS_URL: 'redis://redis:6379' })).toThrow(
      /^configuration: REDIS_URL: set either/,
    );
    expect(() => target({ REDIS_SENTINELS: 'sentinel-0', REDIS_SENTINEL_MASTER: 'm' })).toThrow(
      /^configuration: REDIS_SENTINELS: entry "sentinel-0" is not host:port/,
    );
    expect(() => target({ REDIS_SENTINELS: 'sentinel-0:70000', REDIS_SENTINEL_MASTER: 'm' })).toThrow(
      /^configuration: REDIS_SENTINELS: entry "sentinel-0:70000"/,
    );
    expect(() => target({ ...sentinels, REDIS_SENTINEL_MASTER: 'm', REDIS_PASSWORD: 'pw' })).toThrow(
      /^configuration: REDIS_USERNAME: is required with REDIS_PASSWORD/,
    );
    expect(() => target({ REDIS_URL: 'redis://redis:6379', REDIS_SENTINEL_MASTER: 'm' })).toThrow(
      /^configuration: REDIS_SENTINEL_MASTER: is read only with REDIS_SENTINELS/,
    );
  });

  it('never prints the Redis password', () => {
    expect(() => parseEnv(redisSettings(), { REDIS_PASSWORD: '' })).toThrow(/REDIS_PASSWORD: invalid value \(hidden\)/);
  });
});
