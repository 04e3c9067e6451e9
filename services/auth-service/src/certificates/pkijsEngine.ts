import { webcrypto } from 'node:crypto';
import * as pkijs from 'pkijs';

let installed = false;

/** pkijs runs on Node's WebCrypto; installed once, before the first pkijs call. */
export function usePkijsEngine(): typeof pkijs {
  if (!installed) {
    pkijs.setEngine(
      'node',
      new pkijs.CryptoEngine({
        name: 'node',
        crypto: webcrypto as unknown as ConstructorParameters<typeof pkijs.CryptoEngine>[0]['crypto'],
      }),
    );
    installed = true;
  }
  return pkijs;
}
