// Two session-service processes on one MongoDB and one Redis: a refresh through one of them
// ends the old sid on the other at once, even though the other had it cached.
import { randomUUID } from 'node:crypto';
import { join } from 'node:path';
import { TestPki } from './support/pki';
import { admin, newApiKey, registerUser, signIn } from './support/signin';
import { testStack } from './support/stack';

// eslint-disable-next-line @typescript-eslint/no-require-imports -- the plain-JS stack launcher
const { startService } = require('../tools/devstack/stack') as {
  startService: (
    name: string,
    opts: { env: Record<string, string>; logDir: string },
  ) => Promise<{ url: string; stop: () => Promise<unknown> }>;
};

async function validate(serviceUrl: string, sid: string): Promise<number> {
  const res = await fetch(`${serviceUrl}/internal/sessions/validate`, {
    method: 'POST',
    headers: { 'content-type': 'application/json', 'x-internal-secret': testStack().internalSecrets.contentToSession },
    body: JSON.stringify({ sid }),
  });
  return res.status;
}

async function refreshAt(serviceUrl: string, sid: string, refreshToken: string, apiKey: string): Promise<Response> {
  return fetch(
    `${serviceUrl}/sessions/v5.13/sessions/refresh?auth.sid=${sid}&refresh-token=${refreshToken}&api-key=${apiKey}`,
    { method: 'POST' },
  );
}

describe('two session-service replicas', () => {
  let second: { url: string; stop: () => Promise<unknown> };
  const pki = new TestPki();

  beforeAll(async () => {
    const stack = testStack();
    second = await startService('session-service', { env: stack.sessionEnv, logDir: join(stack.logDir, 'replica') });
  });

  afterAll(async () => {
    await second?.stop();
  });

  it('a refresh on one replica invalidates the old sid on the other', async () => {
    const first = testStack().services['session-service']!.url;
    const root = pki.root('Replica Root');
    const user = pki.issue('replica-user', root);
    await admin('trust', 'add', '--cert', root.certPath);
    await registerUser(user, [randomUUID()]);
    const apiKey = await newApiKey();
    const pair = await signIn(user, apiKey);

    // Both replicas know the sid; the second one now has it in the shared cache as well.
    expect(await validate(first, pair.Sid)).toBe(200);
    expect(await validate(second.url, pair.Sid)).toBe(200);
    expect(await validate(second.url, pair.Sid)).toBe(200);

    const res = await refreshAt(first, pair.Sid, pair.RefreshToken, apiKey);
    expect(res.status).toBe(200);
    const next = (await res.json()) as { Sid: string; RefreshToken: string };
    expect(await validate(second.url, pair.Sid)).toBe(404);
    expect(await validate(second.url, next.Sid)).toBe(200);

    // And the other way round: the second replica rotates, the first stops accepting at once.
    const again = await refreshAt(second.url, next.Sid, next.RefreshToken, apiKey);
    expect(again.status).toBe(200);
    expect(await validate(first, next.Sid)).toBe(404);
    // The just-rotated pair presented to the other replica (a lost answer): the same new pair.
    const newest = (await again.json()) as { Sid: string; RefreshToken: string };
    const retried = await refreshAt(first, next.Sid, next.RefreshToken, apiKey);
    expect(retried.status).toBe(200);
    expect(await retried.json()).toEqual(newest);
    expect(await validate(second.url, newest.Sid)).toBe(200);
    // With another sid it is a reuse: the family is revoked on both replicas.
    expect((await refreshAt(first, newest.Sid, next.RefreshToken, apiKey)).status).toBe(403);
    expect(await validate(second.url, newest.Sid)).toBe(404);
  });
});
