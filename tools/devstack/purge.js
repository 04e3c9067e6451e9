// Deletes what a stack of the given prefix left in the backing servers: every bucket and every
// database whose name starts with the prefix. Tests and benchmarks call it when they finish, so
// repeated runs do not fill the disk.
const {
  S3Client,
  ListBucketsCommand,
  ListObjectsV2Command,
  DeleteObjectCommand,
  ListMultipartUploadsCommand,
  AbortMultipartUploadCommand,
  DeleteBucketCommand,
} = require('@aws-sdk/client-s3');
const { MongoClient } = require('mongodb');

async function purgeStackData(prefix, backing) {
  const s3 = new S3Client({
    endpoint: backing.S3_ENDPOINT,
    region: 'us-east-1',
    forcePathStyle: true,
    credentials: { accessKeyId: backing.S3_ACCESS_KEY_ID, secretAccessKey: backing.S3_SECRET_ACCESS_KEY },
  });
  try {
    const { Buckets = [] } = await s3.send(new ListBucketsCommand({}));
    for (const { Name: Bucket } of Buckets.filter((b) => b.Name && b.Name.startsWith(prefix))) {
      const uploads = await s3.send(new ListMultipartUploadsCommand({ Bucket }));
      for (const u of uploads.Uploads ?? [])
        await s3.send(new AbortMultipartUploadCommand({ Bucket, Key: u.Key, UploadId: u.UploadId }));
      let token;
      do {
        const page = await s3.send(new ListObjectsV2Command({ Bucket, ContinuationToken: token }));
        for (const o of page.Contents ?? []) await s3.send(new DeleteObjectCommand({ Bucket, Key: o.Key }));
        token = page.IsTruncated ? page.NextContinuationToken : undefined;
      } while (token);
      await s3.send(new DeleteBucketCommand({ Bucket }));
    }
  } finally {
    s3.destroy();
  }
  const mongo = await MongoClient.connect(backing.MONGODB_URL, { serverSelectionTimeoutMS: 5000 });
  try {
    const { databases } = await mongo.db('admin').admin().listDatabases({ nameOnly: true });
    for (const { name } of databases.filter((d) => d.name.startsWith(prefix))) await mongo.db(name).dropDatabase();
  } finally {
    await mongo.close();
  }
}

module.exports = { purgeStackData };
