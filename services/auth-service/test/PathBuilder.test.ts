import fc from 'fast-check';
import { CertUnreadable, parseDer, type ParsedCertificate } from '../src/certificates/CertificateText';
import { buildPath, type PathSources } from '../src/certificates/PathBuilder';
import {
  crossSignedLoop,
  longChain,
  makeCert,
  makeLeaf,
  makeRoot,
  newKey,
  type MadeCert,
} from './support/TestCertificates';

const p = (c: MadeCert): ParsedCertificate => parseDer(c.der);
const sources = (s: Partial<PathSources>): PathSources => ({
  given: [],
  intermediates: [],
  roots: [],
  removed: new Set(),
  ...s,
});
const DAY = 24 * 3600 * 1000;

/**
 * What a path search cost: `cpuMs`, the CPU this process spent on it (every thread, so the crypto
 * work too), which other processes sharing the cores do not move; and `ms`, its wall time, which
 * they do (with four test files at once and a build beside them, one search once took 240 ms of wall time).
 */
async function timed<T>(fn: () => Promise<T>): Promise<{ value: T; ms: number; cpuMs: number }> {
  const t = process.hrtime.bigint();
  const cpu = process.cpuUsage();
  const value = await fn();
  const { user, system } = process.cpuUsage(cpu);
  return { value, ms: Number(process.hrtime.bigint() - t) / 1e6, cpuMs: (user + system) / 1000 };
}
/** A search's CPU budget; its wall time gets slack for a loaded machine (one that never ends fails either way). */
const CPU_LIMIT_MS = 200;
const WALL_LIMIT_MS = 2_000;

