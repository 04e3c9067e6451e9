// A request refused from its head while its client is still sending the body (a part too large by
// its Content-Length): the client must get the answer, not a reset. The gateway answers with
// Connection: close and reads and drops the rest for a bounded time before closing (lingering
// close); closing at once reset the connection under the client, which saw EPIPE about one time in three.
import { request } from 'node:http';
import { newOwner } from './support/http';
import { testStack, tokenFor } from './support/stack';

const MiB = 1024 * 1024;

/**
 * Streams `mib` MiB of body as fast as the connection takes it (with `headers`: a Content-Length
 * of it, or chunked); what the client sees first.
 */
function sendLarge(
  url: URL,
  mib: number,
  method: 'POST' | 'PUT',
  headers: Record<string, string>,
): Promise<{ status: number; connection?: string } | Error> {
  return new Promise((resolve) => {
    const req = request(url, { method, headers });
    req.on('response', (res) => {
      resolve({ status: res.statusCode!, connection: res.headers.connection });
      req.destroy(); // as a client does once it has its answer
    });
    req.on('error', resolve);
    const chunk = Buffer.alloc(MiB);
    let sent = 0;
    const pump = () => {
      while (sent < mib) {
        sent++;
        if (!req.write(chunk)) return void req.once('drain', pump);
      }
      req.end();
    };
    pump();
  });
}

describe('a body refused while it is being sent', () => {
  it('gets the 413 answer every time, not a reset, and the connection is closed after it', async () => {
    const owner = newOwner();
    const token = await tokenFor([owner]);
    const url = new URL(`${testStack().gatewayUrl}/v1/${owner}/contents`);
    const started = Date.now();
    const seen = [];
    const headers = { authorization: `Bearer ${token}`, 'content-length': String(200 * MiB) };
    for (let i = 0; i < 6; i++) seen.push(await sendLarge(url, 200, 'POST', headers));
    console.log(`6 refused 200 MiB bodies answered in ${Date.now() - started} ms`);
    expect(seen).toEqual(Array.from({ length: 6 }, () => ({ status: 413, connection: 'close' })));
  });

  it('gets the 400 a service gives a chunked body longer than its range, every time, not a 503 or a reset', async () => {
    // The gateway's proxy sends every chunked body upstream with Connection: close, so the
    // content-service's answer, given mid-body, must not close the connection under the gateway.
    const owner = newOwner();
    const token = await tokenFor([owner]);
    const base = `${testStack().gatewayUrl}/v1/${owner}/contents`;
    const seen = [];
    for (let i = 0; i < 20; i++) {
      const created = await fetch(base, {
        method: 'POST',
        headers: { authorization: `Bearer ${token}`, 'content-range': 'bytes 0-4/10' },
        body: '01234',
      });
      const { id } = (await created.json()) as { id: string };
      seen.push(
        await sendLarge(new URL(`${base}/${id}`), 10, 'PUT', {
          authorization: `Bearer ${token}`,
          'content-range': 'bytes 5-9/10',
          'transfer-encoding': 'chunked',
        }),
      );
    }
    expect(seen.map((s) => ('status' in s ? s.status : s.message))).toEqual(Array(20).fill(400));
  });
});
