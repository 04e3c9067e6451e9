import { Binary, MongoServerError, type Collection, type Db } from 'mongodb';

export interface UserDoc {
  _id: string; // userId (UUID, lower-case)
  owners: string[];
  createdAt: Date;
}

export interface CertificateDoc {
  _id: string; // SHA-1 thumbprint, upper-case hex: unique by construction
  userId: string;
  subject: string;
  notAfter: Date;
  der: Binary;
  addedAt: Date;
}

/** What the registry says about a signed-in user and the certificate they signed in with. */
export type Registration =
  { registered: true; owners: string[] } | { registered: false; reason: 'UserRemoved' | 'CertificateRemoved' };

/** Whether a user (and a certificate of theirs) is still registered: asked at every refresh. */
export interface RegistrationChecker {
  check(userId: string, thumbprint: string | undefined): Promise<Registration>;
}

export class ThumbprintTaken extends Error {
  override readonly name = 'ThumbprintTaken';
  readonly code = 'CP_ERR_THUMBPRINT_TAKEN';
}

/**
 * Users, the owners each may act for, and their certificates by thumbprint. Written by the
 * auth-service's operator command; read by the auth-service at sign-in and by the session-service
 * at refresh (which therefore never calls the auth-service).
 */
export class UserRegistry implements RegistrationChecker {
  readonly users: Collection<UserDoc>;
  readonly certificates: Collection<CertificateDoc>;

  constructor(db: Db) {
    this.users = db.collection<UserDoc>('users');
    this.certificates = db.collection<CertificateDoc>('certificates');
  }

  async ensureIndexes(): Promise<void> {
    await this.certificates.createIndex({ userId: 1 });
  }

  /** Whose certificate this is, if it is registered: the stored certificate itself is not read. */
  async certificate(thumbprint: string): Promise<Pick<CertificateDoc, '_id' | 'userId'> | null> {
    return this.certificates.findOne({ _id: thumbprint.toUpperCase() }, { projection: { userId: 1 } });
  }

  async user(userId: string): Promise<UserDoc | null> {
    return this.users.findOne({ _id: userId.toLowerCase() });
  }

  /**
   * Is the user, and the certificate the session signed in with (when it names one), still
   * registered? Read afresh each time: a removed certificate counts at the next refresh.
   */
  async check(userId: string, thumbprint: string | undefined): Promise<Registration> {
    const [user, cert] = await Promise.all([
      this.user(userId),
      thumbprint === undefined ? null : this.certificate(thumbprint),
    ]);
    if (!user) return { registered: false, reason: 'UserRemoved' };
    if (thumbprint !== undefined && (!cert || cert.userId !== user._id))
      return { registered: false, reason: 'CertificateRemoved' };
    return { registered: true, owners: user.owners };
  }

  /** Creates the user or adds owners to it (operator command; not raced by requests). */
  async upsertUser(userId: string, owners: string[], now: Date): Promise<UserDoc> {
    const id = userId.toLowerCase();
    const existing = await this.users.findOne({ _id: id });
    const merged = [...new Set([...(existing?.owners ?? []), ...owners.map((o) => o.toLowerCase())])];
    if (existing) await this.users.updateOne({ _id: id }, { $set: { owners: merged } });
    else await this.users.insertOne({ _id: id, owners: merged, createdAt: now });
    return { _id: id, owners: merged, createdAt: existing?.createdAt ?? now };
  }

  /** Registers a certificate for a user; a thumbprint belongs to one user only. */
  async addCertificate(doc: CertificateDoc): Promise<'added' | 'already'> {
    try {
      await this.certificates.insertOne(doc);
      return 'added';
    } catch (error) {
      if (!(error instanceof MongoServerError && error.code === 11000)) throw error;
      const held = await this.certificates.findOne({ _id: doc._id });
      if (held?.userId === doc.userId) return 'already';
      throw new ThumbprintTaken(`certificate ${doc._id} is registered to another user`);
    }
  }

  /** Unregisters a certificate: it no longer signs anyone in. True when it was registered. */
  async removeCertificate(thumbprint: string): Promise<boolean> {
    return (await this.certificates.deleteOne({ _id: thumbprint.toUpperCase() })).deletedCount === 1;
  }
}
