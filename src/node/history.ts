/**
 * The last few readings of a handful of counters per port (and per sole job on a port), with
 * their times, so the landing page can show rates and a trend. Bounded: a fixed number of
 * readings per key, and a key absent from a reading is forgotten at once.
 */
import type { Attribution } from './join/attribution.js';
import { saturated } from './read/hca.js';
import { dataCounter } from './observe.js';
import type { NodeSnapshot } from './join/snapshot.js';

/** Readings kept per key: about this many cycles of trend. */
export const HISTORY_LENGTH = 30;

/** Error counters shown with rates, when the port has them (counters/ and hw_counters/). */
export const ERROR_COUNTERS = [
  'symbol_error',
  'link_downed',
  'port_rcv_errors',
  'port_xmit_discards',
  'packet_seq_err',
  'out_of_sequence',
  'local_ack_timeout_err',
  'rnr_nak_retry_err',
] as const;

/** Byte counts derived from the 4-octet data word counters. */
export const TX_BYTES = 'tx_bytes';
export const RX_BYTES = 'rx_bytes';

export interface Reading {
  readonly atMs: number;
  readonly values: ReadonlyMap<string, bigint>;
}

/** One step between consecutive readings: undefined when no rate can be told (reset, saturated or missing counter). */
export interface RateStep {
  readonly atMs: number;
  readonly perSecond: number | undefined;
}

export class CounterHistory {
  private readonly series = new Map<string, Reading[]>();

  constructor(private readonly length: number = HISTORY_LENGTH) {
    if (!Number.isInteger(length) || length < 2)
      throw new Error(`history length must be an integer of at least 2, got ${length}`);
  }

  /** Adds one reading per key; keys missing from `readings` are dropped. */
  record(atMs: number, readings: ReadonlyMap<string, ReadonlyMap<string, bigint>>): void {
    for (const key of [...this.series.keys()]) if (!readings.has(key)) this.series.delete(key);
    for (const [key, values] of readings) {
      const list = this.series.get(key) ?? [];
      list.push({ atMs, values });
      if (list.length > this.length) list.splice(0, list.length - this.length);
      this.series.set(key, list);
    }
  }

  keys(): string[] {
    return [...this.series.keys()];
  }

  readings(key: string): readonly Reading[] {
    return this.series.get(key) ?? [];
  }

  rates(key: string, counter: string): RateStep[] {
    return rateSteps(this.readings(key), counter);
  }
}

/**
 * Per-second rate of each step between consecutive readings. A decrease is a reset and has no
 * rate; nor has a step ending on a saturated PMA counter, which stops counting at its maximum.
 */
export function rateSteps(readings: readonly Reading[], counter: string): RateStep[] {
  const out: RateStep[] = [];
  for (let i = 1; i < readings.length; i++) {
    const prev = readings[i - 1] as Reading;
    const cur = readings[i] as Reading;
    const a = prev.values.get(counter);
    const b = cur.values.get(counter);
    const seconds = (cur.atMs - prev.atMs) / 1000;
    const known = a !== undefined && b !== undefined && b >= a && seconds > 0 && !saturated(counter, b);
    const perSecond = known ? Number((b as bigint) - (a as bigint)) / seconds : undefined;
    out.push({ atMs: cur.atMs, perSecond });
  }
  return out;
}

export const portKey = (device: string, port: string): string => `port ${device} ${port}`;
export const jobKey = (jobId: string, device: string, port: string): string => `job ${jobId} ${device} ${port}`;

/** What the history keeps from one cycle: bytes and error counters per port, bytes per sole job. */
export function motionReadings(snap: NodeSnapshot, attr: Attribution): Map<string, Map<string, bigint>> {
  const out = new Map<string, Map<string, bigint>>();
  for (const hca of snap.hca.hcas) {
    for (const p of hca.ports) {
      const values = bytesOf(p.counters);
      for (const name of ERROR_COUNTERS) {
        const v = p.counters.get(name);
        if (v !== undefined) values.set(name, v);
      }
      out.set(portKey(hca.device, p.port), values);
    }
  }
  for (const v of attr.verdicts) {
    if (v.status !== 'sole' || v.soleJobId === undefined) continue;
    const s = attr.state.jobs.get(`${v.soleJobId} ${v.device} ${v.port}`);
    if (s) out.set(jobKey(s.jobId, s.device, s.port), bytesOf(s.values));
  }
  return out;
}

function bytesOf(counters: ReadonlyMap<string, bigint>): Map<string, bigint> {
  const values = new Map<string, bigint>();
  const tx = dataCounter(counters, 'xmit');
  const rx = dataCounter(counters, 'rcv');
  if (tx) values.set(TX_BYTES, tx.value * 4n);
  if (rx) values.set(RX_BYTES, rx.value * 4n);
  return values;
}
