// The direct path of `pnpm bench contents` (direct transfer, on in the bench's stack): 1 GiB up and
// down as `content upload --direct` and `content download --direct` move it, from this process with
// the same node:http client and part in memory as the other rows: the first 64 MiB part by POST
// through the gateway, every other part to a presigned URL the service gives (asked per part) and
// then recorded; each 64 MiB range down by a GET with `Prefer: redirect` whose 307 is followed with
// the same Range. Against the same GiB sent and read straight to S3 with @aws-sdk/client-s3 from
// this process, `rounds` rounds alternating which path goes first; ratio = direct path / S3.
const { randomUUID } = require('node:crypto');
const { GetObjectCommand } = require('@aws-sdk/client-s3');
const { request, inFlight, timed, mbps, drain, s3MultipartUpload } = require('./_support');

async function directRounds({ api, auth, part, total, P, concurrency, s3, Bucket, rounds }) {
  const parts = total / P;
  const range = (k) => `bytes ${k * P}-${(k + 1) * P - 1}/${total}`;
  const json = (url, body) =>
    request('POST', url, { ...auth, 'content-type': 'application/json' }, Buffer.from(JSON.stringify(body)), {
      keep: true,
    });
  const must = (res, status, what) => {
    if (res.status !== status) throw new Error(`${what} answered ${res.status}: ${res.body ?? ''}`);
    return res;
  };

  const uploadDirect = async () => {
    const first = must(
      await request('POST', api, { ...auth, 'content-range': range(0) }, part, { keep: true }),
      201,
      'POST',
    );
    const { id } = JSON.parse(first.body);
    const statuses = await inFlight(
      concurrency,
      Array.from({ length: parts - 1 }, (_, i) => async () => {
        const k = i + 2;
        const asked = must(await json(`${api}/${id}/direct-parts`, { parts: [{ part: k }] }), 200, 'direct-parts');
        const [target] = JSON.parse(asked.body).parts;
        const put = must(await request(target.method, target.url, {}, part), 200, 'UploadPart to its URL');
        return (await json(`${api}/${id}/direct-parts/${k}`, { etag: put.headers.etag })).status;
      }),
    );
    if (!statuses.includes(201)) throw new Error(`no recorded part completed the content: ${statuses}`);
    return id;
  };
  const downloadDirect = async (id) => {
    const sizes = await inFlight(
      concurrency,
      Array.from({ length: parts }, (_, k) => async () => {
        const r = `bytes=${k * P}-${(k + 1) * P - 1}`;
        const to = must(await request('GET', `${api}/${id}`, { ...auth, prefer: 'redirect', range: r }), 307, 'GET');
        const got = must(await request('GET', to.headers.location, { range: r }), 206, 'GET from S3');
        return got.bytes;
      }),
    );
    if (sizes.reduce((a, b) => a + b, 0) !== total) throw new Error('the direct download was short');
  };
  const uploadS3 = async (Key) => {
    await s3MultipartUpload({ s3, Bucket, Key, parts, concurrency, part, P });
  };
  const downloadS3 = async (Key) => {
    const sizes = await inFlight(
      concurrency,
      Array.from(
        { length: parts },
        (_, k) => async () =>
          drain(
            (await s3.send(new GetObjectCommand({ Bucket, Key, Range: `bytes=${k * P}-${(k + 1) * P - 1}` }))).Body,
          ),
      ),
    );
    if (sizes.reduce((a, b) => a + b, 0) !== total) throw new Error('the S3 download was short');
  };

  const out = [];
  for (let r = 0; r < rounds; r++) {
    const Key = `direct-round-${randomUUID()}`;
    const one = async (first) => {
      if (first === 'direct') {
        const up = await timed(uploadDirect);
        const upS3 = await timed(() => uploadS3(Key));
        const down = await timed(() => downloadDirect(up.value));
        const downS3 = await timed(() => downloadS3(Key));
        return { up, upS3, down, downS3 };
      }
      const upS3 = await timed(() => uploadS3(Key));
      const up = await timed(uploadDirect);
      const downS3 = await timed(() => downloadS3(Key));
      const down = await timed(() => downloadDirect(up.value));
      return { up, upS3, down, downS3 };
    };
    out.push(await one(r % 2 === 0 ? 'direct' : 's3'));
  }
  console.log(
    `\ndirect transfer (--direct), ${rounds} rounds alternating which path goes first (ratio: direct path / S3 SDK in the round)`,
  );
  for (const [r, { up, upS3, down, downS3 }] of out.entries()) {
    for (const [name, a, b] of [
      ['upload', up, upS3],
      ['download', down, downS3],
    ]) {
      console.log(
        `${name.padEnd(9)} round ${r + 1}: --direct ${mbps(total, a.seconds).toFixed(0).padStart(5)} MB/s   S3 SDK ${mbps(total, b.seconds).toFixed(0).padStart(5)} MB/s   ratio ${(b.seconds / a.seconds).toFixed(2)}`,
      );
    }
  }
}

module.exports = { directRounds };
