// The access log, the audit trail, the request timer and a handler's own hook share one 'close'
// listener, so that a response piped to by stream.pipeline() (seven listeners of its own) stays
// under Node's limit of ten and costs no leak warning per request.
import { once } from 'node:events';
import { createServer, get, request, type IncomingMessage, type Server } from 'node:http';
import { Readable } from 'node:stream';
import { pipeline } from 'node:stream/promises';
import { createLogger, type AuditLog, type AuditRecord } from '@cp/logging';
import { audited } from '../src/audited';
import { serviceApp } from '../src/serviceApp';
import { ServiceMetrics } from '../src/ServiceMetrics';
import { whenDone } from '../src/whenDone';

describe('whenDone', () => {
  const records: AuditRecord[] = [];
  const audit = { record: (r: AuditRecord) => void records.push(r) } as unknown as AuditLog;
  const hooks: boolean[] = [];
  const warnings: Error[] = [];
  const closeListeners: number[] = [];
  const onWarning = (w: Error) => void warnings.push(w);
  let server: Server;
  let base: string;

  beforeAll(async () => {
    process.on('warning', onWarning);
    const app = serviceApp({
      logger: createLogger({ service: 'test', level: 'silent' }),
      metrics: new ServiceMetrics('t'),
    });
    app.use(
      '/v1',
      audited(audit, () => [{ event: 'content.download', actor: null, detail: {} } as never]),
    );
    // The bytes come from another HTTP answer, as a download's come from S3.
    app.get('/upstream', (req, res) => {
      const endless = req.query.endless === '1';
      let sent = 0;
      const body = new Readable({
        read() {
          sent += 1;
          this.push(endless || sent <= 4 ? Buffer.alloc(64 * 1024, 1) : null);
        },
      });
      void pipeline(body, res).catch(() => undefined);
    });
    app.get('/v1/stream', async (req, res) => {
      whenDone(res, (finished) => void hooks.push(finished));
      const upstream = await new Promise<IncomingMessage>((resolve) =>
        get(`${base}/upstream${req.query.endless === '1' ? '?endless=1' : ''}`, resolve),
      );
      const piped = pipeline(upstream, res).catch(() => undefined);
      closeListeners.push(res.listenerCount('close'));
      await piped;
      upstream.destroy();
    });
    server = createServer(app).listen(0, '127.0.0.1');
    await once(server, 'listening');
    base = `http://127.0.0.1:${(server.address() as { port: number }).port}`;
  });

  afterAll(async () => {
    process.off('warning', onWarning);
    await new Promise((r) => server.close(r));
  });

  it('runs every hook once when a piped response finishes, with no leak warning', async () => {
    for (let i = 0; i < 3; i++)
      expect((await (await fetch(`${base}/v1/stream`)).arrayBuffer()).byteLength).toBe(4 * 65536);
    await new Promise((r) => setImmediate(r));
    expect(hooks).toEqual([true, true, true]);
    expect(records.map((r) => r.outcome)).toEqual(['ok', 'ok', 'ok']);
    console.log(`'close' listeners on each response while piped: ${closeListeners.join(', ')}`);
    expect(Math.max(...closeListeners)).toBeLessThanOrEqual(10);
    expect(warnings.filter((w) => w.name === 'MaxListenersExceededWarning')).toEqual([]);
  });

  it('tells the hooks that a response was cut short when its client goes away', async () => {
    hooks.length = 0;
    records.length = 0;
    await new Promise<void>((resolve) => {
      const req = request(`${base}/v1/stream?endless=1`, (res) => {
        res.once('data', () => {
          req.destroy();
          resolve();
        });
      });
      req.end();
    });
    for (let i = 0; i < 100 && hooks.length === 0; i++) await new Promise((r) => setTimeout(r, 10));
    expect(hooks).toEqual([false]);
    expect(records.map((r) => r.outcome)).toEqual(['failed']);
  });
});
