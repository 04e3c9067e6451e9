import { retryDelayMs } from '../../src/webhooks/backoff';
import { eventIdOf } from '../../src/webhooks/events';

describe('the retry schedule', () => {
  const schedule = { firstMs: 10_000, capMs: 3_600_000, windowMs: 86_400_000 };
  const noJitter = () => 0;

  it('doubles from the first wait up to the cap', () => {
    const waits = Array.from({ length: 12 }, (_, i) => retryDelayMs(i + 1, schedule, noJitter));
    expect(waits).toEqual([
      10_000, 20_000, 40_000, 80_000, 160_000, 320_000, 640_000, 1_280_000, 2_560_000, 3_600_000, 3_600_000, 3_600_000,
    ]);
    expect(retryDelayMs(1000, schedule, noJitter)).toBe(3_600_000);
  });

  it('adds at most 10 % jitter', () => {
    expect(retryDelayMs(1, schedule, () => 0.999)).toBeLessThanOrEqual(11_000);
  });

  it('keeps trying for the whole window: about 30 attempts in 24 h', () => {
    let at = 0;
    let attempts = 1;
    while (at + retryDelayMs(attempts, schedule, noJitter) <= schedule.windowMs) {
      at += retryDelayMs(attempts, schedule, noJitter);
      attempts++;
    }
    expect(attempts).toBeGreaterThan(25);
  });
});

describe('event ids', () => {
  it('are one per fact: the same for the same content and type, another for another', () => {
    const id = '6f1c1d8e-1f59-4a53-9d0f-0a4f7f0c8f2b';
    expect(eventIdOf('content.completed', id)).toBe(eventIdOf('content.completed', id));
    expect(eventIdOf('content.completed', id)).not.toBe(eventIdOf('content.deleted', id));
    expect(eventIdOf('content.completed', id)).toMatch(
      /^[0-9a-f]{8}-[0-9a-f]{4}-8[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$/,
    );
  });
});
