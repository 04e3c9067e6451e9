import { X509Certificate } from 'node:crypto';
import { readFileSync, writeFileSync } from 'node:fs';
import type { Command } from '../command';
import { UsageError } from '../usage';

/**
 * `content receipt <id> [--out <file>] [--cert <platform-cert.pem>]`: the content's signed receipt,
 * checked (against --cert when given, which must be its signer; else only against the certificate
 * the receipt carries, as the output says) and printed; --out keeps the DER for `openssl cms`.
 */
export const receipt: Command = async ({ args, flags, client, signal, needOwner, needCredentials, print }) => {
  needCredentials();
  const [id] = args;
  if (!id) throw new UsageError('receipt needs a content id');
  let certificate: Buffer | undefined;
  if (flags.cert !== undefined) {
    certificate = readFileSync(flags.cert);
    try {
      new X509Certificate(certificate);
    } catch {
      throw new UsageError(
        `--cert ${flags.cert} holds no certificate (PEM or DER): give the platform's receipt certificate`,
      );
    }
  }
  const r = await client.receipt(needOwner(), id, { certificate, signal });
  if (flags.out !== undefined) writeFileSync(flags.out, r.der);
  const checked =
    r.signer.checkedAgainst === 'given'
      ? `signature verified against the certificate given (--cert ${flags.cert}): ${r.signer.subject}`
      : `signature verified only against the certificate the receipt carries (${r.signer.subject}, SHA-256 ` +
        `fingerprint ${r.signer.fingerprint256}): pass --cert <the platform's receipt certificate> to know the platform signed it`;
  const written = flags.out !== undefined ? `\nreceipt (DER) written to ${flags.out}` : '';
  print(`${JSON.stringify(r.document, null, 2)}\n${checked}${written}`, {
    id,
    document: r.document,
    signer: { ...r.signer, signingTime: r.signer.signingTime.toISOString() },
    ...(flags.out !== undefined ? { out: flags.out } : {}),
  });
  return 0;
};
