/**
 * Per-job QP totals across readings that lack a counter for a while (an empty
 * reading, a PID briefly missing from the job's cgroup.procs): the counter
 * continues from its last value when it comes back. Checked against an oracle
 * that knows the true counters behind the readings.
 */
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import {
  accumulateQp,
  EMPTY_QP_STATE,
  // MAX_ABSENT_READINGS,
  type QpCounter,
  type QpState,
} from '../../src/node/qp-counters.js';

const MAX_ABSENT_READINGS = 10;
const NAME = 'rx_write_requests';
const JOBS = new Map([
  [1, 'A'],
  [2, 'A'],
  [3, 'B'],
]);
const ALIVE = new Set(['A', 'B']);

const counter = (pid: number, cntn: number, value: bigint, qpns: number[] = [cntn * 100]): QpCounter => ({
  device: 'mlx5_1',
  port: '1',
  cntn,
  pid,
  qpns,
  values: new Map([[NAME, value]]),
});
const total = (s: QpState, job: string): bigint | undefined => s.series.get(`${job} mlx5_1 1`)?.values.get(NAME);

/** Folds readings; `jobOf[i]` replaces the PID table of reading i when given. */
function fold(readings: QpCounter[][], jobOf: (ReadonlyMap<number, string> | undefined)[] = []): QpState {
  let s = EMPTY_QP_STATE;
  readings.forEach((counters, i) => {
    s = accumulateQp(s, { seq: i + 1, counters }, jobOf[i] ?? JOBS, ALIVE, i * 1000);
  });
  return s;
}

describe('a counter missing from a reading', () => {
  it('an empty reading between two with the counter adds nothing twice (100, not 5,200)', () => {
    const s = fold([[counter(1, 1, 5000n)], [counter(1, 1, 5100n)], [], [counter(1, 1, 5100n)]]);
    expect(total(s, 'A')).toBe(100n);
  });

  it('a PID missing from cgroup.procs for one cycle continues from its last value (600, not 1,200)', () => {
    const without1 = new Map([...JOBS].filter(([pid]) => pid !== 1));
    const s = fold(
      [[counter(1, 1, 100n)], [counter(1, 1, 600n)], [counter(1, 1, 650n)], [counter(1, 1, 700n)]],
      [undefined, undefined, without1, undefined],
    );
    expect(total(s, 'A')).toBe(600n);
  });

  it('after an absence, a value below the last one is a new counter (whole value); so is a new id', () => {
    const lower = fold([[counter(1, 1, 0n, [])], [counter(1, 1, 500n, [])], [], [counter(1, 1, 30n, [])]]);
    expect(total(lower, 'A')).toBe(530n);
    const newId = fold([[counter(1, 1, 0n)], [counter(1, 1, 500n)], [], [counter(1, 2, 700n)]]);
    expect(total(newId, 'A')).toBe(1200n);
  });

  it('a 32-bit counter that wrapped while absent, known by its QPs, adds the wrapped difference', () => {
    const near = 2n ** 32n - 100n;
    const same = fold([[counter(1, 1, 0n)], [counter(1, 1, near)], [], [counter(1, 1, 50n)]]);
    expect(total(same, 'A')).toBe(near + 150n);
    // Without QPs to tell, the lower value is a new counter: counted short, never twice.
    const unknown = fold([[counter(1, 1, 0n, [])], [counter(1, 1, near, [])], [], [counter(1, 1, 50n, [])]]);
    expect(total(unknown, 'A')).toBe(near + 50n);
  });

  it('is forgotten after MAX_ABSENT_READINGS readings without it, and when its job ends', () => {
    const gap = Array.from({ length: MAX_ABSENT_READINGS + 1 }, (): QpCounter[] => []);
    const s = fold([[counter(1, 1, 10n)], [counter(1, 1, 20n)], ...gap]);
    expect(s.last.size).toBe(0);
    expect(total(s, 'A')).toBe(10n);
    const kept = fold([[counter(1, 1, 10n)], ...gap.slice(1)]);
    expect(kept.last.size).toBe(1);
    const ended = accumulateQp(kept, { seq: 99, counters: [] }, JOBS, new Set(['B']), 0);
    expect(ended.last.size).toBe(0);
    expect(accumulateQp(kept, undefined, JOBS, new Set(['B']), 0).last.size).toBe(0);
  });
});