describe('path building', () => {
  let root: MadeCert;
  let intermediate: MadeCert;
  let leaf: MadeCert;

  beforeAll(async () => {
    root = await makeRoot('PB Root');
    intermediate = await makeCert('PB Intermediate', root, { ca: true });
    leaf = await makeLeaf('pb-user', intermediate);
  });

  it('finds leaf → client-given intermediate → registered root', async () => {
    const verdict = await buildPath(p(leaf), sources({ given: [p(intermediate)], roots: [p(root)] }), new Date());
    expect(verdict).toMatchObject({ valid: true });
    expect(verdict.valid && verdict.path.map((c) => c.thumbprint)).toEqual([
      leaf.thumbprint,
      intermediate.thumbprint,
      root.thumbprint,
    ]);
  });

  it('finds the path through a known intermediate when the client sends the leaf only', async () => {
    expect(
      (await buildPath(p(leaf), sources({ intermediates: [p(intermediate)], roots: [p(root)] }), new Date())).valid,
    ).toBe(true);
  });

  it('names the missing issuer and what to do when the intermediate is not known', async () => {
    const verdict = await buildPath(p(leaf), sources({ roots: [p(root)] }), new Date());
    expect(verdict.valid).toBe(false);
    const reason = !verdict.valid ? verdict.reason : '';
    expect(reason).toContain('CN=PB Intermediate, O=Content Platform Tests');
    expect(reason).toContain('PEM');
    expect(reason).toContain('admin trust add --cert');
  });

  it('refuses a removed intermediate even when the client sends it, and a removed root', async () => {
    const byClient = await buildPath(
      p(leaf),
      sources({ given: [p(intermediate)], roots: [p(root)], removed: new Set([intermediate.thumbprint]) }),
      new Date(),
    );
    expect(byClient).toEqual({ valid: false, reason: expect.stringContaining('removed') });
    const rootGone = await buildPath(
      p(leaf),
      sources({ given: [p(intermediate)], roots: [p(root)], removed: new Set([root.thumbprint]) }),
      new Date(),
    );
    expect(rootGone.valid).toBe(false);
  });

  it('refuses a chain whose signature does not verify (same names, another key)', async () => {
    const impostor = await makeCert('PB Intermediate', root, { ca: true }); // same name, different key
    const verdict = await buildPath(p(leaf), sources({ given: [p(impostor)], roots: [p(root)] }), new Date());
    // The key identifiers differ: the impostor is not even a candidate; without them the signature fails.
    expect(verdict.valid).toBe(false);
    const noIds = await makeCert('PB NoIds CA', root, { ca: true, noKeyIds: true });
    const other = await makeCert('PB NoIds CA', root, { ca: true, noKeyIds: true });
    const user = await makeLeaf('pb-noids-user', noIds, { noKeyIds: true });
    const wrong = await buildPath(p(user), sources({ given: [p(other)], roots: [p(root)] }), new Date());
    expect(wrong).toEqual({ valid: false, reason: expect.stringContaining('signature') });
    expect(
      (await buildPath(p(user), sources({ given: [p(other), p(noIds)], roots: [p(root)] }), new Date())).valid,
    ).toBe(true);
  });

  describe('stays bounded', () => {
    it('ends the A↔B cross-signed loop within 200 ms of CPU when neither CA is a trusted root', async () => {
      const loop = await crossSignedLoop('PB Loop');
      const other = await makeRoot('PB Unrelated Root');
      const s = sources({ given: [p(loop.a), p(loop.b), p(loop.aByB), p(loop.bByA)], roots: [p(other)] });
      const user = p(loop.leaf);
      const { value, ms, cpuMs } = await timed(() => buildPath(user, s, new Date()));
      console.log(`A↔B loop: ${ms.toFixed(1)} ms, ${cpuMs.toFixed(1)} ms CPU (${!value.valid && value.reason})`);
      expect(value.valid).toBe(false);
      expect(cpuMs).toBeLessThan(CPU_LIMIT_MS);
      expect(ms).toBeLessThan(WALL_LIMIT_MS);
    });

    it('still finds the root through the loop when one of the CAs is trusted', async () => {
      const loop = await crossSignedLoop('PB Loop2');
      const verdict = await buildPath(
        p(loop.leaf),
        sources({ given: [p(loop.aByB), p(loop.bByA)], roots: [p(loop.b)] }),
        new Date(),
      );
      expect(verdict.valid ? verdict.path.map((c) => c.thumbprint) : verdict.reason).toEqual([
        loop.leaf.thumbprint,
        loop.aByB.thumbprint,
        loop.b.thumbprint,
      ]);
    });

    it('refuses a chain of 1,000 CAs (given or known) at the depth cap within 200 ms of CPU', async () => {
      const top = await makeRoot('PB Long Root');
      const chain = await longChain(1000, top, 'PB Link');
      const user = await makeLeaf('pb-long-user', chain[0]!);
      const parsed = chain.map(p);
      for (const s of [
        sources({ given: parsed, roots: [p(top)] }),
        sources({ intermediates: parsed, roots: [p(top)] }),
      ]) {
        const parsedUser = p(user);
        const { value, ms, cpuMs } = await timed(() => buildPath(parsedUser, s, new Date()));
        console.log(`chain of 1,000: ${ms.toFixed(1)} ms, ${cpuMs.toFixed(1)} ms CPU`);
        expect(value).toEqual({ valid: false, reason: expect.stringContaining('longer than 8') });
        expect(cpuMs).toBeLessThan(CPU_LIMIT_MS);
        expect(ms).toBeLessThan(WALL_LIMIT_MS);
      }
      // Eight issuers is the most: seven intermediates and the root validate.
      const short = await longChain(7, top, 'PB Short');
      const shortUser = await makeLeaf('pb-short-user', short[0]!);
      expect((await buildPath(p(shortUser), sources({ given: short.map(p), roots: [p(top)] }), new Date())).valid).toBe(
        true,
      );
    });

    it('refuses a self-issued cycle (a CA naming itself as issuer, signed by another key)', async () => {
      const key = await newKey();
      const selfIssued = await makeCert('PB Cycle CA', await makeRoot('PB Cycle Signer'), {
        ca: true,
        key,
        issuerName: 'PB Cycle CA',
        noKeyIds: true,
      });
      const user = await makeLeaf('pb-cycle-user', selfIssued, { noKeyIds: true });
      const s = sources({ given: [p(selfIssued)], roots: [p(root)] });
      const parsedUser = p(user);
      const { value, ms, cpuMs } = await timed(() => buildPath(parsedUser, s, new Date()));
      expect(value.valid).toBe(false);
      expect(cpuMs).toBeLessThan(CPU_LIMIT_MS);
      expect(ms).toBeLessThan(WALL_LIMIT_MS);
    });

    it('caps the signature checks when hundreds of certificates share the issuer name', async () => {
      const decoys = await Promise.all(
        Array.from({ length: 300 }, () => makeCert('PB Crowd CA', root, { ca: true, noKeyIds: true })),
      );
      const real = await makeCert('PB Crowd CA', root, { ca: true, noKeyIds: true });
      const user = await makeLeaf('pb-crowd-user', real, { noKeyIds: true });
      const s = sources({ given: [...decoys.map(p), p(real)], roots: [p(root)] });
      const parsedUser = p(user);
      const { value, ms, cpuMs } = await timed(() => buildPath(parsedUser, s, new Date()));
      console.log(`300 decoys: ${ms.toFixed(1)} ms, ${cpuMs.toFixed(1)} ms CPU`);
      expect(value).toEqual({ valid: false, reason: expect.stringContaining('limits') });
      expect(cpuMs).toBeLessThan(CPU_LIMIT_MS);
      expect(ms).toBeLessThan(WALL_LIMIT_MS);
    });
  });

  describe('certificate policy (each a 406 in sign-in)', () => {
    const refuse = async (user: MadeCert, given: MadeCert[], roots: MadeCert[], words: string) => {
      const verdict = await buildPath(p(user), sources({ given: given.map(p), roots: roots.map(p) }), new Date());
      expect(verdict).toEqual({ valid: false, reason: expect.stringContaining(words) });
    };

    it('refuses RSA keys under 2048 bits in the leaf and in the chain', async () => {
      await refuse(
        await makeLeaf('pb-rsa1024', intermediate, { key: await newKey({ kind: 'rsa', bits: 1024 }) }),
        [intermediate],
        [root],
        '1024-bit RSA key',
      );
      const weakCa = await makeCert('PB Weak CA', root, { ca: true, key: await newKey({ kind: 'rsa', bits: 1024 }) });
      await refuse(await makeLeaf('pb-under-weak', weakCa), [weakCa], [root], '1024-bit RSA key');
      const weakRoot = await makeRoot('PB Weak Root', { key: await newKey({ kind: 'rsa', bits: 1024 }) });
      await refuse(await makeLeaf('pb-under-weak-root', weakRoot), [], [weakRoot], '1024-bit RSA key');
    });

    it('accepts an RSA 2048 leaf whose keyUsage allows keyEncipherment', async () => {
      const user = await makeLeaf('pb-rsa2048', intermediate, { key: await newKey({ kind: 'rsa', bits: 2048 }) });
      expect(
        (await buildPath(p(user), sources({ given: [p(intermediate)], roots: [p(root)] }), new Date())).valid,
      ).toBe(true);
    });

    it('refuses SHA-1 signatures on the leaf and on an intermediate', async () => {
      await refuse(await makeLeaf('pb-sha1', intermediate, { hash: 'SHA-1' }), [intermediate], [root], 'SHA-1');
      const sha1Ca = await makeCert('PB SHA1 CA', root, { ca: true, hash: 'SHA-1' });
      await refuse(await makeLeaf('pb-under-sha1', sha1Ca), [sha1Ca], [root], 'SHA-1');
    });

    it("refuses a chain longer than an issuer's pathLenConstraint", async () => {
      const strictRoot = await makeRoot('PB PathLen Root', { pathLen: 0 });
      const mid = await makeCert('PB PathLen Mid', strictRoot, { ca: true });
      await refuse(await makeLeaf('pb-pathlen', mid), [mid], [strictRoot], 'pathLenConstraint');
      // pathLen 0 still lets the root issue leaves directly.
      expect(
        (
          await buildPath(
            p(await makeLeaf('pb-pathlen-ok', strictRoot)),
            sources({ roots: [p(strictRoot)] }),
            new Date(),
          )
        ).valid,
      ).toBe(true);
    });

    it('refuses a leaf whose keyUsage forbids what the challenge needs', async () => {
      await refuse(
        await makeLeaf('pb-ec-noagree', intermediate, { keyUsage: ['digitalSignature'] }),
        [intermediate],
        [root],
        'keyAgreement',
      );
      const rsa = await newKey({ kind: 'rsa', bits: 2048 });
      await refuse(
        await makeLeaf('pb-rsa-noencipher', intermediate, { key: rsa, keyUsage: ['digitalSignature', 'keyAgreement'] }),
        [intermediate],
        [root],
        'keyEncipherment',
      );
    });

    it('refuses issuers that are not CAs or may not sign certificates', async () => {
      const notCa = await makeCert('PB Not CA', root, { ca: false, keyUsage: ['keyCertSign'] });
      await refuse(await makeLeaf('pb-under-notca', notCa), [notCa], [root], 'not a CA');
      const noExt = await makeCert('PB No BC', root, {});
      await refuse(await makeLeaf('pb-under-nobc', noExt), [noExt], [root], 'not a CA');
      const noSign = await makeCert('PB No KeyCertSign', root, { ca: true, keyUsage: ['digitalSignature'] });
      await refuse(await makeLeaf('pb-under-nosign', noSign), [noSign], [root], 'keyCertSign');
    });

    it('refuses expired or not yet valid certificates anywhere in the chain', async () => {
      const past = { notBefore: new Date(Date.now() - 10 * DAY), notAfter: new Date(Date.now() - DAY) };
      await refuse(await makeLeaf('pb-expired', intermediate, past), [intermediate], [root], 'expired');
      await refuse(
        await makeLeaf('pb-future', intermediate, { notBefore: new Date(Date.now() + DAY) }),
        [intermediate],
        [root],
        'not valid yet',
      );
      const oldCa = await makeCert('PB Old CA', root, { ca: true, ...past });
      await refuse(await makeLeaf('pb-under-old', oldCa), [oldCa], [root], 'expired');
      const oldRoot = await makeRoot('PB Old Root', past);
      await refuse(await makeLeaf('pb-under-old-root', oldRoot), [], [oldRoot], 'expired');
    });
  });

  describe('fuzzed chain shapes', () => {
    it('answers every mix of cross-signed CAs, roots and removals within 200 ms of CPU each, and only with sound paths', async () => {
      // A small web: 4 CAs, each also cross-signed by the next, leaves under each.
      const cas = await Promise.all([0, 1, 2, 3].map((i) => makeRoot(`PB Web CA ${i}`)));
      const cross = await Promise.all(cas.map((c, i) => makeCert(c.name, cas[(i + 1) % 4]!, { ca: true, key: c.key })));
      const subs = await Promise.all(cas.map((c, i) => makeCert(`PB Web Sub ${i}`, c, { ca: true })));
      const leaves = await Promise.all([...cas, ...subs].map((c, i) => makeLeaf(`pb-web-user-${i}`, c)));
      const pool = [...cas, ...cross, ...subs].map(p);
      const byId = new Map(pool.map((c) => [c.thumbprint, c]));
      await fc.assert(
        fc.asyncProperty(
          fc.constantFrom(...leaves.map(p)),
          fc.subarray(pool),
          fc.subarray(pool),
          fc.subarray(cas.map(p), { minLength: 1 }),
          fc.subarray(pool.map((c) => c.thumbprint)),
          async (user, given, known, roots, removed) => {
            const { value, ms, cpuMs } = await timed(() =>
              buildPath(user, sources({ given, intermediates: known, roots, removed: new Set(removed) }), new Date()),
            );
            expect(cpuMs).toBeLessThan(CPU_LIMIT_MS);
            expect(ms).toBeLessThan(WALL_LIMIT_MS);
            if (!value.valid) return;
            const path = value.path;
            expect(path[0]!.thumbprint).toBe(user.thumbprint);
            expect(roots.map((r) => r.thumbprint)).toContain(path[path.length - 1]!.thumbprint);
            expect(new Set(path.map((c) => c.thumbprint)).size).toBe(path.length);
            for (let i = 1; i < path.length; i++) {
              expect(path[i]!.facts.subjectKey).toBe(path[i - 1]!.facts.issuerKey);
              expect(removed).not.toContain(path[i]!.thumbprint);
              expect(byId.has(path[i]!.thumbprint)).toBe(true);
            }
          },
        ),
        { numRuns: 150 },
      );
    });

    it('never throws on mutated certificates: they are unreadable or refused', async () => {
      const samples = [root, intermediate, leaf].map((c) => c.der);
      const anchors = sources({ given: [p(intermediate)], roots: [p(root)] });
      await fc.assert(
        fc.asyncProperty(
          fc.constantFrom(...samples),
          fc.array(fc.tuple(fc.nat(), fc.integer({ min: 0, max: 255 })), { minLength: 1, maxLength: 6 }),
          async (der, edits) => {
            const bytes = Buffer.from(der);
            for (const [at, value] of edits) bytes[at % bytes.length] = value;
            let parsed: ParsedCertificate;
            try {
              parsed = parseDer(bytes);
            } catch (error) {
              expect(error).toBeInstanceOf(CertUnreadable);
              return;
            }
            const { value, ms, cpuMs } = await timed(() => buildPath(parsed, anchors, new Date()));
            expect(cpuMs).toBeLessThan(CPU_LIMIT_MS);
            expect(ms).toBeLessThan(WALL_LIMIT_MS);
            if (value.valid) expect(Buffer.from(parsed.cert.tbsView).equals(Buffer.from(leaf.cert.tbsView))).toBe(true); // only the signed part unchanged can pass
          },
        ),
        { numRuns: 400 },
      );
    });
  });
});
