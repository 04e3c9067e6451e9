import { loadConfig } from '../src/config';

describe('auth-service settings', () => {
  const base = {
    MONGODB_URL: 'mongodb://127.0.0.1:27017',
    REDIS_URL: 'redis://auth-service:pw@127.0.0.1:6379',
    SESSION_SERVICE_URL: 'http://session:8080',
    SESSION_SERVICE_INTERNAL_SECRET: 'a'.repeat(24),
  };

  it('takes the secret it sends and a Redis URL with a user', () => {
    expect(loadConfig(base).REDIS_URL).toBe(base.REDIS_URL);
  });

  it('names what is missing, and refuses the secrets it no longer reads', () => {
    const { SESSION_SERVICE_INTERNAL_SECRET: _, ...missing } = base;
    expect(() => loadConfig(missing)).toThrow(/SESSION_SERVICE_INTERNAL_SECRET: is required/);
    expect(() => loadConfig({ ...base, INTERNAL_SECRET: 'x'.repeat(24) })).toThrow(
      /INTERNAL_SECRET: is no longer read: set SESSION_SERVICE_INTERNAL_SECRET/,
    );
    expect(() => loadConfig({ ...base, INTERNAL_SECRET_SESSION_SERVICE: 'x'.repeat(24) })).toThrow(
      /INTERNAL_SECRET_SESSION_SERVICE: is no longer read: nothing calls the auth-service/,
    );
  });

  it('never prints a Redis URL that may carry a password', () => {
    expect(() => loadConfig({ ...base, REDIS_URL: 'http://user:hunter2@redis' })).toThrow(
      /REDIS_URL: invalid value \(hidden\)/,
    );
    expect(() => loadConfig({ ...base, REDIS_URL: 'http://user:hunter2@redis' })).not.toThrow(/hunter2/);
  });
});
