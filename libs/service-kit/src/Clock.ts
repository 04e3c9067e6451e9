/**
 * The time source wherever a service injects time: `systemClock` in production; tests pass one
 * they can move (rnd and session expiry, certificate validity, upload leases).
 */
export type Clock = () => Date;

export const systemClock: Clock = () => new Date();
