// The audit trail: every content creation, completion, download and deletion, every webhook
// created or deleted, every sign-in and
// refresh, and every change made with the operators' command lines writes one JSON line (on the
// stack's AUDIT_LOG file): who, what, which content, from where, which request, how it ended.
// No secret ever appears in it.
import { randomBytes, randomUUID } from 'node:crypto';
import { readFileSync } from 'node:fs';
import { setTimeout as sleep } from 'node:timers/promises';
import { call, contentsUrl, newOwner } from './support/http';
import { admin, newApiKey, refresh, sessionsAdmin, sidHeaders, signedInUser } from './support/signin';
import { testStack, tokenFor } from './support/stack';

interface Entry {
  time: string;
  audit: string;
  service: string;
  event: string;
  outcome: string;
  status?: number;
  actor: { kind: string; subject: string | null; certificate?: string | null };
  owner?: string | null;
  content?: string | null;
  from?: string | null;
  requestId?: string | null;
  detail?: Record<string, unknown>;
}

const trail = (): Entry[] =>
  readFileSync(testStack().auditFile, 'utf8')
    .split('\n')
    .filter(Boolean)
    .map((line) => JSON.parse(line) as Entry);

/** The records that match, once `count` of them are there (a record is written as its answer finishes). */
async function recorded(match: (e: Entry) => boolean, count = 1): Promise<Entry[]> {
  const deadline = Date.now() + 5_000;
  for (;;) {
    const found = trail().filter(match);
    if (found.length >= count || Date.now() > deadline) return found;
    await sleep(50);
  }
}

