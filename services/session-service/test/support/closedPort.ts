import { createServer } from 'node:net';

/** A loopback port nothing listens on (a server bound, then closed): stands for a backing server that is down. */
export async function closedPort(): Promise<number> {
  const srv = createServer();
  await new Promise<void>((r) => srv.listen(0, '127.0.0.1', () => r()));
  const { port } = srv.address() as { port: number };
  await new Promise((r) => srv.close(r));
  return port;
}
