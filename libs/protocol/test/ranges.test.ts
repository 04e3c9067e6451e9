import fc from 'fast-check';
import {
  formatReceivedRanges,
  parseContentRange,
  parseRange,
  parseReceivedRanges,
  resolveRange,
  RangeSyntaxError,
} from '../src';

const offset = fc.integer({ min: 0, max: 40 * 2 ** 30 });

describe('parseContentRange', () => {
  it('reads back any well-formed "bytes a-b/total"', () => {
    fc.assert(
      fc.property(offset, fc.nat(2 ** 26), fc.nat(2 ** 30), (a, len, extra) => {
        const b = a + len;
        const total = b + 1 + extra;
        expect(parseContentRange(`bytes ${a}-${b}/${total}`)).toEqual({ start: a, end: b, total });
        expect(parseContentRange(`bytes=${a}-${b}/${total}`)).toEqual({ start: a, end: b, total });
        expect(parseContentRange(`bytes ${a}-${b}/*`)).toEqual({ start: a, end: b, total: null });
      }),
    );
  });

  it('rejects a start after the end', () => {
    fc.assert(
      fc.property(offset, fc.integer({ min: 1, max: 1000 }), (b, d) => {
        expect(() => parseContentRange(`bytes ${b + d}-${b}/*`)).toThrow(RangeSyntaxError);
      }),
    );
  });

  it('rejects an end at or past the total', () => {
    fc.assert(
      fc.property(offset, fc.nat(1000), (total, d) => {
        expect(() => parseContentRange(`bytes 0-${total + d}/${total}`)).toThrow(RangeSyntaxError);
      }),
    );
  });

  it('rejects anything that is not the grammar', () => {
    for (const bad of [
      '',
      'bytes',
      'bytes 1-2',
      'bytes */10',
      'items 0-1/2',
      'bytes -1-2/3',
      'bytes 0-1/2/3',
      'bytes 0x1-2/3',
      'bytes 1-/3',
    ]) {
      expect(() => parseContentRange(bad)).toThrow(RangeSyntaxError);
    }
    fc.assert(
      fc.property(fc.string(), (s) => {
        try {
          const r = parseContentRange(s);
          // whatever parses must satisfy the invariants
          expect(r.start).toBeLessThanOrEqual(r.end);
          if (r.total !== null) expect(r.end).toBeLessThan(r.total);
        } catch (e) {
          expect(e).toBeInstanceOf(RangeSyntaxError);
        }
      }),
    );
  });
});

describe('parseRange and resolveRange', () => {
  it('never resolves outside the content and clips ends to total-1', () => {
    fc.assert(
      fc.property(
        fc.nat(10_000),
        fc.nat(20_000),
        fc.option(fc.nat(20_000), { nil: null }),
        (total, first, lastOrNull) => {
          const last = lastOrNull === null ? null : first + lastOrNull;
          const header = `bytes=${first}-${last ?? ''}`;
          const r = resolveRange(parseRange(header), total);
          if (first >= total) {
            expect(r.satisfiable).toBe(false);
          } else {
            expect(r).toEqual({
              satisfiable: true,
              start: first,
              end: last === null ? total - 1 : Math.min(last, total - 1),
            });
          }
        },
      ),
    );
  });

  it('serves the last n bytes for a suffix range', () => {
    fc.assert(
      fc.property(fc.nat(10_000), fc.integer({ min: 1, max: 20_000 }), (total, n) => {
        const r = resolveRange(parseRange(`bytes=-${n}`), total);
        if (total === 0) expect(r.satisfiable).toBe(false);
        else expect(r).toEqual({ satisfiable: true, start: Math.max(0, total - n), end: total - 1 });
      }),
    );
    expect(resolveRange(parseRange('bytes=-0'), 10)).toEqual({ satisfiable: false });
  });

  it('reads positions of any number of digits: leading zeros, and ends or starts past any content', () => {
    expect(resolveRange(parseRange('bytes=0-00000000000000000000000000004'), 10)).toEqual({
      satisfiable: true,
      start: 0,
      end: 4,
    });
    expect(resolveRange(parseRange(`bytes=2-${'9'.repeat(23)}`), 10)).toEqual({ satisfiable: true, start: 2, end: 9 });
    expect(resolveRange(parseRange(`bytes=2-${'9'.repeat(400)}`), 10)).toEqual({ satisfiable: true, start: 2, end: 9 });
    expect(resolveRange(parseRange(`bytes=${'9'.repeat(20)}-`), 10)).toEqual({ satisfiable: false });
    expect(resolveRange(parseRange(`bytes=-${'9'.repeat(30)}`), 10)).toEqual({ satisfiable: true, start: 0, end: 9 });
  });

  it('tells the legacy form from the RFC form', () => {
    expect(parseRange('bytes 0-9/100')).toEqual({ form: 'legacy', first: 0, last: 9, total: 100 });
    expect(parseRange('bytes 0-9/*')).toEqual({ form: 'legacy', first: 0, last: 9, total: null });
    expect(parseRange('bytes=0-9')).toEqual({ form: 'rfc', first: 0, last: 9 });
    expect(parseRange('bytes=5-')).toEqual({ form: 'rfc', first: 5, last: null });
    expect(parseRange('Bytes=-5')).toEqual({ form: 'rfc-suffix', length: 5 });
  });

  it('rejects malformed, reversed and multiple ranges', () => {
    for (const bad of [
      '',
      'bytes=',
      'bytes=-',
      'bytes=5-1',
      'bytes=0-1,3-4',
      'bytes 5-1/10',
      'lines=0-1',
      'bytes=a-b',
    ]) {
      expect(() => parseRange(bad)).toThrow(RangeSyntaxError);
    }
    fc.assert(
      fc.property(fc.string(), (s) => {
        try {
          parseRange(s);
        } catch (e) {
          expect(e).toBeInstanceOf(RangeSyntaxError);
        }
      }),
    );
  });
});

describe('X-Received-Ranges', () => {
  it('writes X-Received-Ranges and reads it back', () => {
    fc.assert(
      fc.property(fc.array(fc.tuple(offset, fc.nat(2 ** 20)), { maxLength: 20 }), (pairs) => {
        const ranges = pairs.map(([start, n]) => ({ start, end: start + n }));
        expect(parseReceivedRanges(formatReceivedRanges(ranges))).toEqual(ranges);
      }),
    );
    expect(formatReceivedRanges([])).toBe('');
    expect(parseReceivedRanges(undefined)).toEqual([]);
    expect(() => parseReceivedRanges('0-9,abc')).toThrow();
  });
});
