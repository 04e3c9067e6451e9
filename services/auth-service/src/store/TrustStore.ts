import { randomUUID } from 'node:crypto';
import { Binary, type Collection, type Db } from 'mongodb';
import { parseDer, type ParsedCertificate } from '../certificates/CertificateText';

export interface TrustedCertDoc {
  _id: string; // thumbprint
  kind: 'root' | 'intermediate';
  subject: string;
  der: Binary;
  addedAt: Date;
  /** Set on an intermediate remembered because a chain through it validated up to a root. */
  learned?: boolean;
}

/** A thumbprint the operator removed: refused in every chain, whoever supplies the certificate. */
export interface RemovedCertDoc {
  _id: string; // thumbprint
  removedAt: Date;
}

/** One document whose `rev` changes with every change of the lists: a cheap "did anything change?". */
interface RevisionDoc {
  _id: 'trust';
  rev: string;
}

export interface TrustAnchors {
  roots: ParsedCertificate[];
  intermediates: ParsedCertificate[];
  removed: ReadonlySet<string>;
}

/**
 * The trusted roots (self-signed CAs), known intermediates (registered by the operator or
 * remembered after they validated) and removed thumbprints that chains are built against.
 * Read through a short-lived memory copy: the lists change by operator command, or grow when an
 * intermediate is remembered.
 */
export class TrustStore {
  private readonly docs: Collection<TrustedCertDoc>;
  private readonly removedDocs: Collection<RemovedCertDoc>;
  private readonly revisions: Collection<RevisionDoc>;
  private cached: { at: number; rev: string | null; anchors: TrustAnchors } | undefined;
  /** Certificates already decoded, by thumbprint: a re-read decodes only what is new. */
  private decoded = new Map<string, ParsedCertificate>();

  constructor(
    db: Db,
    private readonly refreshMs = 30_000,
  ) {
    this.docs = db.collection<TrustedCertDoc>('trusted_certificates');
    this.removedDocs = db.collection<RemovedCertDoc>('removed_trusted_certificates');
    this.revisions = db.collection<RevisionDoc>('trust_revision');
  }

  /**
   * True when the lists changed since the memory copy was read (one lookup by `_id`). Lets a
   * failed validation see a root or intermediate the operator has just added, without a stream of
   * bad chains turning into a stream of full reads.
   */
  async changedSinceRead(): Promise<boolean> {
    if (!this.cached) return true;
    return (await this.currentRevision()) !== this.cached.rev;
  }

  /**
   * The anchors. A memory copy older than `maxAgeMs` is checked against the revision (one lookup
   * by `_id`) and the lists are read again only when it changed: their cost, at 1,000 anchors,
   * is paid once per change, not once per `refreshMs` on some sign-in's path.
   */
  async anchors(maxAgeMs = this.refreshMs): Promise<TrustAnchors> {
    if (this.cached && Date.now() - this.cached.at < maxAgeMs) return this.cached.anchors;
    // The revision first: a change landing during the read below is seen as a change next time.
    const rev = await this.currentRevision();
    if (this.cached && maxAgeMs > 0 && rev !== null && rev === this.cached.rev) {
      this.cached.at = Date.now();
      return this.cached.anchors;
    }
    const [docs, removed] = await Promise.all([
      this.docs.find({}).toArray(),
      this.removedDocs.find({}, { projection: { _id: 1 } }).toArray(),
    ]);
    const anchors: TrustAnchors = { roots: [], intermediates: [], removed: new Set(removed.map((d) => d._id)) };
    const decoded = new Map<string, ParsedCertificate>();
    for (const doc of docs) {
      let parsed = this.decoded.get(doc._id);
      if (!parsed) {
        try {
          parsed = parseDer(Buffer.from(doc.der.buffer));
        } catch {
          continue; // written by hand? it cannot anchor anything
        }
      }
      decoded.set(doc._id, parsed);
      (doc.kind === 'root' ? anchors.roots : anchors.intermediates).push(parsed);
    }
    this.decoded = decoded;
    this.cached = { at: Date.now(), rev, anchors };
    return anchors;
  }

  private async currentRevision(): Promise<string | null> {
    return (await this.revisions.findOne({ _id: 'trust' }))?.rev ?? null;
  }

  /** A fresh random value, not a counter: concurrent changes cannot leave the old value behind. */
  private async bumpRevision(): Promise<void> {
    await this.revisions.updateOne({ _id: 'trust' }, { $set: { rev: randomUUID() } }, { upsert: true });
  }

  /**
   * Which of `thumbprints` were removed, asked of the database (not the memory copy): one lookup
   * by `_id` each (a path has a few), which the local server answers from its index where an
   * `$in` would be a scan of every removal kept.
   */
  async removedAmong(thumbprints: string[]): Promise<string[]> {
    const found = await Promise.all(
      thumbprints.map((id) => this.removedDocs.findOne({ _id: id }, { projection: { _id: 1 } })),
    );
    return found.flatMap((d) => (d ? [d._id] : []));
  }

  /** Registers a root or intermediate (operator command); it is no longer removed. */
  async add(doc: TrustedCertDoc): Promise<void> {
    await this.docs.replaceOne({ _id: doc._id }, doc, { upsert: true });
    await this.removedDocs.deleteOne({ _id: doc._id });
    await this.bumpRevision();
    this.cached = undefined;
  }

  /**
   * Remembers intermediates that just validated up to a registered root, so that a later
   * leaf-only body finds them. Never overwrites what is there.
   */
  async remember(
    intermediates: ParsedCertificate[],
    subjectOf: (c: ParsedCertificate) => string,
    now: Date,
  ): Promise<number> {
    let added = 0;
    for (const c of intermediates) {
      const result = await this.docs.updateOne(
        { _id: c.thumbprint },
        {
          $setOnInsert: {
            kind: 'intermediate',
            subject: subjectOf(c),
            der: new Binary(c.der),
            addedAt: now,
            learned: true,
          },
        },
        { upsert: true },
      );
      added += result.upsertedCount;
    }
    if (added > 0) {
      await this.bumpRevision();
      this.cached = undefined;
    }
    return added;
  }

  async list(): Promise<TrustedCertDoc[]> {
    return this.docs.find({}).toArray();
  }

  /**
   * Takes a root or intermediate out of the trust list and records its thumbprint as removed,
   * so that a client-supplied copy is refused too. True when it was in the list.
   */
  async remove(thumbprint: string, now: Date = new Date()): Promise<boolean> {
    const id = thumbprint.toUpperCase();
    await this.removedDocs.updateOne({ _id: id }, { $setOnInsert: { removedAt: now } }, { upsert: true });
    const deleted = (await this.docs.deleteOne({ _id: id })).deletedCount === 1;
    await this.bumpRevision();
    this.cached = undefined;
    return deleted;
  }
}

export { Binary };
