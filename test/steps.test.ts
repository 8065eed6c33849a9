/**
 * Work in pieces (src/steps.ts), as both agents run it: loops that yield when their slice is due,
 * and a yielding run that gives the event loop a whole turn at each pause. Seen by order and
 * counts, never by time: a slice of 0 is always due.
 */
import fs from 'node:fs';
import { describe, expect, it } from 'vitest';
import { eachInSlices, mapInSlices, runSteps, runStepsYielding, Slice, type Steps } from '../src/steps.js';

/** Runs steps straight through, counting their pauses. */
function paused<T>(steps: Steps<T>): { pauses: number; value: T } {
  let pauses = 0;
  let r = steps.next();
  for (; r.done !== true; r = steps.next()) pauses++;
  return { pauses, value: r.value };
}

describe('loops in slices', () => {
  const items = Array.from({ length: 1000 }, (_, i) => i);

  it('map every item in order, pausing within the loop only where the slice is due', () => {
    const always = paused(mapInSlices(items, (n) => n * 2, new Slice(0)));
    expect(always.value).toEqual(items.map((n) => n * 2));
    // The slice is asked every 256 items: at 255, 511 and 767 of 1000.
    expect(always.pauses).toBe(3);
    const never = paused(mapInSlices(items, (n) => n * 2, new Slice(3_600_000)));
    expect(never).toEqual({ pauses: 0, value: always.value });
  });

  it('visit every item once, in order, whether or not they pause', () => {
    const seen: number[] = [];
    const r = paused(eachInSlices(items, (n, i) => seen.push(n - i), new Slice(0)));
    expect(r.pauses).toBe(3);
    expect(seen).toEqual(items.map(() => 0));
    expect(runSteps(mapInSlices([], (n: number) => n, new Slice(0)))).toEqual([]);
  });
});

describe('a yielding run', () => {
  it('lets a due timer run at a pause, also where the piece before followed an I/O callback', async () => {
    const order: string[] = [];
    function* steps(): Steps<void> {
      // An answer that arrives through an I/O callback: the next piece runs in that turn's poll phase.
      yield new Promise<void>((resolve) => fs.stat(process.execPath, () => resolve()));
      setTimeout(() => order.push('timer'), 0);
      // Until the timer is due (1 ms), so that the loop's next timers phase runs it, however fast.
      const t0 = performance.now();
      while (performance.now() - t0 < 2);
      yield;
      order.push('next piece');
    }
    await runStepsYielding(steps());
    expect(order).toEqual(['timer', 'next piece']);
  });
});
