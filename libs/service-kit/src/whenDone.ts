import type { ServerResponse } from 'node:http';

/** Told whether the whole response was handed to the socket (false: the connection closed first). */
export type DoneHook = (finished: boolean) => void;

const HOOKS = Symbol('cp.whenDone');

/**
 * Runs `hook` once, when the response is done: finished, or cut short by its connection closing.
 * Every hook of one response shares a single 'close' listener. A response piped to by
 * stream.pipeline() already carries seven of pipeline's own, and past ten Node prints a
 * MaxListenersExceededWarning, with a stack built for it, on every such request.
 */
export function whenDone(res: ServerResponse, hook: DoneHook): void {
  const held = res as ServerResponse & { [HOOKS]?: DoneHook[] };
  let hooks = held[HOOKS];
  if (!hooks) {
    const all: DoneHook[] = (held[HOOKS] = []);
    res.once('close', () => {
      const finished = res.writableFinished;
      for (const h of all) h(finished);
    });
    hooks = all;
  }
  hooks.push(hook);
}
