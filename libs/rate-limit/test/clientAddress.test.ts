import type { Request } from 'express';
import { clientAddress } from '@cp/rate-limit';

const req = (forwarded: string | undefined, peer = '127.0.0.1') =>
  ({
    headers: forwarded === undefined ? {} : { 'x-forwarded-for': forwarded },
    socket: { remoteAddress: peer },
  }) as unknown as Request;

describe('clientAddress', () => {
  it('takes the address the outermost trusted proxy saw, counted from the right', () => {
    expect(clientAddress(req('198.51.100.7', '10.0.0.2'), 1)).toBe('198.51.100.7');
    expect(clientAddress(req('1.1.1.1, 198.51.100.7, 10.0.0.9', '10.0.0.2'), 2)).toBe('198.51.100.7');
  });

  it('never takes the entries the client wrote itself', () => {
    expect(clientAddress(req('6.6.6.6, 7.7.7.7, 198.51.100.7', '10.0.0.2'), 1)).toBe('198.51.100.7');
  });

  it('uses the socket peer with no trusted proxy, and the leftmost when fewer proxies forwarded', () => {
    expect(clientAddress(req('6.6.6.6', '::ffff:192.0.2.1'), 0)).toBe('192.0.2.1');
    expect(clientAddress(req(undefined, '192.0.2.1'), 2)).toBe('192.0.2.1');
  });
});
