/**
 * Per-job counters on shared ports from per-PID QP counters (`rdma -j
 * statistic qp show` in auto `pid` mode): the kernel counts each process's
 * requests and errors, so these values are the job's own even where other
 * jobs use the same port.
 *
 * A process's counter is released when its last QP is destroyed and a new one
 * may be allocated later, so the kernel's values are not a job's total: the
 * job's totals are kept here. Per job and (device, port, counter): 0 at the
 * job's first sight on the port, then the increases of every counter of every
 * PID of the job between consecutive readings; a counter that appears later
 * adds its whole value (it counted from 0 since it was bound); one that
 * disappears never lowers the total; 32-bit Q counters wrap.
 *
 * A counter can be missing from a reading and come back (an empty reading, or
 * its PID briefly absent from the job's cgroup.procs): it is remembered and
 * continues from its last value; so does one counter name missing from an
 * entry that stays. Only a new counter starts afresh: another id, or, when no
 * QP it had is left (a driver may give a released id to the next counter) or
 * after an absence, a value below the last one seen. A process that replaced
 * all its QPs while the kernel kept their counter (a reconnection) shows the
 * same id with higher values: it continues. A new counter that already
 * counted past the old one's values passes for it and is counted short, never
 * twice. A counter whose QPs say it is the same one wraps across an absence
 * as it wraps between two readings. A remembered counter is forgotten when
 * its job ends or after MAX_ABSENT_READINGS readings without it; at most
 * MAX_REMEMBERED are kept.
 *
 * The readings are parsed in qp-parse.ts.
 */
import { increase } from '../read/hca.js';
import type { QpCounter, QpReading, QpResource } from './qp-parse.js';

export { autoOff, type LinkMode, type QpCounter, type QpReading, type QpResource } from './qp-parse.js';

/** One job's totals on one port. */
export interface QpSeries {
  readonly jobId: string;
  readonly device: string;
  readonly port: string;
  readonly startMs: number;
  readonly values: ReadonlyMap<string, bigint>;
}

export interface QpState {
  /** The reading last accumulated. */
  readonly seq?: number;
  /** Keyed `jobId device port`; kept while the job lives. */
  readonly series: ReadonlyMap<string, QpSeries>;
  /** Last reading of each counter of a job's PID, keyed `device port cntn pid`, absent ones included. */
  readonly last: ReadonlyMap<string, RememberedCounter>;
  /** QPs with a counter and all QPs, per `jobId device port`, from the reading. */
  readonly counted: ReadonlyMap<string, number>;
  readonly qps: ReadonlyMap<string, number>;
}

/** A counter's last reading, and how many readings since lacked it. */
export interface RememberedCounter {
  readonly jobId: string;
  readonly qpns: readonly number[];
  readonly values: ReadonlyMap<string, bigint>;
  readonly absent: number;
}

/** Readings a counter may be missing from and still continue from its last value (10 cycles). */
export const MAX_ABSENT_READINGS = 10;
/** Counters remembered at most; the ones seen in the reading come first. */
export const MAX_REMEMBERED = 20_000;

export const EMPTY_QP_STATE: QpState = { series: new Map(), last: new Map(), counted: new Map(), qps: new Map() };

/**
 * Folds a reading into the per-job totals. `jobOf` maps a PID to its job id
 * (resolved jobs only); `alive` is every job on the node: the series of the
 * others are dropped.
 */