describe('the audit trail', () => {
  const owner = newOwner();
  let token: string;

  beforeAll(async () => {
    token = await tokenFor([owner]);
  });

  it('records a content created, completed and downloaded by a Bearer token, with its request and address', async () => {
    const one = await call(contentsUrl(owner), { method: 'POST', body: randomBytes(100), token });
    expect(one.status).toBe(201);
    const id = one.json().id as string;
    const requestId = one.headers.get('x-request-id');
    const made = await recorded((e) => e.content === id, 2);
    expect(made.map((e) => `${e.event} ${e.outcome} ${e.status}`)).toEqual([
      'content.create ok 201',
      'content.complete ok 201',
    ]);
    for (const e of made) {
      expect(e).toMatchObject({ service: 'content-service', owner, actor: { kind: 'bearer', subject: owner } });
      expect(e.requestId).toBe(requestId);
      expect(e.from).toMatch(/127\.0\.0\.1/);
      expect(Date.parse(e.time)).toBeGreaterThan(Date.now() - 60_000);
    }

    const got = await call(contentsUrl(owner, id), { token, headers: { range: 'bytes=0-9' } });
    expect(got.status).toBe(206);
    const [download] = await recorded((e) => e.content === id && e.event === 'content.download');
    expect(download).toMatchObject({ outcome: 'ok', status: 206, detail: { range: 'bytes=0-9' } });
  });

  it('records a webhook created and deleted, with the host it calls, never its secret', async () => {
    const hooks = `${testStack().gatewayUrl}/v1/${owner}/webhooks`;
    const created = await call(hooks, {
      method: 'POST',
      token,
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ url: 'https://hooks.example.com/in?key=abc', events: ['content.deleted'] }),
    });
    expect(created.status).toBe(201);
    const { id, secret } = created.json() as { id: string; secret: string };
    expect((await call(`${hooks}/${id}`, { method: 'DELETE', token })).status).toBe(204);
    const entries = await recorded((e) => e.content === id, 2);
    expect(entries.map((e) => `${e.event} ${e.outcome} ${e.status}`)).toEqual([
      'webhook.create ok 201',
      'webhook.delete ok 204',
    ]);
    expect(entries[0]).toMatchObject({
      owner,
      actor: { kind: 'bearer', subject: owner },
      detail: { host: 'hooks.example.com' },
    });
    expect(readFileSync(testStack().auditFile, 'utf8')).not.toContain(secret);
  });

  it('records a multipart content once: its creation by the first range, its completion by the last', async () => {
    const first = await call(contentsUrl(owner), {
      method: 'POST',
      body: randomBytes(100),
      token,
      headers: { 'content-range': 'bytes 0-99/200' },
    });
    const id = first.json().id as string;
    const last = await call(contentsUrl(owner, id), {
      method: 'PUT',
      body: randomBytes(100),
      token,
      headers: { 'content-range': 'bytes 100-199/200' },
    });
    expect(last.status).toBe(201);
    const entries = await recorded((e) => e.content === id, 2);
    expect(entries.map((e) => `${e.event} ${e.status}`)).toEqual(['content.create 201', 'content.complete 201']);
  });

  it('records refusals as refused, with who asked', async () => {
    const other = newOwner();
    const refused = await call(contentsUrl(other), { method: 'POST', body: randomBytes(10), token });
    expect(refused.status).toBe(403);
    const [entry] = await recorded((e) => e.owner === other);
    expect(entry).toMatchObject({
      event: 'content.create',
      outcome: 'refused',
      status: 403,
      actor: { subject: owner },
    });
    const unknown = randomUUID();
    expect((await call(contentsUrl(owner, unknown), { token })).status).toBe(404);
    expect((await recorded((e) => e.content === unknown))[0]).toMatchObject({
      event: 'content.download',
      outcome: 'refused',
    });
  });

  it('records sign-ins, refreshes and what a session stores by user and certificate; never a secret', async () => {
    const { user, userId, owner: signedOwner, apiKey, pair } = await signedInUser('audit');
    const [signin] = await recorded((e) => e.event === 'session.signin' && e.actor.subject === userId);
    expect(signin).toMatchObject({
      service: 'auth-service',
      outcome: 'ok',
      actor: { kind: 'certificate', certificate: user.thumbprint },
    });

    const stored = await call(contentsUrl(signedOwner), {
      method: 'POST',
      body: randomBytes(10),
      headers: sidHeaders(pair.Sid),
    });
    expect(stored.status).toBe(201);
    const [created] = await recorded((e) => e.content === stored.json().id && e.event === 'content.create');
    expect(created!.actor).toEqual({ kind: 'session', subject: userId, certificate: user.thumbprint });

    const next = await refresh(pair.Sid, pair.RefreshToken, apiKey);
    expect(next.status).toBe(200);
    const [refreshed] = await recorded((e) => e.event === 'session.refresh' && e.actor.subject === userId);
    expect(refreshed).toMatchObject({ service: 'session-service', outcome: 'ok', actor: { kind: 'session' } });
    // A refresh with a token that is no longer any session's: refused, nobody's.
    const reused = await refresh(pair.Sid, 'f'.repeat(64), apiKey);
    expect(reused.status).toBeGreaterThanOrEqual(400);
    expect(
      (await recorded((e) => e.event === 'session.refresh' && e.requestId === reused.headers.get('x-request-id')))[0],
    ).toMatchObject({ outcome: 'refused', actor: { subject: null } });

    const text = readFileSync(testStack().auditFile, 'utf8');
    const { Sid, RefreshToken } = next.json() as { Sid: string; RefreshToken: string };
    for (const secret of [pair.Sid, pair.RefreshToken, Sid, RefreshToken, apiKey, token])
      expect(text).not.toContain(secret);
  });

  it('records the changes operators make with the command lines, by operating-system user, never a key', async () => {
    const key = await newApiKey();
    const [created] = await recorded((e) => e.event === 'admin.apikey.create' && e.service === 'auth-admin');
    expect(created).toMatchObject({ outcome: 'ok', actor: { kind: 'operator' } });
    expect(created!.actor.subject).toBeTruthy();
    const revokedUser = randomUUID();
    await sessionsAdmin('revoke', '--user', revokedUser);
    const [revoked] = await recorded((e) => e.event === 'admin.sessions.revoke' && e.detail?.user === revokedUser);
    expect(revoked).toMatchObject({ service: 'sessions-admin', outcome: 'ok' });
    const refused = await admin('trust', 'add', '--cert', '/nonexistent.pem').then(
      () => 'done',
      () => 'failed',
    );
    expect(refused).toBe('failed');
    expect((await recorded((e) => e.event === 'admin.trust.add' && e.outcome !== 'ok')).length).toBeGreaterThanOrEqual(
      1,
    );
    expect(readFileSync(testStack().auditFile, 'utf8')).not.toContain(key);
  });
});
