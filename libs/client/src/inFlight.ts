// Node.js and the browser bundle alike (no built-in).

/** Runs `work` over `items`, at most `limit` at a time; the first failure stops new work and is thrown. */
export async function inFlight<T>(
  limit: number,
  items: readonly T[],
  work: (item: T) => Promise<unknown>,
): Promise<void> {
  let next = 0;
  let failed: unknown = null;
  await Promise.all(
    Array.from({ length: Math.min(limit, items.length) }, async () => {
      while (failed === null && next < items.length) {
        const item = items[next++]!;
        try {
          await work(item);
        } catch (error) {
          failed ??= error;
        }
      }
    }),
  );
  if (failed !== null) throw failed;
}