/** One step of the true counters: an increase per slot, a release (a new counter in the slot), what a reading shows. */
interface Step {
  readonly inc: readonly number[];
  readonly release: readonly boolean[];
  readonly visible: readonly boolean[];
  readonly empty: boolean;
  /** A PID missing from its job's cgroup.procs in this reading (0: none). */
  readonly missingPid: number;
}

/** Slots of counters: (pid, cntn); PIDs 1 and 2 are job A, 3 is job B. */
const SLOTS: readonly (readonly [number, number])[] = [
  [1, 1],
  [2, 2],
  [3, 3],
  [1, 4],
];

const stepArb: fc.Arbitrary<Step> = fc.record({
  inc: fc.array(fc.integer({ min: 0, max: 1000 }), { minLength: SLOTS.length, maxLength: SLOTS.length }),
  release: fc.array(
    fc.integer({ min: 0, max: 99 }).map((n) => n < 15),
    { minLength: SLOTS.length, maxLength: SLOTS.length },
  ),
  visible: fc.array(fc.boolean(), { minLength: SLOTS.length, maxLength: SLOTS.length }),
  empty: fc.boolean(),
  missingPid: fc.integer({ min: 0, max: 3 }),
});

interface Observation {
  readonly reading: number;
  readonly value: bigint;
}

/**
 * The oracle: each true counter (a slot's generation) adds what it counted
 * between its first and last observation, or its whole last value when it was
 * first observed after the job's first sight on the port.
 */
function oracle(steps: readonly Step[]): {
  readings: QpCounter[][];
  jobOf: Map<number, string>[];
  totals: Map<string, bigint>;
} {
  const value = SLOTS.map(() => 0n);
  const gen = SLOTS.map(() => 0);
  const seen = new Map<string, { job: string; first: Observation; last: Observation }>();
  const readings: QpCounter[][] = [];
  const jobOf: Map<number, string>[] = [];
  steps.forEach((step, i) => {
    SLOTS.forEach((_, k) => {
      if (step.release[k]) {
        gen[k] = (gen[k] ?? 0) + 1;
        value[k] = 0n;
      }
      value[k] = (value[k] ?? 0n) + BigInt(step.inc[k] ?? 0);
    });
    const table = new Map([...JOBS].filter(([pid]) => pid !== step.missingPid));
    const shown = SLOTS.flatMap(([pid, cntn], k) =>
      step.empty || !step.visible[k] ? [] : [{ k, c: counter(pid, cntn, value[k] ?? 0n, [1000 * k + (gen[k] ?? 0)]) }],
    );
    for (const { k, c } of shown) {
      const job = table.get(c.pid ?? 0);
      if (job === undefined) continue;
      const id = `${k}/${gen[k]}`;
      const obs = { reading: i, value: c.values.get(NAME) ?? 0n };
      const was = seen.get(id);
      seen.set(id, { job, first: was?.first ?? obs, last: obs });
    }
    readings.push(shown.map((s) => s.c));
    jobOf.push(table);
  });
  const firstSight = new Map<string, number>();
  for (const o of seen.values()) firstSight.set(o.job, Math.min(firstSight.get(o.job) ?? Infinity, o.first.reading));
  const totals = new Map<string, bigint>();
  for (const o of seen.values()) {
    const base = o.first.reading === firstSight.get(o.job) ? o.first.value : 0n;
    totals.set(o.job, (totals.get(o.job) ?? 0n) + o.last.value - base);
  }
  return { readings, jobOf, totals };
}

describe('per-job totals against an oracle (property)', () => {
  it('equal the true counts whatever readings lack a counter or a PID, within MAX_ABSENT_READINGS', () => {
    fc.assert(
      fc.property(fc.array(stepArb, { minLength: 1, maxLength: MAX_ABSENT_READINGS + 1 }), (steps) => {
        const { readings, jobOf, totals } = oracle(steps);
        const s = fold(readings, jobOf);
        for (const job of ['A', 'B']) expect(total(s, job) ?? 0n).toBe(totals.get(job) ?? 0n);
      }),
      { numRuns: 500 },
    );
  });
});
