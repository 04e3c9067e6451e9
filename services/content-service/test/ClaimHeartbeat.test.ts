import { setTimeout as sleep } from 'node:timers/promises';
import { ClaimHeartbeat } from '../src/uploads/ClaimHeartbeat';

describe('a claim renewed while its holder works', () => {
  it('is renewed every third of its lease and stays held', async () => {
    let renewals = 0;
    const heartbeat = new ClaimHeartbeat('part 1', async () => (renewals++, true), 300);
    await sleep(700);
    await heartbeat.stop();
    expect(renewals).toBeGreaterThanOrEqual(5);
    expect(heartbeat.signal.aborted).toBe(false);
    expect(() => heartbeat.check()).not.toThrow();
  });

  it('aborts the work with 503 claimLost once a renewal finds the claim taken over', async () => {
    const heartbeat = new ClaimHeartbeat('part 1', async () => false, 300);
    await sleep(250);
    expect(heartbeat.signal.aborted).toBe(true);
    expect(heartbeat.signal.reason).toMatchObject({ status: 503, code: 'claimLost' });
    expect(() => heartbeat.check()).toThrow(expect.objectContaining({ code: 'claimLost' }));
    await heartbeat.stop();
  });

  it('aborts the work when renewals fail, or do not answer for two thirds of the lease', async () => {
    const failing = new ClaimHeartbeat('part 1', async () => Promise.reject(new Error('database down')), 300);
    const hanging = new ClaimHeartbeat('part 2', () => new Promise<boolean>(() => undefined), 300);
    await sleep(500);
    expect(failing.signal.aborted).toBe(true);
    expect(hanging.signal.aborted).toBe(true);
    await failing.stop();
  });
});
