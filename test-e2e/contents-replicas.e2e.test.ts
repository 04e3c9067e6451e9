// Two content-service replicas sharing the database and bucket, as when the service is scaled out:
// the chunks of one content land on both, retries included, and it still completes exactly once.
import { randomBytes, randomUUID } from 'node:crypto';
import { join } from 'node:path';
import { ListObjectsV2Command, S3Client } from '@aws-sdk/client-s3';
import { call, P, rangeOf, sha256, type Answer } from './support/http';
import { contentReplicaEnv, startService, type ServiceHandle } from './support/replicas';
import { testS3Client, testStack, tokenFor } from './support/stack';

const MiB = 1024 * 1024;

describe('two content-service replicas', () => {
  const replicas: ServiceHandle[] = [];
  const owner = randomUUID();
  let token: string;
  let s3: S3Client;

  beforeAll(async () => {
    const logDir = join(testStack().logDir, 'content-replicas');
    replicas.push(await startService('content-service', { env: contentReplicaEnv(), logDir }));
    replicas.push(await startService('content-service', { env: contentReplicaEnv(), logDir }));
    token = await tokenFor([owner]);
    s3 = testS3Client();
  });

  afterAll(async () => {
    s3?.destroy();
    await Promise.all(replicas.map((r) => r.stop('SIGTERM')));
  });

  const url = (replica: number, id?: string) =>
    `${replicas[replica % 2]!.url}/v1/${owner}/contents${id ? `/${id}` : ''}`;

  /** Sends a range; a 503 (a part being assembled, the content busy) is retried after its Retry-After, as clients do. */
  async function send(
    replica: number,
    method: 'POST' | 'PUT',
    id: string | undefined,
    data: Buffer,
    a: number,
    b: number,
    total: number | '*',
  ): Promise<Answer> {
    for (let attempt = 0; ; attempt++) {
      const res = await call(url(replica, id), {
        method,
        body: data.subarray(a, b),
        headers: { 'content-range': rangeOf(a, b, total) },
        token,
      });
      if (res.status !== 503 || attempt === 20) return res;
      await new Promise((r) => setTimeout(r, 100 * Number(res.headers.get('retry-after') ?? 1)));
    }
  }

  const staged = async (id: string) =>
    (await s3.send(new ListObjectsV2Command({ Bucket: `${testStack().prefix}-contents`, Prefix: `staging/${id}/` })))
      .Contents ?? [];

  it('take the 1 MiB chunks of one content in turns, 8 in flight, with every fifth sent to both at once, and complete it exactly once', async () => {
    const n = P + 24 * MiB + 7;
    const data = randomBytes(n);
    const created = await send(0, 'POST', undefined, data, 0, MiB, n);
    expect(created.status).toBe(201);
    const { id } = created.json();
    const chunks: number[] = [];
    for (let a = MiB; a < n; a += MiB) chunks.push(a);
    const statuses: number[] = [];
    let next = 0;
    await Promise.all(
      Array.from({ length: 8 }, async () => {
        while (next < chunks.length) {
          const i = next++;
          const a = chunks[i]!;
          const b = Math.min(a + MiB, n);
          // the same range to both replicas at once: a retry that raced the first attempt
          const copies = i % 5 === 0 ? [0, 1] : [i % 2];
          const answers = await Promise.all(copies.map((r) => send(r, 'PUT', id, data, a, b, n)));
          statuses.push(...answers.map((x) => x.status));
        }
      }),
    );
    expect(statuses.filter((s) => s === 201)).toHaveLength(1);
    expect(statuses.filter((s) => s !== 200 && s !== 201)).toEqual([]);
    for (const r of [0, 1]) {
      const back = await call(url(r, id), { token });
      expect(back.status).toBe(200);
      expect(back.body.length).toBe(n);
      expect(sha256(back.body)).toBe(sha256(data));
    }
    expect(await staged(id)).toEqual([]);
  });

  it('answer exactly one 201 when the last two chunks arrive on different replicas at once, 20 times over', async () => {
    const n = 3 * MiB;
    for (let round = 0; round < 20; round++) {
      const data = randomBytes(n);
      const created = await send(round, 'POST', undefined, data, 0, MiB, n);
      const { id } = created.json();
      const [first, second] = await Promise.all([
        send(round, 'PUT', id, data, MiB, 2 * MiB, n),
        send(round + 1, 'PUT', id, data, 2 * MiB, n, n),
      ]);
      expect([first.status, second.status].sort()).toEqual([200, 201]);
      const back = await call(url(round + 1, id), { token });
      expect(sha256(back.body)).toBe(sha256(data));
    }
  });
});
