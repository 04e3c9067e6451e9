// Child process of `pnpm bench client`: an `aws s3 cp`-style download of one object to a file
// with @aws-sdk/client-s3 straight from the S3 server: 64 MiB ranged GetObjects, 4 in flight, each
// written at its offset. With `verify`, the file is also hashed as the CLI hashes its downloads
// (SHA-256 and CRC-64/NVME, in a worker that follows the written prefix): the same transfer plus
// the same end-to-end check, the limit of what the CLI can reach on this machine.
const { open } = require('node:fs/promises');
const { GetObjectCommand, HeadObjectCommand } = require('@aws-sdk/client-s3');
const { FileDigests } = require('../libs/client/dist/fileDigests');
const { s3Client, inFlight } = require('./_support');

const [Bucket, Key, file, verify] = process.argv.slice(2);
const P = 64 * 1024 * 1024;

async function main() {
  const s3 = s3Client();
  const { ContentLength: total } = await s3.send(new HeadObjectCommand({ Bucket, Key }));
  const handle = await open(file, 'w');
  await handle.truncate(total);
  const ranges = Array.from({ length: Math.ceil(total / P) }, (_, i) => [i * P, Math.min(total, (i + 1) * P) - 1]);
  const hashing = verify === 'verify' ? new FileDigests(file, total) : null;
  const written = ranges.map(() => false);
  let prefix = 0;
  await inFlight(
    4,
    ranges.map(([a, b], i) => async () => {
      const out = await s3.send(new GetObjectCommand({ Bucket, Key, Range: `bytes=${a}-${b}` }));
      let at = a;
      for await (const chunk of out.Body) {
        await handle.write(chunk, 0, chunk.length, at);
        at += chunk.length;
      }
      written[i] = true;
      while (prefix < ranges.length && written[prefix]) prefix++;
      hashing?.written(prefix < ranges.length ? ranges[prefix][0] : total);
    }),
  );
  await handle.close();
  if (hashing) await hashing.digests();
}

main().then(
  () => process.exit(0),
  (error) => {
    console.error(error);
    process.exit(1);
  },
);
