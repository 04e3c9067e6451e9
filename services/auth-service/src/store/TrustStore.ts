import { Binary, type Collection, type Db } from 'mongodb';
import type { Certificate } from 'pkijs';
import { parseDer } from '../certificates/CertificateText';

export interface TrustedCertDoc {
  _id: string; // thumbprint
  kind: 'root' | 'intermediate';
  subject: string;
  der: Binary;
  addedAt: Date;
}

export interface TrustAnchors {
  roots: Certificate[];
  intermediates: Certificate[];
}

/**
 * The trusted roots (self-signed CAs) and known intermediates that chains are built against.
 * Read through a short-lived memory copy: the list changes by operator command only.
 */
export class TrustStore {
  private readonly docs: Collection<TrustedCertDoc>;
  private cached: { at: number; anchors: TrustAnchors } | undefined;

  constructor(
    db: Db,
    private readonly refreshMs = 30_000,
  ) {
    this.docs = db.collection<TrustedCertDoc>('trusted_certificates');
  }

  /** The anchors, read again when the memory copy is older than `maxAgeMs`. */
  async anchors(maxAgeMs = this.refreshMs): Promise<TrustAnchors> {
    if (this.cached && Date.now() - this.cached.at < maxAgeMs) return this.cached.anchors;
    const docs = await this.docs.find({}).toArray();
    const anchors: TrustAnchors = { roots: [], intermediates: [] };
    for (const doc of docs) {
      const { cert } = parseDer(Buffer.from(doc.der.buffer));
      (doc.kind === 'root' ? anchors.roots : anchors.intermediates).push(cert);
    }
    this.cached = { at: Date.now(), anchors };
    return anchors;
  }

  async add(doc: TrustedCertDoc): Promise<void> {
    await this.docs.replaceOne({ _id: doc._id }, doc, { upsert: true });
    this.cached = undefined;
  }

  async list(): Promise<TrustedCertDoc[]> {
    return this.docs.find({}).toArray();
  }

  async remove(thumbprint: string): Promise<boolean> {
    this.cached = undefined;
    return (await this.docs.deleteOne({ _id: thumbprint.toUpperCase() })).deletedCount === 1;
  }
}

export { Binary };
