// swc's jest transformer with one more step, for the ESM-only packages it compiles (pkijs, asn1js,
// @peculiar/utils, …; jest.config.js): their modules read `Object`, `ArrayBuffer`, `Uint8Array`, … as globals on every call, and in
// jest's vm context each such read goes through the context's global object, several times slower
// than a local binding. Binding them once at the top of the module makes the same objects local.
const swcJest = require('@swc/jest');

const GLOBALS = [
  'Object',
  'ArrayBuffer',
  'SharedArrayBuffer',
  'Uint8Array',
  'DataView',
  'Array',
  'Math',
  'String',
  'Number',
];

module.exports = {
  createTransformer(options) {
    const inner = swcJest.createTransformer(options);
    const process = (result) => {
      const code = typeof result === 'string' ? result : result.code;
      const prologue = '"use strict";';
      const at = code.startsWith(prologue) ? prologue.length : 0;
      const line = `const { ${GLOBALS.join(', ')} } = globalThis;`;
      const out = code.slice(0, at) + line + code.slice(at);
      return typeof result === 'string' ? out : { ...result, code: out };
    };
    return {
      ...inner,
      process: (src, filename, opts) => process(inner.process(src, filename, opts)),
      getCacheKey: (src, filename, opts) => `${inner.getCacheKey(src, filename, opts)}:${GLOBALS.join()}`,
    };
  },
};
