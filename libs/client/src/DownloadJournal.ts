import { readFile, rm, writeFile } from 'node:fs/promises';

interface Saved {
  etag: string | null;
  total: number;
  done: number[];
}

/**
 * The progress file of a download (`<file>.partial.json`): which of its chunks are in the
 * `.partial` file already, for the content of this ETag and length. Writes are queued one after
 * another, each the whole list, so the file always holds a complete one.
 */
export class DownloadJournal {
  private saving: Promise<void> = Promise.resolve();

  private constructor(
    private readonly path: string,
    private readonly etag: string | null,
    private readonly total: number,
    /** Indexes of the chunks done. */
    readonly done: number[],
  ) {}

  /** The chunks done of the same content (same ETag and length) when resuming; none otherwise. */
  static async open(path: string, etag: string | null, total: number, resume: boolean): Promise<DownloadJournal> {
    let done: number[] = [];
    if (resume) {
      try {
        const saved = JSON.parse(await readFile(path, 'utf8')) as Saved;
        if (saved.total === total && saved.etag === etag) done = saved.done;
      } catch {
        /* nothing to resume */
      }
    }
    return new DownloadJournal(path, etag, total, done);
  }

  has(chunk: number): boolean {
    return this.done.includes(chunk);
  }

  /** Notes a chunk done; written in the background (see `flush`). */
  add(chunk: number): void {
    this.done.push(chunk);
    const snapshot = JSON.stringify({ etag: this.etag, total: this.total, done: this.done } satisfies Saved);
    this.saving = this.saving.then(() => writeFile(this.path, snapshot));
  }

  /** Waits for the writes queued so far. */
  async flush(): Promise<void> {
    await this.saving;
  }

  /** The download is complete: the journal goes. */
  async remove(): Promise<void> {
    await rm(this.path, { force: true });
  }
}
