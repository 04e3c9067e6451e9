// Without S3_ACCESS_KEY_ID / S3_SECRET_ACCESS_KEY the content-service's S3 client finds its keys
// through the AWS SDK's default credential chain; here its first link, AWS_ACCESS_KEY_ID and
// AWS_SECRET_ACCESS_KEY in the environment (in a pod: IRSA, EKS Pod Identity or the node's role).
import { PassThrough } from 'node:stream';
import { loadConfig } from '../src/config';
import { ObjectStore } from '../src/store/ObjectStore';
import { createS3Client, s3CredentialSource } from '../src/store/s3Client';

const AWS_VARIABLES = ['AWS_ACCESS_KEY_ID', 'AWS_SECRET_ACCESS_KEY', 'AWS_SESSION_TOKEN', 'AWS_PROFILE'] as const;

describe('S3 credentials from the AWS default chain', () => {
  const { prefix } = JSON.parse(process.env.CP_TEST_STACK!) as { prefix: string };
  const bucket = `${prefix}-default-chain`;
  const saved = Object.fromEntries(AWS_VARIABLES.map((v) => [v, process.env[v]]));
  // The service's own settings, with no S3 keys among them.
  const settings = {
    REDIS_URL: process.env.REDIS_URL!,
    S3_ENDPOINT: process.env.S3_ENDPOINT!,
    S3_BUCKET: bucket,
    JWT_ISSUER: 'https://issuer.test',
    JWT_JWKS_URL: 'https://issuer.test/jwks.json',
  };

  afterEach(() => {
    for (const v of AWS_VARIABLES) {
      if (saved[v] === undefined) delete process.env[v];
      else process.env[v] = saved[v];
    }
  });

  it('stores and reads an object with the keys of AWS_ACCESS_KEY_ID / AWS_SECRET_ACCESS_KEY', async () => {
    for (const v of AWS_VARIABLES) delete process.env[v];
    process.env.AWS_ACCESS_KEY_ID = process.env.S3_ACCESS_KEY_ID;
    process.env.AWS_SECRET_ACCESS_KEY = process.env.S3_SECRET_ACCESS_KEY;
    const config = loadConfig(settings);
    expect(s3CredentialSource(config)).toBe('AWS default credential chain');
    const s3 = createS3Client(config);
    try {
      const objects = new ObjectStore(s3, bucket);
      await objects.ensureBucket();
      const bytes = Buffer.from('signed by the default chain');
      await objects.putObject('chain', PassThrough.from([bytes]) as unknown as PassThrough, bytes.length, 'text/plain');
      const stored = await objects.getRange('chain', 0, bytes.length - 1);
      const chunks: Buffer[] = [];
      for await (const chunk of stored.body) chunks.push(chunk as Buffer);
      expect(Buffer.concat(chunks).toString()).toBe('signed by the default chain');
      await objects.delete('chain');
    } finally {
      s3.destroy();
    }
  });

  it('signs with the secret found there: a wrong AWS_SECRET_ACCESS_KEY is refused with 403', async () => {
    for (const v of AWS_VARIABLES) delete process.env[v];
    process.env.AWS_ACCESS_KEY_ID = process.env.S3_ACCESS_KEY_ID;
    process.env.AWS_SECRET_ACCESS_KEY = 'not-the-secret-of-this-key';
    const s3 = createS3Client(loadConfig(settings));
    try {
      await expect(new ObjectStore(s3, bucket).ping()).rejects.toMatchObject({ $metadata: { httpStatusCode: 403 } });
    } finally {
      s3.destroy();
    }
  });
});
