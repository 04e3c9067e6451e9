import { createReadStream } from 'node:fs';
import { open, rm, stat, type FileHandle } from 'node:fs/promises';
import { join } from 'node:path';
import { Transform, type Readable } from 'node:stream';
import { IntegrityError } from './errors';
import { missingParts, splitIntoParts, type ByteRange } from './ranges';

/** One part to send: where it lies in the content, and its bytes (read anew for every attempt). */
export interface SourcePart {
  start: number;
  length: number;
  /** No byte follows this part. */
  last: boolean;
  body: () => Readable;
  /** Called once the part is sent (or found on the service): frees what holds its bytes. */
  release: () => Promise<void>;
}

/** Where an upload's parts come from. */
export interface PartSource {
  /** What the parts are read from, for messages. */
  readonly kind: 'file' | 'stream';
  /** The content's length when known before its bytes are read. */
  readonly size: number | null;
  /** The parts, in order, each read only when asked for. */
  readonly parts: AsyncIterator<SourcePart, void, undefined>;
  /**
   * On resume, what the service already holds. A source that can seek leaves those parts out and
   * returns their bytes; one that cannot returns null, and its parts are read through and skipped.
   */
  leaveOut(received: ByteRange[]): number | null;
  /** Throws an IntegrityError naming content `id` when the file was written to since its parts began to be read (a file only). */
  unchanged(id: string): Promise<void>;
}

const READ = { highWaterMark: 1024 * 1024 };

/** A file's ranges, each streamed from disk as it is sent. */
export async function fileParts(path: string, partSize: number): Promise<PartSource> {
  const before = await stat(path);
  const size = before.size;
  let todo = splitIntoParts(size, partSize);
  const parts = (async function* () {
    for (const p of todo) {
      yield {
        start: p.start,
        length: p.end - p.start + 1,
        last: p.end === size - 1,
        body: () => exactly(createReadStream(path, { ...READ, start: p.start, end: p.end }), p.end - p.start + 1, path),
        release: async () => undefined,
      };
    }
  })();
  return {
    kind: 'file',
    size,
    parts,
    leaveOut(received) {
      todo = missingParts(todo, received);
      return size - todo.reduce((n, p) => n + p.end - p.start + 1, 0);
    },
    async unchanged(id) {
      const after = await stat(path);
      if (after.size !== size || after.mtimeMs !== before.mtimeMs)
        throw new IntegrityError(
          `${path} was written to while it was uploaded: content ${id} may hold a mix of old and new bytes; delete it and upload the file again`,
        );
    },
  };
}

/**
 * A file range's bytes, failing (IntegrityError) when the file ends before `length` of them: a file
 * that shrank while it was uploaded would otherwise send fewer bytes than its Content-Length, and
 * the request would wait for the rest until the service gave up on it.
 */
function exactly(stream: Readable, length: number, path: string): Readable {
  let seen = 0;
  const counted = new Transform({
    transform(chunk: Buffer, _encoding, callback) {
      seen += chunk.length;
      callback(null, chunk);
    },
    flush(callback) {
      callback(seen === length ? null : new IntegrityError(`${path} shrank while it was uploaded; upload it again`));
    },
  });
  stream.on('error', (error) => counted.destroy(error));
  return stream.pipe(counted);
}

/** A stream's parts, spooled to `dir` as they are read (see spooledParts). */
export function streamParts(
  source: AsyncIterable<Uint8Array>,
  partSize: number,
  dir: string,
  size: number | null,
): PartSource {
  const spooled = spooledParts(source, partSize, dir);
  const parts = (async function* () {
    for await (const p of spooled) {
      yield {
        start: p.start,
        length: p.length,
        last: p.last,
        body: () => createReadStream(p.path, READ),
        release: () => rm(p.path, { force: true }),
      };
    }
  })();
  return { kind: 'stream', size, parts, leaveOut: () => null, unchanged: async () => undefined };
}

export interface SpooledPart {
  start: number;
  length: number;
  /** The file holding the part's bytes; the consumer deletes it once the part is sent. */
  path: string;
  /** No byte follows this part. */
  last: boolean;
}

/**
 * Cuts a stream into `size`-byte parts, each written to its own file in `dir` as it arrives, so
 * that memory does not grow with the part size and a part can be sent again on a retry. A full
 * part is held back until the next byte (or the end) shows whether it is the last, so the last
 * part can name the total. An empty stream yields nothing.
 */
export async function* spooledParts(
  source: AsyncIterable<Uint8Array>,
  size: number,
  dir: string,
): AsyncGenerator<SpooledPart, void, undefined> {
  let count = 0;
  let offset = 0;
  let current: { path: string; file: FileHandle; length: number } | null = null;
  let full: Omit<SpooledPart, 'last'> | null = null;
  try {
    for await (const chunk of source) {
      let rest = Buffer.isBuffer(chunk) ? chunk : Buffer.from(chunk.buffer, chunk.byteOffset, chunk.byteLength);
      while (rest.length > 0) {
        if (full !== null) {
          yield { ...full, last: false };
          offset += full.length;
          full = null;
        }
        if (current === null) {
          const path = join(dir, `part-${count++}`);
          current = { path, file: await open(path, 'w'), length: 0 };
        }
        const take = Math.min(size - current.length, rest.length);
        await writeAll(current.file, rest.subarray(0, take));
        current.length += take;
        rest = rest.subarray(take);
        if (current.length === size) {
          await current.file.close();
          full = { start: offset, length: size, path: current.path };
          current = null;
        }
      }
    }
    if (full !== null) yield { ...full, last: true };
    else if (current !== null) {
      await current.file.close();
      const { path, length } = current;
      current = null;
      yield { start: offset, length, path, last: true };
    }
  } finally {
    await current?.file.close().catch(() => undefined);
  }
}

async function writeAll(file: FileHandle, data: Buffer): Promise<void> {
  for (let written = 0; written < data.length;) written += (await file.write(data, written)).bytesWritten;
}
