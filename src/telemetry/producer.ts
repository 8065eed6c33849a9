/**
 * SnapshotProducer: hands the OpenTelemetry readers exactly the points of the
 * latest snapshot. SDK observable instruments would keep every attribute set
 * ever seen under cumulative temporality (ended jobs would be exported
 * forever) and cap each instrument at 2000 series; a producer has neither
 * problem: the readers serialize exactly what it returns.
 */
import { ValueType, type HrTime } from '@opentelemetry/api';
import { millisToHrTime } from '@opentelemetry/core';
import {
  AggregationTemporality,
  DataPointType,
  type CollectionResult,
  type MetricData,
  type MetricProducer,
  type ScopeMetrics,
} from '@opentelemetry/sdk-metrics';
import { emptyResource } from '@opentelemetry/resources';
import { materialized, type AnyFamily, type Family, type HistogramPoint, type MetricSpec, type Point } from './spec.js';

export interface Scope {
  readonly name: string;
  readonly version: string;
}

export interface SnapshotProducerOptions {
  /** Unix ms the agent started: start time of counters that do not carry their own. */
  readonly processStartMs?: number;
  /**
   * Keep each published snapshot for collect() (default true). A pipeline without a reader that
   * calls collect() (Prometheus only: it renders the families itself) turns this off, so the
   * points of a large snapshot are not held between collections.
   */
  readonly retain?: boolean;
}

export class SnapshotProducer implements MetricProducer {
  private families: readonly Family[] = [];
  private atMs = 0;
  /** MetricData of the current snapshot, built on the first collect() after a publish. */
  private scopeMetrics: ScopeMetrics | undefined;
  private pointCount = 0;
  private readonly processStartMs: number;
  private readonly retain: boolean;

  constructor(
    private readonly scope: Scope,
    opts: number | SnapshotProducerOptions = {},
  ) {
    const o = typeof opts === 'number' ? { processStartMs: opts } : opts;
    this.processStartMs = o.processStartMs ?? Date.now();
    this.retain = o.retain ?? true;
  }

  /**
   * Replaces the published snapshot. Families with no points are omitted. Lazy families are made
   * into arrays only when kept; otherwise their points are counted by whoever consumes them
   * (`counted`).
   */
  publish(families: readonly AnyFamily[], atMs: number = Date.now()): void {
    const kept = this.retain ? families.map(materialized) : [];
    let count = 0;
    for (const fam of this.retain ? kept : families) if ('points' in fam) count += fam.points.length;
    this.families = kept;
    this.atMs = atMs;
    this.scopeMetrics = undefined;
    this.pointCount = count;
  }

  /** The point count of the latest snapshot, as its consumer counted it (lazy families included). */
  counted(points: number): void {
    this.pointCount = points;
  }

  /** Points in the latest snapshot (self-monitoring). */
  get size(): number {
    return this.pointCount;
  }

  async collect(): Promise<CollectionResult> {
    this.scopeMetrics ??= { scope: this.scope, metrics: toMetricData(this.families, this.atMs, this.processStartMs) };
    // The reader keeps its own resource; ours is ignored by design.
    return { resourceMetrics: { resource: emptyResource(), scopeMetrics: [this.scopeMetrics] }, errors: [] };
  }
}

/** Families as the SDK's MetricData, ending at `atMs`; families with no points are omitted. */
export function toMetricData(families: readonly Family[], atMs: number, processStartMs: number): MetricData[] {
  const end = millisToHrTime(atMs);
  const defaultStart = millisToHrTime(processStartMs);
  const metrics: MetricData[] = [];
  for (const fam of families) if (fam.points.length > 0) metrics.push(familyMetricData(fam, end, defaultStart));
  return metrics;
}

function familyMetricData(fam: Family, end: HrTime, defaultStart: HrTime): MetricData {
  const descriptor = describe(fam.spec);
  if (fam.spec.kind === 'histogram') {
    const buckets = [...(fam.spec.buckets ?? [])];
    return {
      descriptor,
      aggregationTemporality: AggregationTemporality.CUMULATIVE,
      dataPointType: DataPointType.HISTOGRAM,
      dataPoints: (fam.points as readonly HistogramPoint[]).map((p) => ({
        attributes: p.attributes,
        startTime: millisToHrTime(p.startTimeMs),
        endTime: end,
        value: { buckets: { boundaries: buckets, counts: [...p.bucketCounts] }, count: p.count, sum: p.sum },
      })),
    };
  }
  const dataPoints = (fam.points as readonly Point[]).map((p) => ({
    attributes: p.attributes,
    startTime: p.startTimeMs === undefined ? defaultStart : millisToHrTime(p.startTimeMs),
    endTime: end,
    value: Number(p.value),
  }));
  if (fam.spec.kind === 'gauge') {
    return {
      descriptor,
      aggregationTemporality: AggregationTemporality.CUMULATIVE,
      dataPointType: DataPointType.GAUGE,
      dataPoints,
    };
  }
  return {
    descriptor,
    aggregationTemporality: AggregationTemporality.CUMULATIVE,
    dataPointType: DataPointType.SUM,
    isMonotonic: fam.spec.kind === 'counter',
    dataPoints,
  };
}

function describe(spec: MetricSpec) {
  return { name: spec.name, description: spec.description, unit: spec.unit, valueType: ValueType.DOUBLE };
}
