// On jest's clock (setInterval and Date.now both), so that a loaded machine cannot delay a tick.
import { ClaimHeartbeat } from '../src/uploads/BookCommits';

describe('a claim renewed while its holder works', () => {
  beforeEach(() => jest.useFakeTimers());
  afterEach(() => jest.useRealTimers());

  it('is renewed every third of its lease and stays held', async () => {
    let renewals = 0;
    const heartbeat = new ClaimHeartbeat('part 1', async () => (renewals++, true), 300);
    await jest.advanceTimersByTimeAsync(700);
    await heartbeat.stop();
    expect(renewals).toBe(7);
    expect(heartbeat.signal.aborted).toBe(false);
    expect(() => heartbeat.check()).not.toThrow();
  });

  it('aborts the work with 503 claimLost once a renewal finds the claim taken over', async () => {
    const heartbeat = new ClaimHeartbeat('part 1', async () => false, 300);
    await jest.advanceTimersByTimeAsync(99);
    expect(heartbeat.signal.aborted).toBe(false);
    await jest.advanceTimersByTimeAsync(1);
    expect(heartbeat.signal.aborted).toBe(true);
    expect(heartbeat.signal.reason).toMatchObject({ status: 503, code: 'claimLost' });
    expect(() => heartbeat.check()).toThrow(expect.objectContaining({ code: 'claimLost' }));
    await heartbeat.stop();
  });

  it('aborts the work when renewals fail, or do not answer for two thirds of the lease', async () => {
    const failing = new ClaimHeartbeat('part 1', async () => Promise.reject(new Error('database down')), 300);
    const hanging = new ClaimHeartbeat('part 2', () => new Promise<boolean>(() => undefined), 300);
    await jest.advanceTimersByTimeAsync(100);
    expect(failing.signal.aborted).toBe(true);
    expect(hanging.signal.aborted).toBe(false); // its first renewal is in flight
    await jest.advanceTimersByTimeAsync(200);
    expect(hanging.signal.aborted).toBe(true);
    await failing.stop();
  });
});
