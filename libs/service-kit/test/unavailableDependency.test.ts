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
