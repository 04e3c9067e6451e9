import { mongoTimeouts } from '@cp/config';
import { isTracing, traceMongo } from '@cp/tracing';
import type { Db, MongoClient } from 'mongodb';
import type { ReadinessCheck } from './healthRoutes';
import type { Backend } from './startService';

export interface MongoConnection extends Backend {
  client: MongoClient;
  /** The service's own database. */
  db: Db;
  /** `/readyz` fails while MongoDB does not answer a ping. */
  readiness: ReadinessCheck;
}

/**
 * Connects a service to its MongoDB database (MONGODB_URL, MONGODB_DATABASE); every wait on the
 * server (selection, connecting, an operation's answer) is bounded by MONGODB_TIMEOUT_MS.
 */
export async function connectMongo(
  settings: { MONGODB_URL: string; MONGODB_DATABASE: string; MONGODB_TIMEOUT_MS: number },
  maxPoolSize: number,
): Promise<MongoConnection> {
  // Loaded here, not at the top: the gateway takes this package without a database, and the
  // driver's 6 MB of heap would make each of its garbage collections dearer.
  const { MongoClient } = await import('mongodb');
  // Command events (one span per command) only in a process that traces.
  const client = new MongoClient(settings.MONGODB_URL, {
    ...mongoTimeouts(settings.MONGODB_TIMEOUT_MS),
    maxPoolSize,
    monitorCommands: isTracing(),
  });
  traceMongo(client);
  await client.connect();
  const db = client.db(settings.MONGODB_DATABASE);
  return {
    client,
    db,
    readiness: { name: 'mongodb', check: async () => void (await db.command({ ping: 1 })) },
    close: () => client.close(),
  };
}
