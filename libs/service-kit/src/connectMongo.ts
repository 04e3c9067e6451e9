import { MongoClient, type Db } from 'mongodb';
import type { ReadinessCheck } from './healthRoutes';

export interface MongoConnection {
  client: MongoClient;
  /** The service's own database. */
  db: Db;
  /** `/readyz` fails while MongoDB does not answer a ping. */
  readiness: ReadinessCheck;
}

/** Connects a service to its MongoDB database (MONGODB_URL, MONGODB_DATABASE); fails when no server answers within 5 s. */
export async function connectMongo(settings: { MONGODB_URL: string; MONGODB_DATABASE: string }, maxPoolSize: number): Promise<MongoConnection> {
  const client = new MongoClient(settings.MONGODB_URL, { serverSelectionTimeoutMS: 5_000, maxPoolSize });
  await client.connect();
  const db = client.db(settings.MONGODB_DATABASE);
  return { client, db, readiness: { name: 'mongodb', check: async () => void (await db.command({ ping: 1 })) } };
}
