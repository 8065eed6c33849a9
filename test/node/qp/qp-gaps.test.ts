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
} from '../../../src/node/qp/qp-counters.js';

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

const OOS = 'out_of_sequence';
const NAMES = [NAME, OOS] as const;

/**
 * One step of the true counters, per slot: increases of both names, a release
 * (a new counter in the slot), a reconnection (all its QPs replaced, the
 * counter kept), whether the reading shows it, and which name its entry lacks.
 */
interface Step {
  readonly inc: readonly (readonly [number, number])[];
  readonly release: readonly boolean[];
  readonly churn: readonly boolean[];
  readonly visible: readonly boolean[];
  /** 0: the entry has both names; 1 or 2: it lacks NAMES[n - 1] (never in a counter's first entry). */
  readonly lacks: readonly number[];
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

const perSlot = <T>(arb: fc.Arbitrary<T>): fc.Arbitrary<T[]> =>
  fc.array(arb, { minLength: SLOTS.length, maxLength: SLOTS.length });
const sometimes = (percent: number): fc.Arbitrary<boolean> => fc.integer({ min: 0, max: 99 }).map((n) => n < percent);
const incArb = fc.integer({ min: 0, max: 1000 });

const stepArb: fc.Arbitrary<Step> = fc.record({
  inc: perSlot(fc.tuple(incArb, incArb)),
  release: perSlot(sometimes(15)),
  churn: perSlot(sometimes(25)),
  visible: perSlot(fc.boolean()),
  lacks: perSlot(fc.integer({ min: 0, max: 5 }).map((n) => (n > 2 ? 0 : n))),
  empty: fc.boolean(),
  missingPid: fc.integer({ min: 0, max: 3 }),
});

type Values = ReadonlyMap<string, bigint>;
const merge = (a: Values, b: Values): Values => new Map([...a, ...b]);

/** What the oracle knows of one slot: the true counter and the agent's last sight of the slot. */
interface Slot {
  gen: number;
  churns: number;
  values: [bigint, bigint];
  seen?: { gen: number; values: Values };
}

/** One true counter (a slot's generation) as the agent saw it: its job, where it counts from, its last values. */
interface Generation {
  readonly job: string;
  readonly base: Values;
  last: Values;
}

/**
 * The oracle: each true counter adds what it counted between its first and
 * last observation, or its whole last value when it was first observed after
 * the job's first sight on the port. A new counter in a slot whose first
 * values are all at least the slot's last ones passes for the old one (the
 * readings cannot tell it from a reconnection): it adds from those values.
 */
function oracle(steps: readonly Step[]): {
  readings: QpCounter[][];
  jobOf: Map<number, string>[];
  totals: Map<string, Map<string, bigint>>;
} {
  const slots: Slot[] = SLOTS.map(() => ({ gen: 0, churns: 0, values: [0n, 0n] }));
  const gens = new Map<string, Generation>();
  const sighted = new Set<string>();
  const readings: QpCounter[][] = [];
  const jobOf: Map<number, string>[] = [];
  steps.forEach((step) => {
    slots.forEach((slot, k) => advance(slot, step, k));
    const table = new Map([...JOBS].filter(([pid]) => pid !== step.missingPid));
    const shown: QpCounter[] = [];
    const firstSightNow = new Set<string>();
    slots.forEach((slot, k) => {
      const [pid, cntn] = SLOTS[k] ?? [0, 0];
      if (step.empty || !step.visible[k]) return;
      const id = `${k}/${slot.gen}`;
      const lacks = gens.has(id) ? (step.lacks[k] ?? 0) : 0;
      const values = new Map(NAMES.map((n, j) => [n, slot.values[j] ?? 0n] as const).filter((_, j) => j !== lacks - 1));
      shown.push({
        device: 'mlx5_1',
        port: '1',
        cntn,
        pid,
        qpns: [k * 1_000_000 + slot.gen * 1000 + slot.churns],
        values,
      });
      const job = table.get(pid);
      if (job === undefined) return;
      if (!sighted.has(job)) firstSightNow.add(job);
      observe(gens, slot, id, job, values, firstSightNow.has(job));
    });
    for (const job of firstSightNow) sighted.add(job);
    readings.push(shown);
    jobOf.push(table);
  });
  const totals = new Map<string, Map<string, bigint>>();
  for (const g of gens.values()) {
    const t = totals.get(g.job) ?? new Map<string, bigint>();
    for (const n of NAMES) t.set(n, (t.get(n) ?? 0n) + (g.last.get(n) ?? 0n) - (g.base.get(n) ?? 0n));
    totals.set(g.job, t);
  }
  return { readings, jobOf, totals };
}

function advance(slot: Slot, step: Step, k: number): void {
  if (step.release[k]) {
    slot.gen += 1;
    slot.values = [0n, 0n];
  } else if (step.churn[k]) slot.churns += 1;
  const [a, b] = step.inc[k] ?? [0, 0];
  slot.values = [slot.values[0] + BigInt(a), slot.values[1] + BigInt(b)];
}

function observe(
  gens: Map<string, Generation>,
  slot: Slot,
  id: string,
  job: string,
  values: Values,
  firstSight: boolean,
): void {
  const g = gens.get(id);
  if (g) {
    g.last = merge(g.last, values);
    slot.seen = { gen: slot.gen, values: merge(slot.seen?.values ?? new Map(), values) };
    return;
  }
  const before = slot.seen?.values;
  const passes = before !== undefined && [...values].every(([n, v]) => v >= (before.get(n) ?? 0n));
  const base = firstSight ? values : passes ? before : new Map<string, bigint>();
  gens.set(id, { job, base, last: values });
  slot.seen = { gen: slot.gen, values: passes ? merge(before, values) : values };
}

describe('per-job totals against an oracle (property)', () => {
  it('equal the true counts whatever readings lack a counter, a name or a PID, and across reconnections', () => {
    fc.assert(
      fc.property(fc.array(stepArb, { minLength: 1, maxLength: MAX_ABSENT_READINGS + 1 }), (steps) => {
        const { readings, jobOf, totals } = oracle(steps);
        const s = fold(readings, jobOf);
        for (const job of ['A', 'B'])
          for (const n of NAMES) {
            const got = s.series.get(`${job} mlx5_1 1`)?.values.get(n) ?? 0n;
            expect(got).toBe(totals.get(job)?.get(n) ?? 0n);
          }
      }),
      { numRuns: 500 },
    );
  });
});
