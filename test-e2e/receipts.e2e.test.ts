// Signed receipts of ready contents: GET .../receipt answers a DER CMS SignedData that the real
// `openssl cms -verify` accepts against the stack's receipt certificate, whose JSON names the
// content's size and digests (the CRC-64/NVME computed here from the bytes); one flipped byte and
// openssl refuses it. 409 while the content uploads, 404 for another owner's, 501 from a
// content-service without a signing key, a start-up refused for a key that is not the
// certificate's, and the `content receipt` command.
import { spawnSync } from 'node:child_process';
import { createHash, generateKeyPairSync, randomBytes, randomUUID } from 'node:crypto';
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Crc64Nvme } from '@aws-sdk/crc64-nvme';
import { selfSignedCertificate } from '@cp/credentials';
import Ajv2020 from 'ajv/dist/2020';
import addFormats from 'ajv-formats';
import { parse } from 'yaml';
import { cli } from './support/contentCli';
import { OPENAPI_FILE } from './support/contract';
import { call, contentsUrl, newOwner, P, postPart, putPart } from './support/http';
import { contentReplicaEnv, startService, type ServiceHandle } from './support/replicas';
import { signedInUser } from './support/signin';
import { testStack, tokenFor } from './support/stack';

const DAY = 24 * 3600 * 1000;
const base64Crc = async (bytes: Uint8Array): Promise<string> => {
  const crc = new Crc64Nvme();
  crc.update(bytes);
  return Buffer.from(await crc.digest()).toString('base64');
};
const base64Sha256 = (bytes: Uint8Array): string => createHash('sha256').update(bytes).digest('base64');

/** `openssl cms -verify` of a DER receipt against the stack's certificate: its exit code and the document it prints. */
function opensslVerify(der: Buffer, certificateFile = testStack().receiptCertificateFile) {
  const file = join(dir, `${randomUUID()}.der`);
  writeFileSync(file, der);
  const r = spawnSync(
    'openssl',
    ['cms', '-verify', '-inform', 'DER', '-in', file, '-CAfile', certificateFile, '-purpose', 'any'],
    { encoding: 'utf8' },
  );
  return { code: r.status, stdout: r.stdout, stderr: r.stderr };
}

const dir = mkdtempSync(join(tmpdir(), 'cp-receipts-'));
const openapi = parse(readFileSync(OPENAPI_FILE, 'utf8')) as {
  components: { schemas: Record<string, object> };
};
const ajv = new Ajv2020({ strict: false });
addFormats(ajv);
const conformsToContentReceipt = ajv.compile(openapi.components.schemas.ContentReceipt!);

