// @tus/server with its S3 store (@tus/s3-store), as a process of its own on the platform's S3
// server: the baseline of `pnpm bench tus`. Prints "listening" once it listens.
//   node bench/_tus-server.mjs <port> <bucket>   (S3_ENDPOINT, S3_ACCESS_KEY_ID, S3_SECRET_ACCESS_KEY)
import http from 'node:http';
import { S3Store } from '@tus/s3-store';
import { Server } from '@tus/server';

const [port, bucket] = process.argv.slice(2);
const server = new Server({
  path: '/files',
  datastore: new S3Store({
    // The platform's part size, so that both write S3 parts of the same size.
    partSize: 64 * 1024 * 1024,
    s3ClientConfig: {
      bucket,
      region: 'us-east-1',
      endpoint: process.env.S3_ENDPOINT,
      forcePathStyle: true,
      credentials: { accessKeyId: process.env.S3_ACCESS_KEY_ID, secretAccessKey: process.env.S3_SECRET_ACCESS_KEY },
      // As the platform's own S3 client: checksums only where S3 requires them.
      requestChecksumCalculation: 'WHEN_REQUIRED',
      responseChecksumValidation: 'WHEN_REQUIRED',
    },
  }),
});
http
  .createServer((req, res) => void server.handle(req, res))
  .listen(Number(port), '127.0.0.1', () => process.stdout.write('listening\n'));
