import fc from 'fast-check';
import { decodePiece, encodePiece, stagedKey, type Piece } from '../src/store/UploadLedger';

const contentId = '6f1c2a9e-3b7d-4c1a-9e2f-0a1b2c3d4e5f';
const MAX = 30 * 1024 ** 3;

const range = fc
  .tuple(fc.integer({ min: 0, max: MAX - 1 }), fc.integer({ min: 0, max: 64 * 1024 * 1024 - 1 }))
  .map(([a, len]) => ({ a, b: Math.min(a + len, MAX - 1) }));
const hex = (n: number) => fc.string({ unit: fc.constantFrom(...'0123456789abcdef'), minLength: n, maxLength: n });

const partPiece = range.map((r): Piece => ({ ...r, kind: 'part', key: null, sha256: null }));
const ourStaged = fc
  .tuple(range, hex(12), hex(64))
  .map(([r, nonce, sha256]): Piece => ({ ...r, kind: 'staged', key: stagedKey(contentId, r.a, r.b, nonce), sha256 }));
const foreignStaged = fc
  .tuple(range, fc.constantFrom('staging/other/0-9.abc', 'elsewhere/x', `staging/${contentId}/1-2.a/b`), fc.option(hex(64), { nil: null }))
  .map(([r, key, sha256]): Piece => ({ ...r, kind: 'staged', key, sha256 }));

describe('pieces as stored in a part document', () => {
  it('decode(encode(piece)) gives the piece back, whatever its kind and key', () => {
    fc.assert(
      fc.property(fc.oneof(partPiece, ourStaged, foreignStaged), (piece) => {
        expect(decodePiece(contentId, encodePiece(contentId, piece))).toEqual(piece);
      }),
    );
  });

  it('a staged piece under the content prefix is stored without repeating the prefix', () => {
    const piece: Piece = { a: 1048576, b: 2097151, kind: 'staged', key: stagedKey(contentId, 1048576, 2097151, '0a1b2c3d4e5f'), sha256: 'f'.repeat(64) };
    expect(encodePiece(contentId, piece)).toBe(`1048576-2097151 0a1b2c3d4e5f ${'f'.repeat(64)}`);
    expect(encodePiece(contentId, { a: 0, b: 67108863, kind: 'part', key: null, sha256: null })).toBe('0-67108863');
  });

  it('pieces written as sub-documents are read as they are', () => {
    const legacy: Piece = { a: 5, b: 9, kind: 'staged', key: `staging/${contentId}/5-9.abc`, sha256: 'e'.repeat(64) };
    expect(decodePiece(contentId, legacy)).toEqual(legacy);
  });
});
