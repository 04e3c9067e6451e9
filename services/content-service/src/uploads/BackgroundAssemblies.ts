import { setTimeout as sleep } from 'node:timers/promises';

/**
 * Assemblies of parts that do not finish their content run after their request has answered, so
 * that a client sending small chunks one at a time does not wait for a 64 MiB UploadPart every 64
 * chunks. Their claims are leases like any other (renewed while they run, dead within a lease of
 * this process), so a crash leaves nothing that a later request cannot take over. At most `limit`
 * run at once in a process; past that, a request runs its assembly itself (back-pressure).
 */
export class BackgroundAssemblies {
  private readonly running = new Map<string, Set<{ task: Promise<void>; parts: number[] }>>();
  private count = 0;

  constructor(
    private readonly limit: number,
    private readonly onError: (contentId: string, error: unknown) => void,
  ) {}

  /** Starts `work`, the assembly of `parts` of a content; false when `limit` already run (the caller then runs it itself). */
  start(contentId: string, parts: number[], work: () => Promise<unknown>): boolean {
    if (this.count >= this.limit) return false;
    this.count += 1;
    const set = this.running.get(contentId) ?? new Set();
    this.running.set(contentId, set);
    const entry = {
      parts,
      task: work()
        .then(
          () => undefined,
          (error: unknown) => this.onError(contentId, error),
        )
        .finally(() => {
          this.count -= 1;
          set.delete(entry);
          if (set.size === 0 && this.running.get(contentId) === set) this.running.delete(contentId);
        }),
    };
    set.add(entry);
    return true;
  }

  /**
   * Resolves once the content's assemblies running in this process (those of `parts` only, when
   * given) have ended, or after `ms`: a write to a part being assembled here waits for it rather
   * than getting 503, as it would have had its request assembled it.
   */
  async settled(contentId: string, ms: number, parts?: number[]): Promise<void> {
    const tasks = [...(this.running.get(contentId) ?? [])]
      .filter((e) => !parts || e.parts.some((k) => parts.includes(k)))
      .map((e) => e.task);
    await settle(tasks, ms);
  }

  /** For shutdown: resolves once every running assembly has ended, or after `ms`. */
  async drain(ms: number): Promise<void> {
    await settle(
      [...this.running.values()].flatMap((set) => [...set].map((e) => e.task)),
      ms,
    );
  }

  get size(): number {
    return this.count;
  }
}

async function settle(tasks: Promise<void>[], ms: number): Promise<void> {
  if (tasks.length === 0) return;
  const timeout = new AbortController();
  await Promise.race([
    Promise.allSettled(tasks),
    sleep(ms, undefined, { signal: timeout.signal }).catch(() => undefined),
  ]);
  timeout.abort();
}
