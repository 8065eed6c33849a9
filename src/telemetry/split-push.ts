/**
 * One collection pushed as several OTLP requests, each small enough for the receiver to take.
 *
 * The SDK sends a collection as one request, and a cluster agent's collection grows with the
 * cluster (hundreds of MB of protobuf at 100k jobs), far past what a Collector's receiver accepts
 * (`max_request_body_size`, 20 MiB by default): the whole push would be refused, every time. So the
 * collection is cut into requests of whole points, each under a byte budget estimated from the
 * points themselves, all with the same resource and scope, and sent one after another; the push
 * succeeds when every request did. Points are cumulative, so a request that a later push
 * repeats loses nothing.
 */
import { ExportResultCode, type ExportResult } from '@opentelemetry/core';
import type { MetricData, PushMetricExporter, ResourceMetrics, ScopeMetrics } from '@opentelemetry/sdk-metrics';
import { addRejections, takePartialSuccess, type Rejection } from './partial-success.js';

/** A push's result, with what the receiver refused of the requests it answered (OTLP partial success). */
export interface PushResult extends ExportResult {
  readonly rejected?: Rejection;
}

/**
 * What a point costs in a request beyond its attributes: its timestamps, value and framing (an
 * upper bound for a gauge or sum point in protobuf and in JSON, whose field names and quoted
 * nanosecond timestamps are the larger; histograms add their buckets).
 */
const POINT_OVERHEAD_BYTES = 128;
/** Framing of one attribute (protobuf's tags and lengths; JSON's `{"key":…,"value":{"stringValue":…}}`). */
const ATTRIBUTE_OVERHEAD_BYTES = 40;
/**
 * A UTF-16 code unit becomes at most 3 bytes of UTF-8: estimating strings by their length times 3
 * keeps the estimate an upper bound without encoding every string.
 */
const UTF8_BYTES_PER_UNIT = 3;

type AnyPoint = MetricData['dataPoints'][number];

/** An upper bound of the bytes `attributes` take in a request. */
function attributeBytes(attributes: Readonly<Record<string, unknown>>): number {
  let bytes = 0;
  for (const [key, value] of Object.entries(attributes)) {
    bytes += ATTRIBUTE_OVERHEAD_BYTES + UTF8_BYTES_PER_UNIT * (key.length + String(value).length);
  }
  return bytes;
}

/** What every request repeats: the resource and a scope (an upper bound). */
function envelopeBytes(rm: ResourceMetrics): number {
  let scope = 0;
  for (const s of rm.scopeMetrics)
    scope = Math.max(scope, 64 + UTF8_BYTES_PER_UNIT * (s.scope.name.length + (s.scope.version ?? '').length));
  return 256 + attributeBytes(rm.resource.attributes) + scope;
}

/** What a metric costs in each request that holds some of its points: its descriptor (an upper bound). */
function descriptorBytes(metric: MetricData): number {
  const d = metric.descriptor;
  return 64 + UTF8_BYTES_PER_UNIT * (d.name.length + d.description.length + d.unit.length);
}

/** An upper bound of the bytes `point` adds to a request. */
export function pointBytes(point: AnyPoint): number {
  let bytes = POINT_OVERHEAD_BYTES + attributeBytes(point.attributes);
  // A histogram's bounds and counts: at most 9 bytes each, plus its sum, count, min and max.
  const buckets = (point.value as { buckets?: { boundaries: number[]; counts: number[] } }).buckets;
  if (buckets) bytes += 9 * (buckets.boundaries.length + buckets.counts.length) + 40;
  return bytes;
}

/** A metric with some of its points (same descriptor, temporality and type). */
function withPoints(metric: MetricData, points: AnyPoint[]): MetricData {
  return { ...metric, dataPoints: points } as MetricData;
}

/**
 * `rm` cut into requests of whole points, in order, each estimated at most `maxBytes` (a point
 * larger than that goes alone). One request, `rm` itself, when it fits.
 */
export function splitForPush(rm: ResourceMetrics, maxBytes: number): ResourceMetrics[] {
  const requests: ResourceMetrics[] = [];
  const envelope = envelopeBytes(rm);
  let scopes: ScopeMetrics[] = [];
  let bytes = envelope;
  let points = 0;
  const flush = (): void => {
    if (points > 0) requests.push({ resource: rm.resource, scopeMetrics: scopes });
    scopes = [];
    bytes = envelope;
    points = 0;
  };
  for (const scope of rm.scopeMetrics) {
    for (const metric of scope.metrics) {
      const descriptor = descriptorBytes(metric);
      let part: AnyPoint[] = [];
      const close = (): void => {
        if (part.length === 0) return;
        const last = scopes[scopes.length - 1];
        const m = withPoints(metric, part);
        if (last?.scope === scope.scope) last.metrics.push(m);
        else scopes.push({ scope: scope.scope, metrics: [m] });
        part = [];
      };
      for (const point of metric.dataPoints as AnyPoint[]) {
        // The first of the metric's points in a request brings its descriptor along.
        const cost = pointBytes(point) + (part.length === 0 ? descriptor : 0);
        if (points > 0 && bytes + cost > maxBytes) {
          close();
          flush();
          part.push(point);
          bytes += pointBytes(point) + descriptor;
        } else {
          part.push(point);
          bytes += cost;
        }
        points++;
      }
      close();
    }
  }
  flush();
  return requests.length <= 1 ? [rm] : requests;
}

/** Sends each collection through `inner` as requests of at most `maxBytes` (estimated), one at a time. */
export class SplitExporter implements PushMetricExporter {
  readonly selectAggregationTemporality: PushMetricExporter['selectAggregationTemporality'];
  readonly selectAggregation: PushMetricExporter['selectAggregation'];

  constructor(
    private readonly inner: PushMetricExporter,
    private readonly maxBytes: number,
  ) {
    this.selectAggregationTemporality = inner.selectAggregationTemporality?.bind(inner);
    this.selectAggregation = inner.selectAggregation?.bind(inner);
  }

  /** Reports a PushResult: the refusals of every request answered, also when a later one failed. */
  export(metrics: ResourceMetrics, done: (r: PushResult) => void): void {
    const requests = splitForPush(metrics, this.maxBytes);
    let rejected: Rejection | undefined;
    const next = (i: number): void => {
      const request = requests[i];
      if (request === undefined) return done({ code: ExportResultCode.SUCCESS, rejected });
      this.inner.export(request, (r) => {
        // Taken first thing: the SDK noted it just before calling back (partial-success.ts).
        rejected = addRejections(rejected, takePartialSuccess());
        if (r.code === ExportResultCode.SUCCESS) next(i + 1);
        else done(rejected === undefined ? r : { ...r, rejected });
      });
    };
    next(0);
  }

  forceFlush(): Promise<void> {
    return this.inner.forceFlush();
  }

  shutdown(): Promise<void> {
    return this.inner.shutdown();
  }
}
