// Child process of `pnpm bench client`: an `aws s3 cp`-style multipart upload of one file with
// @aws-sdk/lib-storage (64 MiB parts, 4 in flight), straight to the S3 server.
const { createReadStream } = require('node:fs');
const { Upload } = require('@aws-sdk/lib-storage');
const { s3Client } = require('./_support');

const [file, Bucket, Key] = process.argv.slice(2);
new Upload({
  client: s3Client(),
  params: { Bucket, Key, Body: createReadStream(file) },
  partSize: 64 * 1024 * 1024,
  queueSize: 4,
})
  .done()
  .then(
    () => process.exit(0),
    (error) => {
      console.error(error);
      process.exit(1);
    },
  );
