import { S3Client } from '@aws-sdk/client-s3';
import { DevKeys } from '@cp/credentials';

export interface TestStack {
  prefix: string;
  /** Origins the gateway lets call the API (CORS), one per browser test file, on a port free at setup. */
  browserOrigins: { uppy: string; client: string };
  gatewayUrl: string;
  /** The gateway's admin port: /readyz, /healthz/deps and /metrics (not served on its API port). */
  gatewayAdminUrl: string;
  keysDir: string;
  /** The certificate of the key the content-service signs receipts with (PEM, self-signed). */
  receiptCertificateFile: string;
  /** The audit trail every service of the stack (and the admin command lines tests run) appends to. */
  auditFile: string;
  logDir: string;
  backing: {
    S3_ENDPOINT: string;
    S3_ACCESS_KEY_ID: string;
    S3_SECRET_ACCESS_KEY: string;
    MONGODB_URL: string;
    REDIS_URL: string;
  };
  /** Each service's API address and its admin address (/readyz, /healthz/deps, /metrics). */
  services: Record<string, { url: string; adminUrl: string; pid: number }>;
  /** The auth-service's database (for the admin command line). */
  authDatabase: string;
  /** The secret each caller sends to /internal/* of the service it calls. */
  internalSecrets: { authToSession: string; contentToSession: string };
  /** The session-service's environment, to start another replica of it. */
  sessionEnv: Record<string, string>;
  /** The auth-service's environment, to start another one (with other settings). */
  authEnv: Record<string, string>;
}

let parsed: { raw: string; stack: TestStack } | undefined;

/**
 * Where the stack of this test run listens (started once by the global setup). Read once per test
 * file: the HTTP helpers ask for it on every request (10,000 of them in contents-list.e2e).
 */
export function testStack(): TestStack {
  const raw = process.env.CP_TEST_STACK;
  if (!raw) throw new Error('CP_TEST_STACK is not set: run system tests through jest with the global setup');
  if (parsed?.raw !== raw) parsed = { raw, stack: JSON.parse(raw) as TestStack };
  return parsed.stack;
}

/** A Bearer token for `owners` signed by the dev key the test stack trusts. */
export async function tokenFor(
  owners: string[],
  opts: { ttlSeconds?: number; audience?: string; issuer?: string; notBefore?: number } = {},
): Promise<string> {
  return new DevKeys(testStack().keysDir).mint({ owners, ...opts });
}

/** A client of the test stack's S3 server (to look at what the services left in the bucket). */
export function testS3Client(): S3Client {
  const { backing } = testStack();
  return new S3Client({
    endpoint: backing.S3_ENDPOINT,
    region: 'us-east-1',
    forcePathStyle: true,
    credentials: { accessKeyId: backing.S3_ACCESS_KEY_ID, secretAccessKey: backing.S3_SECRET_ACCESS_KEY },
  });
}
