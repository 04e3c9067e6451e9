import * as mongodb from 'mongodb';
import { mongoUnavailable, unavailableDependency } from '../src';

const database = mongoUnavailable(mongodb);

describe('unavailableDependency', () => {
  it("knows MongoDB by the types of the driver it is given, subclasses included, never by a class's name", () => {
    const noPrimary = new mongodb.MongoServerSelectionError('no primary', {
      type: 'Unknown',
      servers: new Map(),
    } as never);
    expect(unavailableDependency(noPrimary, { database })).toBe('database');
    expect(unavailableDependency(new mongodb.MongoNetworkTimeoutError('slow'), { database })).toBe('database');
    expect(unavailableDependency(new mongodb.MongoNotConnectedError('closed'), { database })).toBe('database');
    expect(unavailableDependency(new mongodb.MongoOperationTimeoutError('late'), { database })).toBe('database');
    expect(unavailableDependency(new mongodb.MongoNetworkError('down'))).toBeNull();
    const lookalike = new (class MongoNetworkError extends Error {})('down');
    expect(unavailableDependency(lookalike, { database })).toBeNull();
  });

  it("knows a socket MongoDB ended under a command, which the driver throws as Node's own EPIPE", () => {
    // As a soak saw it when MongoDB was killed between two commands of a sign-in.
    const ended = Object.assign(new Error('This socket has been ended by the other party'), { code: 'EPIPE' });
    ended.stack = [
      'Error: This socket has been ended by the other party',
      '    at genericNodeError (node:internal/errors:983:15)',
      '    at Socket.writeAfterFIN [as write] (node:net:576:14)',
      '    at Connection.writeCommand (/srv/node_modules/.pnpm/mongodb@7.9.0/node_modules/mongodb/lib/cmap/connection.js:408:29)',
    ].join('\n');
    expect(unavailableDependency(ended, { database })).toBe('database');
    // The same code from anywhere else is not the database's.
    const elsewhere = Object.assign(new Error('write EPIPE'), { code: 'EPIPE' });
    elsewhere.stack = 'Error: write EPIPE\n    at afterWriteDispatched (node:internal/stream_base_commons:159:15)';
    expect(unavailableDependency(elsewhere, { database })).toBeNull();
  });

  it('knows Redis by the code CP_ERR_REDIS_UNAVAILABLE, whatever the class', () => {
    const down = Object.assign(new Error('redis did not answer in time'), { code: 'CP_ERR_REDIS_UNAVAILABLE' });
    expect(unavailableDependency(down)).toBe('cache');
    expect(unavailableDependency(new (class RedisUnavailable extends Error {})('down'))).toBeNull();
  });

  it('knows S3 only when told how, and nothing else', () => {
    const s3Down = Object.assign(new Error('connect ECONNREFUSED'), { name: 'TimeoutError' });
    expect(unavailableDependency(s3Down, { database })).toBeNull();
    expect(unavailableDependency(s3Down, { storage: (e) => e === s3Down })).toBe('storage');
    for (const other of [new Error('MongoNetworkError'), 'MongoNetworkError', { code: 'ECONNREFUSED' }, null])
      expect(unavailableDependency(other, { database })).toBeNull();
  });
});
