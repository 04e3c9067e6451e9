// A resumed upload's status when its bytes came in many separate ranges: X-Received-Ranges then
// runs past Node's 16 KiB header limit, and the gateway and the client library must still pass it on.
import { request } from 'node:http';
import { ContentClient } from '@cp/client';
import { newOwner } from './support/http';
import { testStack, tokenFor } from './support/stack';

const GiB = 1024 ** 3;

describe('status of an upload received in many separate ranges', () => {
  it('answers HEAD 200 through the gateway with every range, read by the client library too', async () => {
    const owner = newOwner();
    const token = await tokenFor([owner]);
    const base = `${testStack().gatewayUrl}/v1/${owner}/contents`;
    const auth = { authorization: `Bearer ${token}` };
    const total = 30 * GiB;
    // One byte every other byte near the end of a 30 GiB content: 720 ranges of 11-digit offsets (24 bytes each).
    const first = total - 2 * 720;
    const created = await fetch(base, {
      method: 'POST',
      headers: { ...auth, 'content-range': `bytes ${first}-${first}/${total}` },
      body: 'x',
    });
    expect(created.status).toBe(201);
    const { id } = (await created.json()) as { id: string };
    const offsets = Array.from({ length: 719 }, (_, i) => first + 2 * (i + 1));
    for (let i = 0; i < offsets.length; i += 8)
      await Promise.all(
        offsets.slice(i, i + 8).map(async (at) => {
          const res = await fetch(`${base}/${id}`, {
            method: 'PUT',
            headers: { ...auth, 'content-range': `bytes ${at}-${at}/${total}` },
            body: 'x',
          });
          expect(res.status).toBe(200);
        }),
      );
    const expected = [first, ...offsets].map((at) => `${at}-${at}`).join(',');
    expect(expected.length).toBeGreaterThan(16 * 1024);

    // fetch (undici) keeps Node's 16 KiB limit: a plain request with room for the head.
    const head = await new Promise<{ status: number; ranges: unknown }>((resolve, reject) =>
      request(`${base}/${id}`, { method: 'HEAD', headers: auth, maxHeaderSize: 64 * 1024 }, (res) => {
        res.resume();
        resolve({ status: res.statusCode!, ranges: res.headers['x-received-ranges'] });
      })
        .on('error', reject)
        .end(),
    );
    expect(head).toEqual({ status: 200, ranges: expected });

    const client = new ContentClient({ baseUrl: testStack().gatewayUrl, credentials: { kind: 'bearer', token } });
    try {
      const status = await client.status(owner, id);
      expect(status.received).toHaveLength(720);
      expect(status.received[0]).toEqual({ start: first, end: first });
    } finally {
      client.close();
    }
  }, 60_000);
});
