// Extra replicas of a service, started beside the test stack and sharing its database and bucket.
import { join } from 'node:path';
import { DevReceiptSigner } from '@cp/credentials';
import { testStack } from './stack';

export interface ServiceHandle {
  url: string;
  port: number;
  /** /readyz, /healthz/deps and /metrics: never on the API port. */
  adminUrl: string;
  pid: number;
  logFile: string;
  exited: Promise<number | string>;
  stop: (signal?: NodeJS.Signals) => Promise<number | string>;
}

// tools/devstack/stack.js is plain CommonJS shared with the dev tooling.
// eslint-disable-next-line @typescript-eslint/no-require-imports -- the plain-JS stack launcher
export const { startService, freePort } = require('../../tools/devstack/stack') as {
  startService: (
    name: string,
    opts: { port?: number; env: Record<string, string>; logDir: string; readyPath?: string },
  ) => Promise<ServiceHandle>;
  freePort: () => Promise<number>;
};

/** Settings of a content-service replica sharing the test stack's database and bucket. */
export function contentReplicaEnv(extra: Record<string, string> = {}): Record<string, string> {
  const stack = testStack();
  return {
    ...stack.backing,
    LOG_LEVEL: 'info',
    S3_BUCKET: `${stack.prefix}-contents`,
    S3_CREATE_BUCKET: 'true',
    JWT_ISSUER: 'content-platform-dev',
    JWT_JWKS_FILE: join(stack.keysDir, 'jwks.json'),
    RECEIPT_SIGNING_KEY_FILE: new DevReceiptSigner(stack.keysDir).keyFile,
    RECEIPT_CERTIFICATE_FILE: stack.receiptCertificateFile,
    SWEEP_INTERVAL_SECONDS: '3600',
    ...extra,
  };
}

/**
 * A gateway in front of `contentUrl` (a content-service a test started with settings of its own)
 * and of the test stack's auth- and session-services; pushed onto `started` once it runs.
 */
export async function startGatewayFor(
  contentUrl: string,
  logDir: string,
  started: ServiceHandle[],
): Promise<ServiceHandle> {
  const { services } = testStack();
  const gateway = await startService('gateway', {
    logDir,
    env: {
      LOG_LEVEL: 'warn',
      CONTENT_SERVICE_URL: contentUrl,
      AUTH_SERVICE_URL: services['auth-service']!.url,
      SESSION_SERVICE_URL: services['session-service']!.url,
    },
  });
  started.push(gateway);
  return gateway;
}

/**
 * An auth-service and a session-service of their own, with `env` added (rate limits, say), and a
 * gateway in front of them and of the test stack's content-service. Each is pushed onto `started`
 * as soon as it runs, so that the caller's cleanup stops whatever did start. Returns the gateway.
 */
export async function startFront(
  logDirName: string,
  env: Record<string, string>,
  started: ServiceHandle[],
): Promise<ServiceHandle> {
  const stack = testStack();
  const logDir = join(stack.logDir, logDirName);
  const auth = await startService('auth-service', { logDir, env: { ...stack.authEnv, ...env } });
  started.push(auth);
  const session = await startService('session-service', { logDir, env: { ...stack.sessionEnv, ...env } });
  started.push(session);
  const gateway = await startService('gateway', {
    logDir,
    env: {
      LOG_LEVEL: 'warn',
      CONTENT_SERVICE_URL: stack.services['content-service']!.url,
      AUTH_SERVICE_URL: auth.url,
      SESSION_SERVICE_URL: session.url,
    },
  });
  started.push(gateway);
  return gateway;
}
