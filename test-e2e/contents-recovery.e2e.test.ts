// A content-service killed (kill -9) in the middle of an upload: its claims die with it, so the
// client completes the content soon after a restart, or through another replica, with no garbage
// left in S3. Every request goes through a gateway in front of the replica(s) of this test.
import { randomBytes, randomUUID } from 'node:crypto';
import { request } from 'node:http';
import { join } from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { ListMultipartUploadsCommand, ListObjectsV2Command, S3Client } from '@aws-sdk/client-s3';
import { call, P, rangeOf, sha256 } from './support/http';
import { contentReplicaEnv, freePort, startService, type ServiceHandle } from './support/replicas';
import { testS3Client, testStack, tokenFor } from './support/stack';

const MiB = 1024 * 1024;
/** The bounds this test holds the service to. */
const AFTER_RESTART_MS = 30_000;
const TAKEOVER_MS = 15_000;

describe('a content-service killed in the middle of an upload', () => {
  const started: ServiceHandle[] = [];
  const owner = randomUUID();
  const logDir = join(testStack().logDir, 'contents-recovery');
  let token: string;
  let s3: S3Client;
  const bucket = `${testStack().prefix}-contents`;

  beforeAll(async () => {
    token = await tokenFor([owner]);
    s3 = testS3Client();
  });

  afterAll(async () => {
    s3?.destroy();
    await Promise.all(started.map((s) => s.stop('SIGKILL')));
  });

  /** A content-service replica on `port` (a short sweep interval, so the sweep after recovery comes soon). */
  async function contentService(port: number): Promise<ServiceHandle> {
    const handle = await startService('content-service', {
      port,
      env: contentReplicaEnv({ SWEEP_INTERVAL_SECONDS: '2' }),
      logDir,
    });
    started.push(handle);
    return handle;
  }

  async function gatewayTo(contentPort: number): Promise<ServiceHandle> {
    const { services } = testStack();
    const handle = await startService('gateway', {
      env: {
        LOG_LEVEL: 'warn',
        CONTENT_SERVICE_URL: `http://127.0.0.1:${contentPort}`,
        AUTH_SERVICE_URL: services['auth-service']!.url,
        SESSION_SERVICE_URL: services['session-service']!.url,
      },
      logDir,
    });
    started.push(handle);
    return handle;
  }

  const url = (gateway: ServiceHandle, id?: string) => `${gateway.url}/v1/${owner}/contents${id ? `/${id}` : ''}`;

  const send = (
    gateway: ServiceHandle,
    method: 'POST' | 'PUT',
    id: string | undefined,
    data: Buffer,
    a: number,
    b: number,
  ) =>
    call(url(gateway, id), {
      method,
      body: data.subarray(a, b),
      headers: { 'content-range': rangeOf(a, b, data.length) },
      token,
    });

  /** Sends [a, b) slowly in 1 MiB writes; resolves once `sentBeforeKill` bytes are out (the rest follows unless the server dies). */
  async function slowPut(
    gateway: ServiceHandle,
    id: string,
    data: Buffer,
    a: number,
    b: number,
    sentBeforeKill: number,
  ): Promise<void> {
    const req = request(url(gateway, id), {
      method: 'PUT',
      agent: false,
      headers: {
        authorization: `Bearer ${token}`,
        'content-range': rangeOf(a, b, data.length),
        'content-length': String(b - a),
      },
    });
    req.on('error', () => undefined); // the server is killed under it
    req.on('response', (res) => res.resume());
    for (let at = a; at < a + sentBeforeKill; at += MiB) {
      await new Promise<void>((resolve) => req.write(data.subarray(at, Math.min(at + MiB, b)), () => resolve()));
    }
    await sleep(300); // the bytes reach the content-service and its S3 part write
  }

  /**
   * A resuming client with plain fetch: asks HEAD what was received, sends the missing cells of
   * its grid (`cell` bytes each), retries whatever fails, until the content is ready.
   */
  async function resume(
    gateway: ServiceHandle,
    id: string,
    data: Buffer,
    cell: number,
    deadlineMs: number,
  ): Promise<void> {
    const deadline = Date.now() + deadlineMs;
    while (Date.now() < deadline) {
      const head = await fetch(url(gateway, id), {
        method: 'HEAD',
        headers: { authorization: `Bearer ${token}` },
      }).catch(() => null);
      if (head?.status === 200 && head.headers.get('x-upload-state') === 'ready') return;
      if (head?.status !== 200) {
        await sleep(250);
        continue;
      }
      const received = (head.headers.get('x-received-ranges') ?? '')
        .split(',')
        .filter(Boolean)
        .map((r) => r.split('-').map(Number) as [number, number]);
      const covered = (a: number, b: number) => received.some(([x, y]) => x <= a && b - 1 <= y);
      const missing: [number, number][] = [];
      for (let a = 0; a < data.length; a += cell)
        if (!covered(a, Math.min(a + cell, data.length))) missing.push([a, Math.min(a + cell, data.length)]);
      let next = 0;
      let done = false;
      await Promise.all(
        Array.from({ length: 4 }, async () => {
          while (next < missing.length && !done) {
            const [a, b] = missing[next++]!;
            const res = await send(gateway, 'PUT', id, data, a, b).catch(() => null);
            if (res?.status === 201) done = true;
          }
        }),
      );
      if (done) return;
      await sleep(250);
    }
    throw new Error(`the content ${id} was not complete within ${deadlineMs} ms`);
  }

  /** Downloads the content through the gateway and checks it byte for byte (by SHA-256). */
  async function expectSame(gateway: ServiceHandle, id: string, data: Buffer): Promise<void> {
    const back = await call(url(gateway, id), { token });
    expect(back.status).toBe(200);
    expect(back.body.length).toBe(data.length);
    expect(sha256(back.body)).toBe(sha256(data));
  }

  /** After the next sweep: no staged object of the content and no open multipart upload of the owner. */
  async function expectNothingLeft(id: string): Promise<void> {
    await sleep(4_500); // two sweep intervals
    const staged = await s3.send(new ListObjectsV2Command({ Bucket: bucket, Prefix: `staging/${id}/` }));
    expect(staged.Contents ?? []).toEqual([]);
    const open = await s3.send(new ListMultipartUploadsCommand({ Bucket: bucket, Prefix: `contents/${owner}/` }));
    expect((open.Uploads ?? []).map((u) => u.Key)).not.toContain(`contents/${owner}/${id}`);
  }

  const report = (what: string, figures: Record<string, number>) =>
    process.stdout.write(
      `${what}: ${Object.entries(figures)
        .map(([k, v]) => `${k} ${(v / 1000).toFixed(1)} s`)
        .join(', ')}\n`,
    );

  it('in the middle of a 64 MiB part: after a restart, the client completes the content within 30 s with the same SHA-256', async () => {
    const port = await freePort();
    const service = await contentService(port);
    const gateway = await gatewayTo(port);
    const data = randomBytes(2 * P + MiB);
    const created = await send(gateway, 'POST', undefined, data, 2 * P, data.length);
    expect(created.status).toBe(201);
    const { id } = created.json();
    expect((await send(gateway, 'PUT', id, data, P, 2 * P)).status).toBe(200);

    await slowPut(gateway, id, data, 0, P, 32 * MiB);
    service.stop('SIGKILL');
    const killedAt = Date.now();
    await service.exited;
    await contentService(port); // the same port: the gateway finds it again
    const restartedAt = Date.now();
    await resume(gateway, id, data, P, 60_000);
    const readyAt = Date.now();
    report('kill -9 mid 64 MiB part, restart', {
      'restart took': restartedAt - killedAt,
      'complete after restart': readyAt - restartedAt,
      'complete after kill': readyAt - killedAt,
    });
    expect(readyAt - restartedAt).toBeLessThan(AFTER_RESTART_MS);
    await expectSame(gateway, id, data);
    await expectNothingLeft(id);
  });

  it('in the middle of a run of 1 MiB chunks: after a restart, the client completes the content within 30 s with the same SHA-256', async () => {
    const port = await freePort();
    const service = await contentService(port);
    const gateway = await gatewayTo(port);
    const data = randomBytes(P + 16 * MiB);
    const created = await send(gateway, 'POST', undefined, data, 0, MiB);
    expect(created.status).toBe(201);
    const { id } = created.json();

    // 8 chunks in flight; the service is killed once 48 of them were sent
    let next = 1;
    let sent = 0;
    let killedAt = 0;
    const chunks = Math.ceil(data.length / MiB);
    await Promise.all(
      Array.from({ length: 8 }, async () => {
        while (next < chunks && killedAt === 0) {
          const i = next++;
          await send(gateway, 'PUT', id, data, i * MiB, Math.min((i + 1) * MiB, data.length)).catch(() => null);
          if (++sent === 48 && killedAt === 0) {
            service.stop('SIGKILL');
            killedAt = Date.now();
          }
        }
      }),
    );
    await service.exited;
    await contentService(port);
    const restartedAt = Date.now();
    await resume(gateway, id, data, MiB, 60_000);
    const readyAt = Date.now();
    report('kill -9 mid 1 MiB chunks, restart', {
      'restart took': restartedAt - killedAt,
      'complete after restart': readyAt - restartedAt,
      'complete after kill': readyAt - killedAt,
    });
    expect(readyAt - restartedAt).toBeLessThan(AFTER_RESTART_MS);
    await expectSame(gateway, id, data);
    await expectNothingLeft(id);
  });

  it('one of two replicas killed in the middle of a part: the other takes the part over within the lease bound and completes the content', async () => {
    const [portA, portB] = [await freePort(), await freePort()];
    const a = await contentService(portA);
    await contentService(portB);
    const [viaA, viaB] = [await gatewayTo(portA), await gatewayTo(portB)];
    const data = randomBytes(2 * P + MiB);
    const created = await send(viaA, 'POST', undefined, data, 2 * P, data.length);
    const { id } = created.json();

    await slowPut(viaA, id, data, 0, P, 32 * MiB);
    a.stop('SIGKILL');
    const killedAt = Date.now();
    // The client goes on through the other replica: its part 1 gets 503 partWriting until the dead claim runs out.
    let takenOverAt = 0;
    let refusals = 0;
    while (takenOverAt === 0 && Date.now() - killedAt < 60_000) {
      // A refusal answered before the 64 MiB body was sent closes the connection: the client may
      // then see its write fail (EPIPE, reset) instead of the answer, and sends again as on a 503.
      const res = await send(viaB, 'PUT', id, data, 0, P).catch((error: unknown) => {
        if (!/EPIPE|ECONNRESET|other side closed/.test(String((error as Error).cause ?? error))) throw error;
        return null;
      });
      if (res?.status === 200) takenOverAt = Date.now();
      else {
        // 503 partWriting; the gateway answers 503 serviceUnavailable instead when the refusal
        // comes before it has relayed the 64 MiB body (the content-service closes the connection).
        if (res) expect(res.status).toBe(503);
        refusals++;
        await sleep(250);
      }
    }
    await resume(viaB, id, data, P, 60_000);
    const readyAt = Date.now();
    report('kill -9 of one of two replicas mid part', {
      'part taken over after kill': takenOverAt - killedAt,
      'complete after kill': readyAt - killedAt,
    });
    expect(refusals).toBeGreaterThan(0);
    expect(takenOverAt - killedAt).toBeLessThan(TAKEOVER_MS);
    await expectSame(viaB, id, data);
    await expectNothingLeft(id);
  });
});
