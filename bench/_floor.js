// Child process of `pnpm bench hops`: the floors each hop of the data path is held against.
//   node bench/_floor.js proxy <port> <target-url>   a bare Node.js HTTP proxy hop: http.request piped both ways
//   node bench/_floor.js receiver <port>             a bare Node.js receiver: PUT /part streams the body into
//                                                    UploadPart, PUT /object into PutObject, GET /object
//                                                    streams a ranged GetObject out
// Prints "ready" once it listens. No checks, no bookkeeping: what is left is the cost of the hop itself.
const http = require('node:http');
const { UploadPartCommand, GetObjectCommand, PutObjectCommand } = require('@aws-sdk/client-s3');
const { s3Client } = require('./_support');

const [mode, port, target] = process.argv.slice(2);

function proxy() {
  const to = new URL(target);
  const agent = new http.Agent({ keepAlive: true, maxSockets: 64 });
  return http.createServer((req, res) => {
    const up = http.request({ host: to.hostname, port: to.port, method: req.method, path: req.url, headers: req.headers, agent }, (answer) => {
      res.writeHead(answer.statusCode, answer.headers);
      answer.pipe(res);
    });
    up.on('error', () => res.destroy());
    req.pipe(up);
  });
}

function receiver() {
  const s3 = s3Client();
  return http.createServer(async (req, res) => {
    const url = new URL(req.url, 'http://floor');
    const q = Object.fromEntries(url.searchParams);
    try {
      if (req.method === 'PUT' && url.pathname === '/part') {
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
        const out = await s3.send(new PutObjectCommand({ Bucket: q.bucket, Key: q.key, Body: req, ContentLength: Number(req.headers['content-length']) }));
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
}

const server = mode === 'proxy' ? proxy() : receiver();
// As the services' servers (libs/service-kit runServer): idle keep-alive sockets stay open a minute.
server.keepAliveTimeout = 65_000;
server.listen(Number(port), '127.0.0.1', () => process.stdout.write('ready\n'));
process.on('SIGTERM', () => server.close(() => process.exit(0)));
