// The gateway takes service-kit without a database: nothing but connectMongo may load the driver.
jest.mock('mongodb', () => {
  throw new Error('the MongoDB driver was loaded');
});

import { codeErrorHandler, mongoUnavailable, unavailableDependency } from '../src';

describe('service-kit without MongoDB', () => {
  it('loads no MongoDB driver on import, nor to tell a Redis outage', () => {
    expect(typeof codeErrorHandler).toBe('function');
    expect(typeof mongoUnavailable).toBe('function');
    expect(unavailableDependency({ code: 'CP_ERR_REDIS_UNAVAILABLE' })).toBe('cache');
  });
});