describe('signed receipts', () => {
  const owner = newOwner();
  let token: string;
  const started: ServiceHandle[] = [];

  beforeAll(async () => {
    token = await tokenFor([owner]);
  });
  afterAll(async () => {
    await Promise.all(started.map((s) => s.stop()));
    rmSync(dir, { recursive: true, force: true });
  });

  const receiptUrl = (id: string, ownerId = owner) => `${contentsUrl(ownerId, id)}/receipt`;
  const receiptOf = (id: string, ownerId = owner, auth = token) => call(receiptUrl(id, ownerId), { token: auth });
  const expectCode = (answer: { status: number; json: () => { id: string } }, status: number, code: string) =>
    expect(`${answer.status} ${answer.json().id}`).toBe(`${status} urn:error:contents:${code}`);

  it('signs a one-request upload’s receipt that openssl verifies against the stack’s certificate', async () => {
    const bytes = randomBytes(10_000);
    const before = new Date(Math.floor(Date.now() / 1000) * 1000);
    const created = await call(contentsUrl(owner), {
      method: 'POST',
      body: bytes,
      token,
      headers: { 'content-type': 'text/csv', 'content-digest': `sha-256=:${base64Sha256(bytes)}:` },
    });
    expect(created.status).toBe(201);
    const id = created.json().id as string;

    const receipt = await receiptOf(id);
    expect(receipt.status).toBe(200);
    expect(receipt.headers.get('content-type')).toBe('application/pkcs7-mime; smime-type=signed-data');
    expect(Number(receipt.headers.get('content-length'))).toBe(receipt.body.length);
    const verified = opensslVerify(receipt.body);
    expect(verified.stderr).toContain('Verification successful');
    expect(verified.code).toBe(0);
    const document = JSON.parse(verified.stdout);
    expect(conformsToContentReceipt(document)).toBe(true);
    expect(document).toMatchObject({
      'content-id': id,
      'owner-id': owner,
      size: bytes.length,
      'content-type': 'text/csv',
      digests: { 'sha-256': base64Sha256(bytes), crc64nvme: await base64Crc(bytes) },
      uploader: `bearer:${owner}`, // the dev token's subject
      'uploader-certificate': null,
    });
    expect(new Date(document['created-at']).getTime()).toBeGreaterThanOrEqual(before.getTime() - 1000);
    expect(new Date(document['completed-at']).getTime()).toBeGreaterThanOrEqual(before.getTime() - 1000);
    expect(new Date(document.issued).getTime()).toBeGreaterThanOrEqual(new Date(document['completed-at']).getTime());

    // One byte of the document flipped: openssl refuses it.
    const flipped = Buffer.from(receipt.body);
    flipped[flipped.indexOf(Buffer.from(`"size":${bytes.length}`)) + 8]! ^= 0x01;
    const refused = opensslVerify(flipped);
    expect(refused.code).not.toBe(0);
    expect(refused.stderr).toMatch(/verify error|digest failure/i);
  });

  it('names the user and the certificate thumbprint of a session that signed in by certificate', async () => {
    const {
      user,
      userId,
      owner: signedOwner,
      pair: { Sid },
    } = await signedInUser('receipts');
    const cookie = { cookie: `auth.sid=${Sid}` };
    // A one-request content, and one sent in two parts: the multipart upload keeps it too.
    const one = await call(contentsUrl(signedOwner), { method: 'POST', body: randomBytes(100), headers: cookie });
    expect(one.status).toBe(201);
    const first = await call(contentsUrl(signedOwner), {
      method: 'POST',
      body: randomBytes(100),
      headers: { ...cookie, 'content-range': 'bytes 0-99/200' },
    });
    const id = first.json().id as string;
    const last = await call(contentsUrl(signedOwner, id), {
      method: 'PUT',
      body: randomBytes(100),
      headers: { ...cookie, 'content-range': 'bytes 100-199/200' },
    });
    expect(last.status).toBe(201);
    for (const contentId of [one.json().id as string, id]) {
      const receipt = await call(receiptUrl(contentId, signedOwner), { headers: cookie });
      expect(receipt.status).toBe(200);
      const verified = opensslVerify(receipt.body);
      expect(verified.code).toBe(0);
      expect(JSON.parse(verified.stdout)).toMatchObject({
        uploader: `session:${userId}`,
        'uploader-certificate': user.thumbprint,
      });
    }
  });

  it('names the size and CRC-64/NVME of a content sent in two parts, the last first', async () => {
    const bytes = randomBytes(P + 1000);
    const total = bytes.length;
    const last = await postPart(owner, token, bytes.subarray(P), `bytes ${P}-${total - 1}/${total}`);
    expect(last.status).toBe(201);
    const id = last.json().id as string;
    expectCode(await receiptOf(id), 409, 'contentNotReady');
    expect((await putPart(owner, id, token, bytes.subarray(0, P), `bytes 0-${P - 1}/${total}`)).status).toBe(201);

    const receipt = await receiptOf(id);
    expect(receipt.status).toBe(200);
    const verified = opensslVerify(receipt.body);
    expect(verified.code).toBe(0);
    const document = JSON.parse(verified.stdout);
    expect(conformsToContentReceipt(document)).toBe(true);
    expect(document).toMatchObject({ 'content-id': id, size: total, digests: { crc64nvme: await base64Crc(bytes) } });
    expect(document.digests['sha-256']).toBeUndefined();
  });

  it('answers 409 for a content still uploading, 404 for another owner’s or an unknown one, 403 and 400', async () => {
    const open = await postPart(owner, token, randomBytes(10), 'bytes 0-9/30');
    expectCode(await receiptOf(open.json().id), 409, 'contentNotReady');
    const ready = (await postPart(owner, token, randomBytes(10), null)).json().id as string;
    const other = newOwner();
    const otherToken = await tokenFor([other]);
    // Another owner asking for this content under its own id reads it as unknown.
    expectCode(await receiptOf(ready, other, otherToken), 404, 'contentNotFound');
    expectCode(await receiptOf(randomUUID()), 404, 'contentNotFound');
    expectCode(await receiptOf(ready, owner, otherToken), 403, 'ownerForbidden');
    expectCode(await call(receiptUrl('not-a-uuid'), { token }), 400, 'invalidId');
    expect((await call(receiptUrl(ready))).status).toBe(401);
  });

  it('answers 501 receiptsNotConfigured from a content-service without a signing key', async () => {
    const logDir = join(testStack().logDir, 'receipts-unsigned');
    const {
      RECEIPT_SIGNING_KEY_FILE: _key,
      RECEIPT_CERTIFICATE_FILE: _certificate,
      ...unsigned
    } = contentReplicaEnv({ LOG_LEVEL: 'warn' });
    const content = await startService('content-service', { logDir, env: unsigned });
    started.push(content);
    const gateway = await startService('gateway', {
      logDir,
      env: { LOG_LEVEL: 'warn', CONTENT_SERVICE_URL: content.url },
    });
    started.push(gateway);
    const ready = (await postPart(owner, token, randomBytes(10), null)).json().id as string;
    const answer = await call(`${gateway.url}/v1/${owner}/contents/${ready}/receipt`, { token });
    expectCode(answer, 501, 'receiptsNotConfigured');
  });

  it('refuses to start with a signing key that is not the certificate’s, naming RECEIPT_SIGNING_KEY_FILE', async () => {
    const stranger = join(dir, 'stranger.key');
    writeFileSync(
      stranger,
      generateKeyPairSync('ec', { namedCurve: 'P-256' }).privateKey.export({ type: 'pkcs8', format: 'pem' }),
    );
    const start = startService('content-service', {
      logDir: join(testStack().logDir, 'receipts-wrong-key'),
      env: contentReplicaEnv({ RECEIPT_SIGNING_KEY_FILE: stranger }),
    });
    await expect(start).rejects.toThrow(
      /exited with 1[\s\S]*RECEIPT_SIGNING_KEY_FILE: is not the private key of the certificate in RECEIPT_CERTIFICATE_FILE/,
    );
  });

  describe('`content receipt`', () => {
    const flags = () => ['--owner', owner, '--url', testStack().gatewayUrl];

    it('checks the receipt against --cert, prints its document and keeps the DER with --out', async () => {
      const bytes = randomBytes(1000);
      const id = (await postPart(owner, token, bytes, null)).json().id as string;
      const out = join(dir, 'cli.der');
      const run = await cli(
        ['receipt', id, '--cert', testStack().receiptCertificateFile, '--out', out, ...flags(), '--json'],
        { env: { CONTENT_TOKEN: token } },
      );
      expect(run.code).toBe(0);
      const printed = JSON.parse(run.stdout);
      expect(printed).toMatchObject({
        id,
        out,
        document: { 'content-id': id, 'owner-id': owner, size: 1000, digests: { crc64nvme: await base64Crc(bytes) } },
        signer: { checkedAgainst: 'given' },
      });
      const verified = opensslVerify(readFileSync(out));
      expect(verified.code).toBe(0);
      expect(JSON.parse(verified.stdout)).toEqual(printed.document);

      // Without --cert the receipt is checked against the certificate it carries, and the output says so.
      const loose = await cli(['receipt', id, ...flags()], { env: { CONTENT_TOKEN: token } });
      expect(loose.code).toBe(0);
      expect(JSON.parse(loose.stdout.slice(0, loose.stdout.lastIndexOf('}') + 1))).toMatchObject({ 'content-id': id });
      expect(loose.stdout).toContain('verified only against the certificate the receipt carries');
    });

    it('fails with exit code 7 when the receipt is not signed by the certificate given', async () => {
      const id = (await postPart(owner, token, randomBytes(10), null)).json().id as string;
      const { privateKey } = generateKeyPairSync('ec', { namedCurve: 'P-256' });
      const other = join(dir, 'other.pem');
      writeFileSync(
        other,
        await selfSignedCertificate(privateKey, {
          commonName: 'Not the platform',
          notBefore: new Date(Date.now() - DAY),
          notAfter: new Date(Date.now() + DAY),
        }),
      );
      const run = await cli(['receipt', id, '--cert', other, ...flags()], { env: { CONTENT_TOKEN: token } });
      expect(run.code).toBe(7);
      expect(run.stderr).toContain('the receipt was not signed by the certificate given');
      expect(opensslVerify((await receiptOf(id)).body, other).code).not.toBe(0);
    });
  });
});
