import fc from 'fast-check';
import { classifyRange, covers, mergeRanges, type ByteRange } from '../src/uploads/PartGrid';

const range = fc.tuple(fc.nat(500), fc.nat(100)).map(([a, len]): ByteRange => ({ a, b: a + len }));

function bytesOf(ranges: readonly ByteRange[]): Set<number> {
  const s = new Set<number>();
  for (const r of ranges) for (let i = r.a; i <= r.b; i++) s.add(i);
  return s;
}

describe('byte ranges', () => {
  it('merging keeps exactly the same bytes, sorted and disjoint', () => {
    fc.assert(
      fc.property(fc.array(range, { maxLength: 20 }), (ranges) => {
        const merged = mergeRanges(ranges);
        expect(bytesOf(merged)).toEqual(bytesOf(ranges));
        for (let i = 1; i < merged.length; i++) expect(merged[i]!.a).toBeGreaterThan(merged[i - 1]!.b + 1);
      }),
    );
  });

  it('covers a target exactly when every byte of it was received', () => {
    fc.assert(
      fc.property(fc.array(range, { maxLength: 10 }), range, (ranges, target) => {
        const have = bytesOf(ranges);
        let all = true;
        for (let i = target.a; i <= target.b; i++) if (!have.has(i)) all = false;
        expect(covers(ranges, target)).toBe(all);
      }),
    );
  });

  it('classifies a range as retry, overlap or new', () => {
    const received = [
      { a: 0, b: 9 },
      { a: 20, b: 29 },
    ];
    expect(classifyRange({ a: 0, b: 9 }, received)).toBe('retry');
    expect(classifyRange({ a: 10, b: 19 }, received)).toBe('new');
    expect(classifyRange({ a: 5, b: 14 }, received)).toBe('overlap');
    expect(classifyRange({ a: 0, b: 29 }, received)).toBe('overlap');
    expect(classifyRange({ a: 2, b: 3 }, received)).toBe('overlap');
    fc.assert(
      fc.property(fc.array(range, { maxLength: 10 }), range, (ranges, r) => {
        const verdict = classifyRange(r, ranges);
        const touching = ranges.filter((x) => !(x.b < r.a || x.a > r.b));
        if (touching.length === 0) expect(verdict).toBe('new');
        else if (touching.every((x) => x.a === r.a && x.b === r.b)) expect(verdict).toBe('retry');
        else expect(verdict).toBe('overlap');
      }),
    );
  });

  it('merges unordered, touching ranges as X-Received-Ranges lists them', () => {
    expect(
      mergeRanges([
        { a: 10, b: 19 },
        { a: 0, b: 9 },
        { a: 30, b: 39 },
      ]),
    ).toEqual([
      { a: 0, b: 19 },
      { a: 30, b: 39 },
    ]);
    expect(mergeRanges([])).toEqual([]);
  });
});
