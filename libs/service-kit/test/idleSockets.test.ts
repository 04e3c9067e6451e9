// A kept-alive socket the agent closes itself after it sat idle, before the server would; and a
// request that waits longer than that for its answer is not cut by it.
import { Agent, createServer, request, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { closeIdleSockets } from '../src/idleSockets';

function get(agent: Agent, port: number, path = '/'): Promise<{ status: number; body: string; reused: boolean }> {
  return new Promise((resolve, reject) => {
    const req = request({ host: '127.0.0.1', port, path, agent }, (res) => {
      let body = '';
      res.setEncoding('utf8');
      res.on('data', (c: string) => (body += c));
      res.on('end', () => resolve({ status: res.statusCode ?? 0, body, reused: req.reusedSocket }));
    });
    req.on('error', reject);
    req.end();
  });
}

const freeCount = (agent: Agent) => Object.values(agent.freeSockets).reduce((n, list) => n + (list?.length ?? 0), 0);
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

describe('closeIdleSockets', () => {
  let server: Server;
  let port: number;
  let closedByServer = 0;
  beforeAll(async () => {
    server = createServer((req, res) => {
      const wait = req.url === '/slow' ? 600 : 0;
      setTimeout(() => res.end('ok'), wait);
    });
    server.keepAliveTimeout = 5_000;
    server.on('connection', (socket) => socket.on('close', () => closedByServer++));
    await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
    port = (server.address() as AddressInfo).port;
  });
  afterAll(async () => {
    server.closeAllConnections();
    await new Promise((r) => server.close(r));
  });

  it('reuses a socket while it is fresh and closes it once it sat idle for idleMs', async () => {
    const agent = closeIdleSockets(new Agent({ keepAlive: true }), 200);
    expect((await get(agent, port)).reused).toBe(false);
    expect((await get(agent, port)).reused).toBe(true);
    expect(freeCount(agent)).toBe(1);
    await sleep(500);
    expect(freeCount(agent)).toBe(0);
    const after = await get(agent, port);
    expect(after).toEqual({ status: 200, body: 'ok', reused: false });
    agent.destroy();
  });

  it('does not cut an answer that takes longer than idleMs on a reused socket', async () => {
    const agent = closeIdleSockets(new Agent({ keepAlive: true }), 200);
    await get(agent, port);
    const before = closedByServer;
    const slow = await get(agent, port, '/slow');
    expect(slow).toEqual({ status: 200, body: 'ok', reused: true });
    expect(closedByServer).toBe(before);
    agent.destroy();
  });
});
