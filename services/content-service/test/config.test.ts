import { loadConfig } from '../src/config';

describe('content-service configuration', () => {
  const base = { MONGODB_URL: 'mongodb://127.0.0.1:27017', S3_BUCKET: 'contents', S3_ACCESS_KEY_ID: 'k', S3_SECRET_ACCESS_KEY: 's' };
  const sessions = { SESSION_SERVICE_URL: 'http://session-service:8083' };
  const bearer = { JWT_ISSUER: 'https://issuer.test', JWT_JWKS_URL: 'https://issuer.test/jwks.json' };

  it('accepts sessions with their secret, Bearer with its keys, or both', () => {
    expect(() => loadConfig({ ...base, ...sessions, SESSION_SERVICE_INTERNAL_SECRET: 'x'.repeat(16) })).not.toThrow();
    expect(() => loadConfig({ ...base, ...bearer })).not.toThrow();
    expect(() =>
      loadConfig({ ...base, JWT_ISSUER: 'https://issuer.test', JWT_JWKS_FILE: '/etc/jwks.json', ...sessions, SESSION_SERVICE_INTERNAL_SECRET: 'x'.repeat(16) }),
    ).not.toThrow();
  });

  it('stops on a credential set up by halves, naming the missing variable', () => {
    expect(() => loadConfig({ ...base, ...sessions })).toThrow(/SESSION_SERVICE_INTERNAL_SECRET/);
    expect(() => loadConfig({ ...base, JWT_ISSUER: 'https://issuer.test' })).toThrow(/JWT_JWKS_URL/);
    expect(() => loadConfig({ ...base, JWT_JWKS_URL: 'https://issuer.test/jwks.json' })).toThrow(/JWT_ISSUER/);
  });
});
