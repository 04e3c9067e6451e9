import fc from 'fast-check';
import { ApiError } from '../src/errors';
import { missingParts, parseReceivedRanges, splitIntoParts } from '../src/ranges';

describe('resume arithmetic', () => {
  it('splits a file into parts that cover it exactly, each at most the part size', () => {
    fc.assert(
      fc.property(fc.nat(10_000), fc.integer({ min: 1, max: 700 }), (total, size) => {
        const parts = splitIntoParts(total, size);
        let next = 0;
        for (const p of parts) {
          expect(p.start).toBe(next);
          expect(p.end - p.start + 1).toBeLessThanOrEqual(size);
          next = p.end + 1;
        }
        expect(next).toBe(total);
      }),
    );
  });

  it('sends again exactly the parts not wholly received', () => {
    const parts = splitIntoParts(1000, 100);
    const received = parseReceivedRanges('0-199,300-349,500-999');
    expect(missingParts(parts, received).map((p) => p.start)).toEqual([200, 300, 400]);
    expect(missingParts(parts, parseReceivedRanges(''))).toHaveLength(10);
    expect(missingParts(parts, parseReceivedRanges('0-999'))).toEqual([]);
  });

  it('refuses a malformed X-Received-Ranges rather than guessing', () => {
    expect(() => parseReceivedRanges('0-9,abc')).toThrow();
  });
});

describe('error answers', () => {
  it('reads both error formats and the HEAD header form', () => {
    const v1 = ApiError.fromResponse(
      409,
      JSON.stringify({
        id: 'urn:error:contents:totalConflict',
        'status-code': 409,
        message: 'total differs',
        'track-id': 't-1',
      }),
      {},
    );
    expect([v1.code, v1.message, v1.trackId]).toEqual(['totalConflict', 'total differs', 't-1']);
    expect(v1.hint).toMatch(/new content/);
    const auth = ApiError.fromResponse(
      403,
      JSON.stringify({ Code: 'UnknownCertificate', Message: 'not registered' }),
      {},
    );
    expect([auth.code, auth.message]).toEqual(['UnknownCertificate', 'not registered']);
    const head = ApiError.fromResponse(404, '', {
      'x-error-id': 'urn:error:contents:contentNotFound',
      'retry-after': '3',
    });
    expect([head.code, head.retryAfterSeconds]).toEqual(['contentNotFound', 3]);
  });
});
