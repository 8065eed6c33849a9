/**
 * SnapshotProducer: hands the OpenTelemetry readers exactly the points of the
 * latest snapshot. SDK observable instruments would keep every attribute set
 * ever seen under cumulative temporality and cap each instrument at 2000
 * series; a producer has neither problem (REFERENCE.md §4).
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
import type { Family, HistogramPoint, MetricSpec, Point } from './spec.js';

export interface Scope {
  readonly name: string;
  readonly version: string;
}

export class SnapshotProducer implements MetricProducer {
  private scopeMetrics: ScopeMetrics;
  private pointCount = 0;

  /** Unix ms the agent started: start time of counters that do not carry their own. */
  constructor(
    private readonly scope: Scope,
    private readonly processStartMs: number = Date.now(),
  ) {
    this.scopeMetrics = { scope, metrics: [] };
  }

  /** Replaces the published snapshot. Families with no points are omitted. */
  publish(families: readonly Family[], atMs: number = Date.now()): void {
    const end = millisToHrTime(atMs);
    const metrics: MetricData[] = [];
    let count = 0;
    for (const fam of families) {
      if (fam.points.length === 0) continue;
      metrics.push(this.toMetricData(fam, end));
      count += fam.points.length;
    }
    this.scopeMetrics = { scope: this.scope, metrics };
    this.pointCount = count;
  }

  /** Points in the latest snapshot (self-monitoring). */
  get size(): number {
    return this.pointCount;
  }

  async collect(): Promise<CollectionResult> {
    // The reader keeps its own resource; ours is ignored by design.
    return { resourceMetrics: { resource: emptyResource(), scopeMetrics: [this.scopeMetrics] }, errors: [] };
  }

  private toMetricData(fam: Family, end: HrTime): MetricData {
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
    const defaultStart = millisToHrTime(this.processStartMs);
    const dataPoints = (fam.points as readonly Point[]).map((p) => ({
      attributes: p.attributes,
      startTime: p.startTimeMs === undefined ? defaultStart : millisToHrTime(p.startTimeMs),
      endTime: end,
      value: Number(p.value),
    }));
    if (fam.spec.kind === 'gauge') {
      return { descriptor, aggregationTemporality: AggregationTemporality.CUMULATIVE, dataPointType: DataPointType.GAUGE, dataPoints };
    }
    return {
      descriptor,
      aggregationTemporality: AggregationTemporality.CUMULATIVE,
      dataPointType: DataPointType.SUM,
      isMonotonic: fam.spec.kind === 'counter',
      dataPoints,
    };
  }
}

function describe(spec: MetricSpec) {
  return { name: spec.name, description: spec.description, unit: spec.unit, valueType: ValueType.DOUBLE };
}