export function accumulateQp(
  prev: QpState,
  reading: QpReading | undefined,
  jobOf: ReadonlyMap<number, string>,
  alive: ReadonlySet<string>,
  nowMs: number,
): QpState {
  const series = new Map([...prev.series].filter(([, s]) => alive.has(s.jobId)));
  if (reading === undefined || reading.seq === prev.seq) {
    return { ...prev, series, last: new Map([...prev.last].filter(([, r]) => alive.has(r.jobId))) };
  }
  const fresh = new Set<string>();
  const last = new Map<string, RememberedCounter>();
  const counted = new Map<string, number>();
  for (const c of reading.counters) {
    const jobId = c.pid === undefined ? undefined : jobOf.get(c.pid);
    if (jobId === undefined) continue;
    const key = `${jobId} ${c.device} ${c.port}`;
    counted.set(key, (counted.get(key) ?? 0) + c.qpns.length);
    let s = series.get(key);
    if (!s) {
      s = { jobId, device: c.device, port: c.port, startMs: nowMs, values: new Map() };
      fresh.add(key);
    }
    const counterKey = `${c.device} ${c.port} ${c.cntn} ${c.pid}`;
    const before = sameCounter(prev.last.get(counterKey), c, jobId);
    series.set(key, addCounter(s, before, c.values, fresh.has(key)));
    // A name this entry lacks keeps its last value, so its return adds only its increase.
    const values = before ? new Map([...before, ...c.values]) : c.values;
    if (last.size < MAX_REMEMBERED) last.set(counterKey, { jobId, qpns: c.qpns, values, absent: 0 });
  }
  rememberAbsent(prev.last, last, alive);
  return { seq: reading.seq, series, last, counted, qps: qpCounts(reading.qps, jobOf) };
}

/** Keeps the counters this reading lacked, while their job lives and for MAX_ABSENT_READINGS readings. */
function rememberAbsent(
  before: ReadonlyMap<string, RememberedCounter>,
  last: Map<string, RememberedCounter>,
  alive: ReadonlySet<string>,
): void {
  for (const [key, r] of before) {
    if (last.size >= MAX_REMEMBERED) return;
    if (last.has(key) || !alive.has(r.jobId) || r.absent >= MAX_ABSENT_READINGS) continue;
    last.set(key, { ...r, absent: r.absent + 1 });
  }
}

/**
 * The last reading of the same counter, or undefined when this is a new one:
 * the PID is now another job's; or no QP it had is left (or it was absent)
 * and a value is below the last one seen. A 32-bit counter going down then
 * counts as new rather than as a wrap: short, never twice. QPs all replaced
 * with values going on is the same counter (the kernel kept it).
 */
function sameCounter(
  before: RememberedCounter | undefined,
  cur: QpCounter,
  jobId: string,
): ReadonlyMap<string, bigint> | undefined {
  if (!before || before.jobId !== jobId) return undefined;
  const told = before.qpns.length > 0 && cur.qpns.length > 0;
  if (told && sharesQp(before.qpns, cur.qpns)) return before.values;
  if (!told && before.absent === 0) return before.values;
  if ([...cur.values].some(([name, v]) => v < (before.values.get(name) ?? 0n))) return undefined;
  return before.values;
}

function sharesQp(a: readonly number[], b: readonly number[]): boolean {
  const had = new Set(a);
  return b.some((n) => had.has(n));
}

/**
 * Adds one counter's reading to a job's totals: increases since its last
 * reading; its whole value when it is new, unless the job was first seen on
 * the port in this very reading (the job starts at 0).
 */
function addCounter(
  s: QpSeries,
  before: ReadonlyMap<string, bigint> | undefined,
  cur: ReadonlyMap<string, bigint>,
  firstSight: boolean,
): QpSeries {
  const values = new Map(s.values);
  for (const [name, value] of cur) {
    const was = before?.get(name);
    const add = was !== undefined ? increase(name, was, value) : firstSight ? 0n : value;
    values.set(name, (values.get(name) ?? 0n) + add);
  }
  return { ...s, values };
}

function qpCounts(qps: readonly QpResource[] | undefined, jobOf: ReadonlyMap<number, string>): Map<string, number> {
  const out = new Map<string, number>();
  for (const q of qps ?? []) {
    const jobId = q.pid === undefined ? undefined : jobOf.get(q.pid);
    if (jobId === undefined) continue;
    const key = `${jobId} ${q.device} ${q.port}`;
    out.set(key, (out.get(key) ?? 0) + (q.qps ?? 1));
  }
  return out;
}
