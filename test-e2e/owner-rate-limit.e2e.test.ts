// RATE_LIMIT_PER_OWNER_*: /v1 requests per owner, counted in Redis across replicas. Over the limit,
// 429 tooManyRequests with Retry-After; other owners keep their own allowance, and requests the
// caller may not make for an owner (refused before) spend none of it.
import { randomBytes } from 'node:crypto';
import { join } from 'node:path';
import { call, contentsUrl, newOwner } from './support/http';
import { contentReplicaEnv, startService, type ServiceHandle } from './support/replicas';
import { testStack, tokenFor } from './support/stack';

describe('the request rate per owner', () => {
  const started: ServiceHandle[] = [];
  let replicas: string[];

  beforeAll(async () => {
    const logDir = join(testStack().logDir, 'owner-rate-limit');
    const env = contentReplicaEnv({
      LOG_LEVEL: 'warn',
      RATE_LIMIT_PER_OWNER_POINTS: '4',
      RATE_LIMIT_PER_OWNER_SECONDS: '60',
    });
    // Two replicas: the count is theirs together.
    for (let i = 0; i < 2; i++) started.push(await startService('content-service', { logDir, env }));
    replicas = started.map((s) => s.url);
  });
  afterAll(async () => {
    await Promise.all(started.map((s) => s.stop()));
  });

  it('answers 429 tooManyRequests with Retry-After past the limit, across replicas, per owner', async () => {
    const owner = newOwner();
    const other = newOwner();
    const token = await tokenFor([owner, other]);
    const at = (i: number, ownerId = owner) => `${replicas[i % 2]}/v1/${ownerId}/contents`;
    const created = await call(at(0), { method: 'POST', body: randomBytes(10), token });
    expect(created.status).toBe(201);
    const id = created.json().id as string;
    const statuses: number[] = [];
    for (let i = 1; i <= 3; i++) statuses.push((await call(`${at(i)}/${id}`, { token })).status);
    expect(statuses).toEqual([200, 200, 200]);
    const over = await call(`${at(0)}/${id}`, { token });
    expect(over.status).toBe(429);
    expect(over.json().id).toBe('urn:error:contents:tooManyRequests');
    expect(Number(over.headers.get('retry-after'))).toBeGreaterThan(0);
    expect((await call(`${at(1)}/${id}`, { method: 'HEAD', token })).status).toBe(429);
    // Another owner of the same caller is not held back.
    expect((await call(at(1, other), { method: 'POST', body: randomBytes(10), token })).status).toBe(201);
  });

  it("spends nothing of an owner's allowance on requests refused before (another caller's)", async () => {
    const owner = newOwner();
    const token = await tokenFor([owner]);
    const stranger = await tokenFor([newOwner()]);
    for (let i = 0; i < 6; i++)
      expect(
        (
          await call(`${replicas[i % 2]}/v1/${owner}/contents`, {
            method: 'POST',
            body: randomBytes(1),
            token: stranger,
          })
        ).status,
      ).toBe(403);
    expect(
      (
        await call(contentsUrl(owner).replace(testStack().gatewayUrl, replicas[0]!), {
          method: 'POST',
          body: randomBytes(1),
          token,
        })
      ).status,
    ).toBe(201);
  });
});
