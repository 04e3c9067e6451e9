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
