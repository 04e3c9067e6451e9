// Child process of `pnpm bench hops`: the floors each hop of the data path is held against.
//   node bench/_floor.js proxy <port> <target-url>   a bare Node.js HTTP proxy hop: http.request piped both ways
//   node bench/_floor.js receiver <port>             a bare Node.js receiver: PUT /part streams the body into
//                                                    UploadPart, PUT /object into PutObject, GET /object
//                                                    streams a ranged GetObject out
//                                                    and the least an unaligned chunk needs (see `chunks`)
// Prints "ready" once it listens. No checks, no bookkeeping: what is left is the cost of the hop itself.
const http = require('node:http');
const { Readable } = require('node:stream');
const {
  CompleteMultipartUploadCommand,
  CreateMultipartUploadCommand,
  UploadPartCommand,
  GetObjectCommand,
  PutObjectCommand,
} = require('@aws-sdk/client-s3');
const { MongoClient } = require('mongodb');
const { s3Client } = require('./_support');

const [mode, port, target] = process.argv.slice(2);

function proxy() {
  const to = new URL(target);
  const agent = new http.Agent({ keepAlive: true, maxSockets: 64 });
  return http.createServer((req, res) => {
    const up = http.request(
      { host: to.hostname, port: to.port, method: req.method, path: req.url, headers: req.headers, agent },
      (answer) => {
        res.writeHead(answer.statusCode, answer.headers);
        answer.pipe(res);
      },
    );
    up.on('error', () => res.destroy());
    req.pipe(up);
  });
}

/**
 * The least a 1 MiB chunk that is not a whole part needs before it may be acknowledged, and after:
 * POST /chunks opens a multipart upload; PUT /chunks/<i> stages chunk i as an object of its own and
 * records it with one insert into the database; the chunk that fills a part starts that part's
 * assembly (its staged objects read back, in order, into one UploadPart) without waiting for it;
 * the last chunk waits for the assemblies and completes the upload. No checks, no leases, no
 * fencing, no clean-up: a floor, not a design.
 */
function chunks(s3, db) {
  const uploads = new Map();
  const assemble = async (up, k, first, count) => {
    const keys = Array.from({ length: count }, (_, j) => `${up.key}.staged/${first + j}`);
    const body = Readable.from(
      (async function* () {
        for (const Key of keys) yield* (await s3.send(new GetObjectCommand({ Bucket: up.bucket, Key }))).Body;
      })(),
    );
    const out = await s3.send(
      new UploadPartCommand({
        Bucket: up.bucket,
        Key: up.key,
        UploadId: up.id,
        PartNumber: k,
        Body: body,
        ContentLength: count * up.chunk,
      }),
    );
    return { PartNumber: k, ETag: out.ETag };
  };
  return async (req, res, url, q) => {
    if (req.method === 'POST') {
      const out = await s3.send(new CreateMultipartUploadCommand({ Bucket: q.bucket, Key: q.key }));
      const up = {
        bucket: q.bucket,
        key: q.key,
        id: out.UploadId,
        chunk: Number(q.chunk),
        perPart: Number(q.perPart),
        of: Number(q.of),
        parts: [],
      };
      uploads.set(q.key, up);
      res.writeHead(201).end();
      return;
    }
    const up = uploads.get(q.key);
    const i = Number(url.pathname.split('/')[2]);
    await s3.send(
      new PutObjectCommand({ Bucket: up.bucket, Key: `${up.key}.staged/${i}`, Body: req, ContentLength: up.chunk }),
    );
    await db.collection('floor_chunks').insertOne({ _id: `${up.key}:${i}`, key: up.key, i, at: new Date() });
    const last = i === up.of - 1;
    if ((i + 1) % up.perPart === 0 || last) {
      const first = i - (i % up.perPart);
      const part = assemble(up, first / up.perPart + 1, first, i - first + 1);
      part.catch(() => undefined); // awaited by the last chunk; not an unhandled rejection before that
      up.parts.push(part);
    }
    if (last) {
      const Parts = await Promise.all(up.parts);
      await s3.send(
        new CompleteMultipartUploadCommand({
          Bucket: up.bucket,
          Key: up.key,
          UploadId: up.id,
          MultipartUpload: { Parts },
        }),
      );
      uploads.delete(up.key);
    }
    res.writeHead(last ? 201 : 204).end();
  };
}

function receiver() {
  const s3 = s3Client();
  // Connects on the first chunk only (the other routes need no database).
  const mongo = new MongoClient(process.env.MONGODB_URL ?? 'mongodb://127.0.0.1:27017/');
  const onChunk = chunks(s3, mongo.db(process.env.FLOOR_DATABASE ?? 'bench_floor'));
  const server = http.createServer(async (req, res) => {
    const url = new URL(req.url, 'http://floor');
    const q = Object.fromEntries(url.searchParams);
    try {
      if (url.pathname.startsWith('/chunks')) {
        await onChunk(req, res, url, q);
      } else if (req.method === 'PUT' && url.pathname === '/part') {
        const out = await s3.send(
          new UploadPartCommand({
            Bucket: q.bucket,
            Key: q.key,
            UploadId: q.upload,
            PartNumber: Number(q.n),
            Body: req,
            ContentLength: Number(req.headers['content-length']),
          }),
        );
        res.writeHead(200, { 'content-type': 'application/json' }).end(JSON.stringify({ etag: out.ETag }));
      } else if (req.method === 'PUT' && url.pathname === '/object') {
        const out = await s3.send(
          new PutObjectCommand({
            Bucket: q.bucket,
            Key: q.key,
            Body: req,
            ContentLength: Number(req.headers['content-length']),
          }),
        );
        res.writeHead(200, { 'content-type': 'application/json' }).end(JSON.stringify({ etag: out.ETag }));
      } else if (req.method === 'GET' && url.pathname === '/object') {
        const out = await s3.send(new GetObjectCommand({ Bucket: q.bucket, Key: q.key, Range: req.headers.range }));
        res.writeHead(206, { 'content-length': out.ContentLength, 'content-type': 'application/octet-stream' });
        out.Body.pipe(res);
      } else {
        res.writeHead(404).end();
      }
    } catch (error) {
      res.writeHead(500).end(String(error));
    }
  });
  server.on('close', () => void mongo.close());
  return server;
}

const server = mode === 'proxy' ? proxy() : receiver();
// As the services' servers (libs/service-kit runServer): idle keep-alive sockets stay open a minute.
server.keepAliveTimeout = 65_000;
server.listen(Number(port), '127.0.0.1', () => process.stdout.write('ready\n'));
process.on('SIGTERM', () => server.close(() => process.exit(0)));
