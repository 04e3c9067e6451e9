import type { AddressInfo } from 'node:net';
import express from 'express';
import { MongoNetworkError } from 'mongodb';
import { ServiceError } from '@cp/errors';
import { createLogger } from '@cp/logging';
import { errorHandler } from '../src/http/errorHandler';
import { RedisUnavailable } from '@cp/redis';

async function answerFor(error: unknown): Promise<{ status: number; body: string; retryAfter: string | null }> {
  const app = express();
  app.get('/', () => {
    throw error;
  });
  app.use(errorHandler(createLogger({ service: 'test', level: 'silent' })));
  const server = app.listen(0, '127.0.0.1');
  await new Promise((r) => server.once('listening', r));
  try {
    const res = await fetch(`http://127.0.0.1:${(server.address() as AddressInfo).port}/`);
    return { status: res.status, body: await res.text(), retryAfter: res.headers.get('retry-after') };
  } finally {
    server.close();
  }
}

describe('auth-service error bodies', () => {
  it('answers anything unexpected with 500 UnknownError and nothing of the error itself', async () => {
    const secret = new Error('connection string mongodb://admin:hunter2@db/auth failed at /srv/app/dist/x.js:12');
    const { status, body } = await answerFor(secret);
    expect(status).toBe(500);
    expect(JSON.parse(body)).toEqual({ Code: 'UnknownError', Message: 'the request failed unexpectedly' });
    expect(body).not.toMatch(/hunter2|mongodb|dist/);
  });

  it('answers a database or Redis that does not answer with 503 and Retry-After', async () => {
    for (const error of [new MongoNetworkError('connection refused'), new RedisUnavailable('down')]) {
      const { status, body, retryAfter } = await answerFor(error);
      expect(status).toBe(503);
      expect(JSON.parse(body).Code).toBe('ServiceUnavailable');
      expect(retryAfter).not.toBeNull();
    }
  });

  it('keeps the Code and status of a ServiceError', async () => {
    const { status, body } = await answerFor(new ServiceError(406, 'CertNotValid', 'expired'));
    expect(status).toBe(406);
    expect(JSON.parse(body)).toEqual({ Code: 'CertNotValid', Message: 'expired' });
  });
});
