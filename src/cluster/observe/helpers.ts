/**
 * Helpers every rule module of the cluster's snapshot → families step shares: families without
 * repeated series, lazy families, points only for known values, per-job memoization.
 */
import {
  point,
  type Attributes,
  type Family,
  type LazyFamily,
  type MetricSpec,
  type Point,
  type AttributesOf,
  type ExactAttributes,
} from '../../telemetry/spec.js';
import type { SlurmJob } from '../model.js';

export const MIB = 1024 * 1024;

export type PointSpec = MetricSpec & { kind: 'counter' | 'gauge' | 'updowncounter' };
export type GaugeSpec<L extends string = string> = MetricSpec<L, never> & { kind: 'gauge' };
export type NativeFamily = Family | LazyFamily;

/**
 * Builds a family, keeping the first point of any repeated attribute set: Prometheus rejects an
 * exposition with duplicate series, and a repeated partition or host name is not worth failing on.
 * Points are told apart by their first attribute (a job id, a node name: distinct almost always),
 * and compared attribute by attribute only with the earlier points that share it.
 */
export function family(spec: PointSpec, points: readonly Point[]): Family {
  const keys = spec.attributes;
  if (keys.length === 0) return { spec, points: points.slice(0, 1) };
  const first = keys[0] as string;
  const byFirst = new Map<string | undefined, Point | Point[]>();
  const unique: Point[] = [];
  for (const p of points) {
    const f = p.attributes[first];
    const seen = byFirst.get(f);
    if (seen === undefined) {
      byFirst.set(f, p);
    } else {
      const same = Array.isArray(seen) ? seen : [seen];
      if (same.some((q) => sameAttributes(keys, q.attributes, p.attributes))) continue;
      same.push(p);
      if (same !== seen) byFirst.set(f, same);
    }
    unique.push(p);
  }
  return { spec, points: unique };
}

function sameAttributes(keys: readonly string[], a: Attributes, b: Attributes): boolean {
  for (const k of keys) if ((a[k] ?? null) !== (b[k] ?? null)) return false;
  return true;
}

/**
 * A family whose points are distinct by construction (one per node name, or per job id), made
 * afresh each time it is iterated: at 100k jobs the ~700k points are never all alive at once.
 */
export function lazy(spec: PointSpec, points: () => Iterable<Point>): LazyFamily {
  return { spec, lazy: { [Symbol.iterator]: () => points()[Symbol.iterator]() } };
}

/** One point of the family per item whose value is known (a missing value is not a zero). */
export function perItem<S extends PointSpec, T, A extends AttributesOf<S>>(
  spec: S,
  items: readonly T[],
  attributes: (item: T) => ExactAttributes<NoInfer<S>, A>,
  value: (item: T) => number | undefined,
): () => Iterable<Point> {
  return function* () {
    for (const item of items) {
      const v = value(item);
      if (v !== undefined && Number.isFinite(v)) yield point(spec, attributes(item), v);
    }
  };
}

/** Distinct values, order kept; the array itself when it has one value or none. */
export function uniqueValues(values: readonly string[]): readonly string[] {
  return values.length < 2 ? values : [...new Set(values)];
}

/**
 * `f(job)` computed once per distinct combination of `inputs(job)`: on a 100k-job snapshot the
 * TRES strings repeat (a few shapes of allocation), so each distinct one is parsed once. The
 * inputs index nested maps: the strings are shared between jobs, so looking one up costs no
 * hashing, where a key built from them would be a new string to hash for every job.
 */
export function memoized<R>(
  f: (job: SlurmJob) => R,
  inputs: (job: SlurmJob) => readonly (string | number | undefined)[],
): (job: SlurmJob) => R {
  const root = new Map<unknown, unknown>();
  const DONE = Symbol('result');
  return (job) => {
    let level = root;
    for (const v of inputs(job)) {
      let next = level.get(v) as Map<unknown, unknown> | undefined;
      if (next === undefined) {
        next = new Map();
        level.set(v, next);
      }
      level = next;
    }
    if (level.has(DONE)) return level.get(DONE) as R;
    const r = f(job);
    level.set(DONE, r);
    return r;
  };
}

/** A point of the family when the value is known; nothing otherwise (a missing value is not a zero). */
export function maybe<S extends PointSpec, A extends AttributesOf<S>>(
  out: Point[],
  spec: S,
  attributes: ExactAttributes<NoInfer<S>, A>,
  value: number | undefined,
  startTimeMs?: number,
): void {
  if (value === undefined || !Number.isFinite(value)) return;
  out.push(point(spec, attributes, value, startTimeMs));
}

/** The one point of a family without labels. */
export const gaugeOf = (spec: GaugeSpec<never>, value: number): Family => ({ spec, points: [point(spec, {}, value)] });
