import { setTimeout as sleep } from 'node:timers/promises';
import type { UploadContext } from './UploadContext';

/**
 * The claim an aligned write (a streamed part, or a part a client put into S3 itself) holds on its
 * 64 MiB part while its bytes go in and are recorded (taken in RangeWriter's first commit).
 */

/** Renews the claim; false when it is no longer this writer's. */
export function renewPartWrite(ctx: UploadContext, id: string, k: number, writer: string): Promise<boolean> {
  return ctx.commits.commit(id, async (view) => {
    const part = await view.part(k);
    if (part.writing?.by !== writer) return false;
    part.writing = { since: ctx.clock(), by: writer };
    return true;
  });
}

/** Drops the claim when the write failed (best effort: the claim also runs out). */
export async function releasePartWrite(ctx: UploadContext, id: string, k: number, writer: string): Promise<void> {
  await ctx.commits
    .commit(id, async (view) => {
      const part = await view.part(k);
      if (part.writing?.by === writer) part.writing = null;
    })
    .catch((error: unknown) =>
      ctx.logger.warn(
        { contentId: id, part: k, err: error },
        'could not release the claim of a failed part write; it runs out',
      ),
    );
}

/**
 * After a commit whose outcome is unknown (Redis did not answer in time, yet may apply it once it
 * does, as after a pause): takes back every claim `writer` may hold on the upload (the completion,
 * and the writes and assemblies of `parts`), so that the next request need not wait out a lease.
 * Tried again every half second, in the background, for at most one lease: a claim older than that
 * runs out by itself. Never takes a claim of another holder.
 */
export function releaseInDoubt(ctx: UploadContext, id: string, writer: string, parts: number[]): void {
  const until = Date.now() + Math.max(ctx.leases.completionLeaseMs, ctx.leases.assemblyLeaseMs);
  const attempt = async (): Promise<void> => {
    for (;;) {
      try {
        await ctx.commits.commit(id, async (view) => {
          if (view.state.completing && view.state.completingBy === writer)
            Object.assign(view.state, { completing: null, completingBy: null });
          for (const k of parts) {
            const part = await view.part(k);
            if (part.writing?.by === writer) part.writing = null;
            if (part.assembling && part.assemblingBy === writer)
              Object.assign(part, { assembling: null, assemblingBy: null });
          }
        });
        return;
      } catch {
        if (Date.now() + 500 > until) return; // the claims run out by themselves
        await sleep(500);
      }
    }
  };
  void attempt();
}
