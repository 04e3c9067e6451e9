/// <reference lib="dom" />
// The entry of the page browser-uppy.e2e.test.ts serves on its own origin, bundled by esbuild at
// test time: Uppy with its tus plugin, as a site would use them, and a plain list of the files
// (no Dashboard) updated from Uppy's events, for the screenshot. The test calls
// `window.uploadWithUppy` and gets back, per file, what it needs to read the bytes back through
// /v1 and compare them: the upload URL, the size and the SHA-256 the page computed.
import Uppy from '@uppy/core';
import Tus from '@uppy/tus';

export interface UploadRequest {
  /** The tus creation URL: `<api origin>/v1/<ownerId>/tus/`. */
  endpoint: string;
  token: string;
  files: { name: string; size: number }[];
  chunkSize: number;
  retryDelays: number[];
}

export interface UploadedFile {
  name: string;
  size: number;
  type: string;
  /** Of the bytes the page made, in hex. */
  sha256: string;
  /** From the `upload-success` event. */
  uploadURL: string;
  /** To make the bytes and hash them. */
  preparedMs: number;
  /** From `uppy.upload()` to the file's `upload-success` (all the files go at once). */
  uploadMs: number;
}

/** A request tus-js-client sent for a file, and what it learnt from the answer (if one came). */
export interface TusExchange {
  file: string;
  method: string;
  /** The request's Upload-Offset. */
  offset: number | null;
  status: number | null;
  /** The answer's Upload-Offset and X-Error-Id (read cross-origin: the gateway exposes them). */
  answeredOffset: number | null;
  errorId: string | null;
  at: number;
}

export interface UploadReport {
  uppyVersion: string;
  files: UploadedFile[];
  exchanges: TusExchange[];
  /** Each failure tus-js-client was about to retry (Uppy's `onShouldRetry`). */
  retries: { file: string; attempt: number; message: string; at: number }[];
  /** `upload-error` events: a file given up. */
  errors: { file: string; message: string }[];
}

declare global {
  interface Window {
    uploadWithUppy(request: UploadRequest): Promise<UploadReport>;
  }
}

const TYPE = 'application/x-uppy-e2e';

/** `size` pseudo-random bytes as a Blob, and their SHA-256 in hex. */
async function makeFile(size: number): Promise<{ blob: Blob; sha256: string }> {
  const bytes = new Uint8Array(size);
  // getRandomValues fills at most 65,536 bytes a call.
  for (let at = 0; at < size; at += 65_536) crypto.getRandomValues(bytes.subarray(at, Math.min(size, at + 65_536)));
  const digest = new Uint8Array(await crypto.subtle.digest('SHA-256', bytes));
  return {
    blob: new Blob([bytes], { type: TYPE }),
    sha256: [...digest].map((b) => b.toString(16).padStart(2, '0')).join(''),
  };
}

function row(name: string): HTMLTableRowElement {
  const tr = document.createElement('tr');
  tr.dataset.file = name;
  tr.innerHTML =
    '<td class="name"></td><td class="size"></td><td class="sha"></td><td><progress max="1" value="0"></progress></td><td class="state">waiting</td>';
  tr.querySelector('.name')!.textContent = name;
  document.querySelector('#files tbody')!.append(tr);
  return tr;
}

document.querySelector('#origin')!.textContent = location.origin;

window.uploadWithUppy = async ({ endpoint, token, files, chunkSize, retryDelays }) => {
  document.querySelector('#endpoint')!.textContent = endpoint;
  const report: UploadReport = { uppyVersion: Uppy.VERSION, files: [], exchanges: [], retries: [], errors: [] };
  const rows = new Map(files.map(({ name }) => [name, row(name)]));
  const say = (name: string, state: string) => (rows.get(name)!.querySelector('.state')!.textContent = state);
  const sent = new WeakMap<object, TusExchange>();
  const retried = new Map<string, string[]>();

  const uppy = new Uppy({ id: 'e2e', autoProceed: false }).use(Tus, {
    endpoint,
    headers: { authorization: `Bearer ${token}` },
    chunkSize,
    retryDelays,
    onBeforeRequest: (req, file) => {
      const offset = req.getHeader('Upload-Offset');
      const exchange: TusExchange = {
        file: file.name!,
        method: req.getMethod(),
        offset: offset ? Number(offset) : null,
        status: null,
        answeredOffset: null,
        errorId: null,
        at: Date.now(),
      };
      sent.set(req, exchange);
      report.exchanges.push(exchange);
    },
    onAfterResponse: (req, res) => {
      const exchange = sent.get(req)!;
      const offset = res.getHeader('Upload-Offset');
      exchange.status = res.getStatus();
      exchange.answeredOffset = offset ? Number(offset) : null;
      exchange.errorId = res.getHeader('X-Error-Id') ?? null;
    },
    onShouldRetry: (err, attempt, _options, next) => {
      // Only the tus.Upload knows its file: the failed request's exchange names it.
      const file = (err.originalRequest && sent.get(err.originalRequest)?.file) ?? '?';
      report.retries.push({ file, attempt, message: err.message, at: Date.now() });
      // tus-js-client's message ends with the whole request (URL and all): the first clause is enough.
      const why = err.message.replace(/, originated from[\s\S]*$/, '');
      retried.set(file, [...(retried.get(file) ?? []), why]);
      say(file, `retrying: ${why}`);
      return next(err);
    },
  });

  const made = new Map<string, { sha256: string; preparedMs: number }>();
  for (const { name, size } of files) {
    const t0 = performance.now();
    const { blob, sha256 } = await makeFile(size);
    made.set(name, { sha256, preparedMs: Math.round(performance.now() - t0) });
    const tr = rows.get(name)!;
    tr.querySelector('.size')!.textContent = size.toLocaleString('en');
    tr.querySelector('.sha')!.textContent = `${sha256.slice(0, 16)}…`;
    uppy.addFile({ name, type: TYPE, data: blob, source: 'e2e' });
  }

  let started = 0;
  uppy.on('upload-progress', (file, progress) => {
    if (!file?.name || !progress.bytesTotal) return;
    const done = progress.bytesUploaded / progress.bytesTotal;
    rows.get(file.name)!.querySelector('progress')!.value = done;
    say(file.name, `${Math.floor(done * 100)} %`);
  });
  uppy.on('upload-success', (file, response) => {
    const { sha256, preparedMs } = made.get(file!.name!)!;
    const uploadMs = Math.round(performance.now() - started);
    report.files.push({
      name: file!.name!,
      size: file!.size!,
      type: file!.type,
      sha256,
      uploadURL: response.uploadURL!,
      preparedMs,
      uploadMs,
    });
    rows.get(file!.name!)!.querySelector('progress')!.value = 1;
    const why = retried.get(file!.name!);
    say(file!.name!, `uploaded in ${uploadMs} ms${why ? `, retried after: ${why.join('; ')}` : ''}`);
  });
  uppy.on('upload-error', (file, error) => {
    report.errors.push({ file: file?.name ?? '?', message: error.message });
    if (file?.name) say(file.name, `failed: ${error.message}`);
  });
  uppy.on('complete', (result) => {
    document.querySelector('#summary')!.textContent =
      `complete: ${result.successful?.length ?? 0} uploaded, ${result.failed?.length ?? 0} failed; ` +
      `${report.retries.length} request(s) retried`;
  });

  started = performance.now();
  await uppy.upload();
  return report;
};
