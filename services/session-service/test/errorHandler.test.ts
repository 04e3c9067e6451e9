import type { AddressInfo } from 'node:net';
import express from 'express';
import { MongoNetworkError, MongoNetworkTimeoutError } from 'mongodb';
import { ServiceError } from '@cp/errors';
import { createLogger } from '@cp/logging';
import { RedisUnavailable } from '@cp/redis';
import { errorHandler } from '../src/http/errorHandler';

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

describe('session-service error bodies', () => {
  it('answers anything unexpected with 500 UnknownError and nothing of the error itself', async () => {
    const { status, body } = await answerFor(new Error('redis://default:hunter2@cache failed'));
    expect(status).toBe(500);
    expect(JSON.parse(body)).toEqual({ Code: 'UnknownError', Message: 'the request failed unexpectedly' });
  });

  it('answers a session database or cache that does not answer with 503 ServiceUnavailable and Retry-After 5', async () => {
    const cases: [unknown, string][] = [
      [new MongoNetworkError('connection refused'), 'the session database does not answer; retry later'],
      [new MongoNetworkTimeoutError('timed out'), 'the session database does not answer; retry later'],
      [new RedisUnavailable('down'), 'the session cache does not answer; retry later'],
    ];
    for (const [error, message] of cases) {
      const { status, body, retryAfter } = await answerFor(error);
      expect(status).toBe(503);
      expect(JSON.parse(body)).toEqual({ Code: 'ServiceUnavailable', Message: message });
      expect(retryAfter).toBe('5');
    }
  });

  it("keeps the status of a request's own 4xx (an oversized body stays 413) as BadRequest", async () => {
    const tooLarge = Object.assign(new Error('request entity too large'), { status: 413, type: 'entity.too.large' });
    const { status, body } = await answerFor(tooLarge);
    expect(status).toBe(413);
    expect(JSON.parse(body)).toEqual({ Code: 'BadRequest', Message: 'the request could not be read' });
  });

  it('keeps the Code, status and Retry-After of a ServiceError', async () => {
    const { status, body, retryAfter } = await answerFor(
      ServiceError.of('ServiceUnavailable', 'another refresh with this token is under way; retry', {
        retryAfterSeconds: 1,
      }),
    );
    expect(status).toBe(503);
    expect(JSON.parse(body)).toEqual({
      Code: 'ServiceUnavailable',
      Message: 'another refresh with this token is under way; retry',
    });
    expect(retryAfter).toBe('1');
  });
});
