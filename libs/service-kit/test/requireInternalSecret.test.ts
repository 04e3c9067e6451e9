import type { Request } from 'express';
import { ServiceError } from '@cp/errors';
import { requireInternalSecret } from '@cp/service-kit';

const A = 'a'.repeat(24);
const B = 'b'.repeat(24);
const guard = requireInternalSecret([
  { name: 'auth-service', secret: A, routes: ['/sessions'] },
  { name: 'content-service', secret: B, routes: ['/sessions/validate'] },
]);

function outcome(path: string, secret?: string): number {
  let result = 0;
  const req = { path, headers: secret === undefined ? {} : { 'x-internal-secret': secret } } as unknown as Request;
  guard(req, {} as never, (error?: unknown) => {
    result = error instanceof ServiceError ? error.status : 200;
  });
  return result;
}

describe('requireInternalSecret', () => {
  it('lets a caller reach the routes granted to it and what lies below them', () => {
    expect(outcome('/sessions', A)).toBe(200);
    expect(outcome('/sessions/validate', A)).toBe(200);
    expect(outcome('/sessions/validate', B)).toBe(200);
    expect(outcome('/Sessions/Validate/', B)).toBe(200);
  });

  it('refuses a known caller a route not granted to it with 403', () => {
    expect(outcome('/sessions', B)).toBe(403);
    expect(outcome('/SESSIONS', B)).toBe(403);
    expect(outcome('/sessions/validatex', B)).toBe(403);
    expect(outcome('/sessionsx', A)).toBe(403);
    expect(outcome('/sessions/validate/../../sessions', B)).toBe(403);
    expect(outcome('/sessions/validate/./x', B)).toBe(403);
    expect(outcome('/sessions%2Fvalidate', B)).toBe(403);
  });

  it('refuses a missing or unknown secret with 401', () => {
    expect(outcome('/sessions')).toBe(401);
    expect(outcome('/sessions', '')).toBe(401);
    expect(outcome('/sessions', `${A}x`)).toBe(401);
  });

  it('refuses two callers with one secret (they could not be told apart)', () => {
    expect(() =>
      requireInternalSecret([
        { name: 'x', secret: A, routes: ['/a'] },
        { name: 'y', secret: A, routes: ['/b'] },
      ]),
    ).toThrow(/different secrets/);
  });
});
