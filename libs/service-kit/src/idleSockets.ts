import type { Agent } from 'node:http';
import type { Socket } from 'node:net';

/**
 * How long a kept-alive socket to another service may sit idle before its agent closes it: well
 * under the 65 s after which runServer's servers close one (keepAliveTimeout). A server closing an
 * idle socket at the moment its client sends a request down it fails that request with ECONNRESET
 * (the gateway's answer: 503); closed by the client first, it is never picked for one.
 */
export const IDLE_SOCKET_MS = 30_000;

/** Node's Agent hooks for a socket going back to the pool and coming out of it (not in its typings). */
interface PoolHooks {
  keepSocketAlive(socket: Socket): boolean;
  reuseSocket(socket: Socket, req: unknown): void;
}

/**
 * Makes `agent` close a pooled socket after `idleMs` unused: a socket put back in the pool gets an
 * idle timeout (Node's agent destroys a free socket that times out), taken off again when a
 * request takes the socket, so that a slow answer is never cut by it.
 */
export function closeIdleSockets<A extends Agent>(agent: A, idleMs = IDLE_SOCKET_MS): A {
  const hooks = agent as unknown as PoolHooks;
  const keep = hooks.keepSocketAlive.bind(agent);
  const reuse = hooks.reuseSocket.bind(agent);
  hooks.keepSocketAlive = (socket) => {
    const kept = keep(socket);
    if (kept) socket.setTimeout(idleMs);
    return kept;
  };
  hooks.reuseSocket = (socket, req) => {
    socket.setTimeout(0);
    reuse(socket, req);
  };
  return agent;
}
