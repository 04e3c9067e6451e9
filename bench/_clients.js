// Clients of `pnpm bench contents` and `pnpm bench hops` other than the benchmarks' own node:http one,
// which reads whatever each socket read brought (up to 64 KiB) and so is the ideal reader. Real
// clients read in smaller pieces, and every hop before them pays more per byte for it:
//   curl       `curl -s -o /dev/null -r a-b`, one process per 64 MiB range (or part), as a shell
//              script or a user would; straight to S3 with --aws-sigv4. Its settings (credentials
//              included) go in a config on its stdin, never on its command line.
//   reader16k  a Node.js socket whose every read(2) takes at most 16 KiB (`net.connect` with an
//              `onread` buffer of 16 KiB: libuv reads into that buffer and nothing larger), with the
//              HTTP answer parsed here; what .NET's HttpClient or a browser's fetch take per read.
const net = require('node:net');
const { spawn } = require('node:child_process');
const { createHash, createHmac } = require('node:crypto');
const { backingEnv } = require('../tools/devstack/stack');

const CLIENTS = ['node', 'curl', 'reader16k'];
const READ_BYTES = 16 * 1024;
const CLIENT_TIMEOUT_MS = 120_000;

/** `--clients a,b` of a benchmark: the clients it runs, in order (default: all of CLIENTS). */
function clientsArg(args) {
  const asked = args.clients ? String(args.clients).split(',') : CLIENTS;
  for (const c of asked) if (!CLIENTS.includes(c)) throw new Error(`unknown client ${c}; one of ${CLIENTS.join(',')}`);
  return asked;
}

/** A value of a curl config line, quoted (curl's config syntax: backslash escapes inside double quotes). */
const quoted = (v) => `"${String(v).replace(/\\/g, '\\\\').replace(/"/g, '\\"')}"`;

/** curl's settings to sign a request straight to the local S3 server (AWS SigV4, unsigned payload). */
function curlS3Config() {
  const env = backingEnv();
  return [
    `user = ${quoted(`${env.S3_ACCESS_KEY_ID}:${env.S3_SECRET_ACCESS_KEY}`)}`,
    `aws-sigv4 = "aws:amz:us-east-1:s3"`,
    `header = "x-amz-content-sha256: UNSIGNED-PAYLOAD"`,
  ];
}

/**
 * Runs curl once on `url` with `config` lines and `headers`, its config on stdin. Resolves with
 * its `-w` output (`%{http_code}` first). Bounded: curl is killed after CLIENT_TIMEOUT_MS.
 */
function curl(url, { headers = {}, config = [], write = '%{http_code} %{size_download}' } = {}) {
  return new Promise((resolve, reject) => {
    const lines = [
      `url = ${quoted(url)}`,
      'silent',
      'show-error',
      `max-time = ${CLIENT_TIMEOUT_MS / 1000}`,
      `write-out = ${quoted(write)}`,
      ...Object.entries(headers).map(([k, v]) => `header = ${quoted(`${k}: ${v}`)}`),
      ...config,
    ];
    const child = spawn('curl', ['-K', '-'], { stdio: ['pipe', 'pipe', 'pipe'] });
    let out = '';
    let err = '';
    child.stdout.on('data', (c) => (out += c));
    child.stderr.on('data', (c) => (err += c));
    child.on('error', reject);
    child.on('close', (code) =>
      code === 0 ? resolve(out) : reject(new Error(`curl exited with ${code}: ${err.trim()}`)),
    );
    child.stdin.end(`${lines.join('\n')}\n`);
  });
}

/** GET of bytes [a, b] with curl into /dev/null: { status, bytes }. */
async function curlGet(url, a, b, { headers = {}, s3 = false } = {}) {
  const out = await curl(url, {
    headers,
    config: [`range = "${a}-${b}"`, 'output = "/dev/null"', ...(s3 ? curlS3Config() : [])],
  });
  const [status, bytes] = out.trim().split(' ').map(Number);
  return { status, bytes };
}

