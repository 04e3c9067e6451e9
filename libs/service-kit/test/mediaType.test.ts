import fc from 'fast-check';
import { isValidMediaType } from '../src/mediaType';

describe('isValidMediaType', () => {
  it.each([
    'application/octet-stream',
    'text/plain; charset=utf-8',
    'text/plain;charset="utf-8"',
    'a/b; c="d\\"e"',
    'image/svg+xml',
    'x/y;',
    'multipart/form-data; boundary=----abc',
  ])('accepts %s', (value) => {
    expect(isValidMediaType(value)).toBe(true);
  });

  it.each([
    'text/plain; charset=\xff\xe9',
    'text',
    '/plain',
    'text/',
    'text/plain; charset',
    'text/pl ain',
    'a/b; c="unterminated',
    'тип/подтип',
    '',
    `text/${'a'.repeat(251)}`,
  ])('refuses %j', (value) => {
    expect(isValidMediaType(value)).toBe(false);
  });

  it('refuses every value with a byte outside ASCII, and every value over 255 characters', () => {
    fc.assert(
      fc.property(fc.string({ maxLength: 40 }), fc.integer({ min: 0x80, max: 0xffff }), fc.nat(40), (s, code, at) => {
        const value = `text/plain; p=${s.slice(0, at)}${String.fromCharCode(code)}${s.slice(at)}`;
        expect(isValidMediaType(value)).toBe(false);
      }),
    );
    fc.assert(
      fc.property(fc.integer({ min: 256, max: 5000 }), (n) =>
        expect(isValidMediaType(`a/${'b'.repeat(n - 2)}`)).toBe(false),
      ),
    );
  });

  it('accepts every token/token with token=token parameters', () => {
    const token = fc.string({
      unit: fc.constantFrom(..."abcXYZ019!#$%&'*+.^_`|~-".split('')),
      minLength: 1,
      maxLength: 10,
    });
    fc.assert(
      fc.property(token, token, fc.array(fc.tuple(token, token), { maxLength: 3 }), (type, sub, params) => {
        expect(isValidMediaType(`${type}/${sub}${params.map(([k, v]) => `; ${k}=${v}`).join('')}`)).toBe(true);
      }),
    );
  });
});
