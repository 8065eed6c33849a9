/**
 * Instrument descriptors and observations: the plain-data contract between an
 * agent's rules and the telemetry pipeline. Nothing here imports OpenTelemetry,
 * so catalogues, rules and their tests stay SDK-free.
 */

export type MetricKind = 'counter' | 'gauge' | 'updowncounter' | 'histogram';

/** One metric family, declared once in an agent's catalogue. */
export interface MetricSpec {
  /** OTLP name. Prometheus appends `_total` to counters. */
  readonly name: string;
  readonly kind: MetricKind;
  /** UCUM unit for OTLP (the Prometheus name already carries it, e.g. `_bytes`); empty for plain counts, since
   * a Collector translating to Prometheus would append `_ratio` to gauges of unit "1". */
  readonly unit: string;
  readonly description: string;
  /** Attribute keys every point of this family carries, in order. */
  readonly attributes: readonly string[];
  /** Explicit bucket boundaries, histograms only. */
  readonly buckets?: readonly number[];
}

export type Attributes = Readonly<Record<string, string>>;

/** A counter or gauge value at the current collection. */
export interface Point {
  readonly attributes: Attributes;
  /** bigint for counters that may exceed 2^53: kept exact until serialisation. */
  readonly value: number | bigint;
  /** Counters only: when this series started counting (ms since epoch). */
  readonly startTimeMs?: number;
}

export interface HistogramPoint {
  readonly attributes: Attributes;
  readonly startTimeMs: number;
  readonly count: number;
  readonly sum: number;
  /** Per-bucket counts, one more than the spec's boundaries (the last is +Inf). */
  readonly bucketCounts: readonly number[];
}

/** Every point of one family at one collection. */
export type Family =
  | { readonly spec: MetricSpec & { kind: 'counter' | 'gauge' | 'updowncounter' }; readonly points: readonly Point[] }
  | { readonly spec: MetricSpec & { kind: 'histogram' }; readonly points: readonly HistogramPoint[] };

/**
 * A family whose points are made afresh each time they are iterated, so that a family of 100k
 * series is never held whole: the Prometheus rendering consumes it point by point, and only an
 * OTLP reader makes an array of it.
 */
export interface LazyFamily {
  readonly spec: MetricSpec & { kind: 'counter' | 'gauge' | 'updowncounter' };
  readonly lazy: Iterable<Point>;
}

export type AnyFamily = Family | LazyFamily;

/** The family with its points in an array (a lazy family's made now). */
export function materialized(fam: AnyFamily): Family {
  return 'lazy' in fam ? { spec: fam.spec, points: [...fam.lazy] } : fam;
}

/** The Prometheus exposition name of a family. */
export function prometheusName(spec: MetricSpec): string {
  return spec.kind === 'counter' && !spec.name.endsWith('_total') ? `${spec.name}_total` : spec.name;
}

/** Declares a family in a catalogue, keeping its kind as a literal type. */
export function defineMetric<K extends MetricKind>(
  kind: K,
  name: string,
  unit: string,
  attributes: readonly string[],
  description: string,
  buckets?: readonly number[],
): MetricSpec & { kind: K } {
  return buckets
    ? { kind, name, unit, attributes, description, buckets }
    : { kind, name, unit, attributes, description };
}

/** A catalogue must not declare a name twice, nor an attribute twice within a family. */
export function checkCatalogue(specs: readonly MetricSpec[]): void {
  const seen = new Set<string>();
  for (const spec of specs) {
    if (seen.has(spec.name)) throw new Error(`metric ${spec.name} declared twice`);
    seen.add(spec.name);
    if (new Set(spec.attributes).size !== spec.attributes.length) {
      throw new Error(`metric ${spec.name} repeats an attribute key`);
    }
    if (!/^[a-z_][a-z0-9_]*$/.test(spec.name))
      throw new Error(`metric name ${spec.name} is not a valid Prometheus name`);
  }
}

/**
 * Something that happened between two collections (a node failed, an outage
 * ended after N seconds, GPU seconds accrued): recorded into SDK synchronous
 * instruments (counter: add; histogram: observe), which accumulate it.
 */
export interface MetricEvent {
  readonly spec: MetricSpec & { kind: 'counter' | 'histogram' };
  readonly value: number;
  readonly attributes: Attributes;
}
