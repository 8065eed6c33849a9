import { describe, expect, it } from 'vitest';
import { LoopDelay } from '../../src/telemetry/loop-delay.js';

/** A LoopDelay on a clock the test moves, ticked by the test. */
function manual() {
  let t = 1000;
  let tick = (): void => {};
  const delay = new LoopDelay({
    resolutionMs: 10,
    now: () => t,
    every: (fn) => {
      tick = fn;
      return () => {};
    },
  });
  return { delay, advance: (ms: number) => (t += ms), tick: () => tick() };
}

describe('event-loop delay since the last read', () => {
  it('a stall read before the next tick is in that read, and only in it', () => {
    const { delay, advance, tick } = manual();
    advance(10);
    tick();
    advance(160); // the loop was blocked: no tick for 160 ms
    expect(delay.read().maxSeconds).toBeCloseTo(0.15, 3);
    advance(10);
    tick(); // the late tick comes after the read: nothing left to count
    expect(delay.read().maxSeconds).toBeLessThan(0.001);
  });

  it('a stall ticked before the read is in it too', () => {
    const { delay, advance, tick } = manual();
    advance(160);
    tick();
    advance(10);
    tick();
    const w = delay.read();
    expect(w.maxSeconds).toBeCloseTo(0.15, 3);
    expect(w.p99Seconds).toBeGreaterThan(0.1);
  });
});