/** PUT (or `method`) of a file with curl (`-T`): { status, body, etag }. */
async function curlPut(url, file, { method = 'PUT', headers = {}, s3 = false } = {}) {
  const out = await curl(url, {
    headers,
    config: [`upload-file = ${quoted(file)}`, `request = ${quoted(method)}`, ...(s3 ? curlS3Config() : [])],
    write: '\\n%{http_code} %header{etag}',
  });
  const cut = out.lastIndexOf('\n');
  const [status, ...etag] = out.slice(cut + 1).split(' ');
  return { status: Number(status), body: out.slice(0, cut), etag: etag.join(' ') };
}

/** SigV4 headers of a GET straight to the local S3 server (unsigned payload), as any S3 client signs it. */
function s3GetHeaders(url) {
  const env = backingEnv();
  const u = new URL(url);
  const amzDate = new Date().toISOString().replace(/[-:]|\.\d{3}/g, '');
  const day = amzDate.slice(0, 8);
  const scope = `${day}/us-east-1/s3/aws4_request`;
  const headers = { host: u.host, 'x-amz-content-sha256': 'UNSIGNED-PAYLOAD', 'x-amz-date': amzDate };
  const signed = Object.keys(headers).sort();
  const canonical = [
    'GET',
    u.pathname,
    '',
    ...signed.map((h) => `${h}:${headers[h]}`),
    '',
    signed.join(';'),
    'UNSIGNED-PAYLOAD',
  ].join('\n');
  const toSign = ['AWS4-HMAC-SHA256', amzDate, scope, createHash('sha256').update(canonical).digest('hex')].join('\n');
  let key = `AWS4${env.S3_SECRET_ACCESS_KEY}`;
  for (const part of [day, 'us-east-1', 's3', 'aws4_request']) key = createHmac('sha256', key).update(part).digest();
  const signature = createHmac('sha256', key).update(toSign).digest('hex');
  return {
    ...headers,
    authorization: `AWS4-HMAC-SHA256 Credential=${env.S3_ACCESS_KEY_ID}/${scope}, SignedHeaders=${signed.join(';')}, Signature=${signature}`,
  };
}

/**
 * GET of bytes [a, b] on a connection of its own whose every socket read takes at most 16 KiB
 * (an `onread` buffer of READ_BYTES), answer parsed here (Content-Length framing): { status, bytes }.
 * `s3` signs the request for the local S3 server. Bounded: fails after CLIENT_TIMEOUT_MS of silence.
 */
function smallReadsGet(url, a, b, { headers = {}, s3 = false } = {}) {
  const u = new URL(url);
  const all = {
    host: u.host,
    ...(s3 ? s3GetHeaders(url) : {}),
    ...headers,
    range: `bytes=${a}-${b}`,
    connection: 'close',
  };
  const head = `GET ${u.pathname}${u.search} HTTP/1.1\r\n${Object.entries(all)
    .map(([k, v]) => `${k}: ${v}\r\n`)
    .join('')}\r\n`;
  return new Promise((resolve, reject) => {
    let pending = Buffer.alloc(0); // the answer's head, until it is whole
    let status = 0;
    let length = -1;
    let bytes = 0;
    const done = (error) => {
      socket.destroy();
      if (error) reject(error);
      else resolve({ status, bytes });
    };
    const socket = net.connect({
      host: u.hostname,
      port: Number(u.port),
      onread: {
        buffer: Buffer.allocUnsafe(READ_BYTES),
        callback: (n, buf) => {
          if (length < 0) {
            pending = Buffer.concat([pending, buf.subarray(0, n)]);
            const end = pending.indexOf('\r\n\r\n');
            if (end < 0) return true;
            const text = pending.subarray(0, end).toString('latin1');
            status = Number(text.split(' ')[1]);
            const m = /\r\ncontent-length:\s*(\d+)/i.exec(text);
            if (!m) return (done(new Error(`answer ${status} without a Content-Length`)), false);
            length = Number(m[1]);
            bytes = pending.length - end - 4;
            pending = null;
          } else {
            bytes += n;
          }
          if (bytes >= length) done();
          return true;
        },
      },
    });
    socket.setTimeout(CLIENT_TIMEOUT_MS, () => done(new Error('no answer')));
    socket.on('error', done);
    socket.on('end', () => {
      if (length < 0 || bytes < length) done(new Error(`answer ended after ${bytes} of ${length} bytes`));
    });
    socket.write(head);
  });
}

module.exports = { CLIENTS, clientsArg, curlGet, curlPut, smallReadsGet, READ_BYTES };
