import { Agent as HttpAgent } from 'node:http';
import { Agent as HttpsAgent } from 'node:https';
import { S3Client } from '@aws-sdk/client-s3';
/** The settings the S3 client is made from (the content-service's configuration has them: config.ts). */
export interface S3Settings {
  S3_ENDPOINT?: string;
  S3_REGION: string;
  S3_FORCE_PATH_STYLE: boolean;
  S3_ACCESS_KEY_ID?: string;
  S3_SECRET_ACCESS_KEY?: string;
  S3_TIMEOUT_MS: number;
  REQUEST_IDLE_TIMEOUT_MS: number;
}

/** Where the S3 client's credentials come from, for the start-up log (never the keys themselves). */
export function s3CredentialSource(
  config: Pick<S3Settings, 'S3_ACCESS_KEY_ID'>,
): 'static keys' | 'AWS default credential chain' {
  return config.S3_ACCESS_KEY_ID ? 'static keys' : 'AWS default credential chain';
}

/**
 * The content-service's S3 client. With S3_ACCESS_KEY_ID and S3_SECRET_ACCESS_KEY (loadConfig
 * takes both or neither) it signs with those keys; without them `credentials` is left out, so the
 * SDK's default chain finds them: AWS_* variables, shared files, a web identity token (IRSA), EKS
 * Pod Identity, ECS or the instance role, refreshed by the SDK before they expire.
 */
export function createS3Client(config: S3Settings): S3Client {
  const client = new S3Client({
    endpoint: config.S3_ENDPOINT,
    region: config.S3_REGION,
    forcePathStyle: config.S3_FORCE_PATH_STYLE,
    ...(config.S3_ACCESS_KEY_ID && config.S3_SECRET_ACCESS_KEY
      ? { credentials: { accessKeyId: config.S3_ACCESS_KEY_ID, secretAccessKey: config.S3_SECRET_ACCESS_KEY } }
      : {}),
    // Parts are streamed with their exact length; no whole-body checksums computed up front.
    requestChecksumCalculation: 'WHEN_REQUIRED',
    responseChecksumValidation: 'WHEN_REQUIRED',
    requestHandler: {
      httpAgent: new HttpAgent({ keepAlive: true, maxSockets: 256 }),
      httpsAgent: new HttpsAgent({ keepAlive: true, maxSockets: 256 }),
      connectionTimeout: Math.min(5_000, config.S3_TIMEOUT_MS),
      // An idle socket (no byte either way) for this long is dead; answers are bounded per call in ObjectStore.
      socketTimeout: config.REQUEST_IDLE_TIMEOUT_MS,
    },
    maxAttempts: 2,
  });
  // The SDK's logger step filters every call's input and output for a logger that discards them
  // (a tenth of the CPU a small GetObject costs the SDK); the service logs what it needs itself.
  client.middlewareStack.remove('loggerMiddleware');
  return client;
}
