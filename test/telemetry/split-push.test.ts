/**
 * A push cut into requests: each request, serialized by the SDK's own OTLP serializers (protobuf
 * and JSON), stays under the budget whatever the label text; together they hold every point once,
 * in order, under the same resource and scope; the push succeeds only when every request did.
 */
import { ExportResultCode, type ExportResult } from '@opentelemetry/core';
import { JsonMetricsSerializer, ProtobufMetricsSerializer } from '@opentelemetry/otlp-transformer';
import { emptyResource, resourceFromAttributes } from '@opentelemetry/resources';
import {
  AggregationTemporality,
  DataPointType,
  type MetricData,
  type PushMetricExporter,
  type ResourceMetrics,
} from '@opentelemetry/sdk-metrics';
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { notePartialSuccess } from '../../src/telemetry/partial-success.js';
import { splitForPush, SplitExporter, type PushResult } from '../../src/telemetry/split-push.js';

const SCOPE = { name: 'slurm-otel-cluster', version: 'test' };
const RESOURCE = resourceFromAttributes({ 'service.name': 'slurm-otel-cluster', 'host.name': 'test' });

function gauge(name: string, labels: readonly Record<string, string>[]): MetricData {
  return {
    descriptor: { name, description: '', unit: '', valueType: 1 },
    aggregationTemporality: AggregationTemporality.CUMULATIVE,
    dataPointType: DataPointType.GAUGE,
    dataPoints: labels.map((attributes, i) => ({ attributes, startTime: [1, 0], endTime: [2, 0], value: i })),
  } as MetricData;
}

function collection(metrics: MetricData[]): ResourceMetrics {
  return { resource: RESOURCE, scopeMetrics: [{ scope: SCOPE, metrics }] };
}

/** Every point of `rms`, as metric name and attributes, in order. */
function points(rms: readonly ResourceMetrics[]): string[] {
  return rms.flatMap((rm) =>
    rm.scopeMetrics.flatMap((s) =>
      s.metrics.flatMap((m) => m.dataPoints.map((p) => `${m.descriptor.name} ${JSON.stringify(p.attributes)}`)),
    ),
  );
}

const sizes = (rm: ResourceMetrics): number[] => [
  ProtobufMetricsSerializer.serializeRequest(rm)?.length ?? 0,
  JsonMetricsSerializer.serializeRequest(rm)?.length ?? 0,
];

describe('splitForPush', () => {
  it('keeps a collection that fits as it is', () => {
    const rm = collection([gauge('a', [{ x: '1' }])]);
    expect(splitForPush(rm, 1 << 20)).toEqual([rm]);
  });

  it('cuts a large collection into requests under the budget, every point once, in order', () => {
    const jobs = Array.from({ length: 4000 }, (_, i) => ({
      job_id: String(1_000_000 + i),
      user_name: `user${i % 97}`,
    }));
    const rm = collection([gauge('slurm_job_info', jobs), gauge('slurm_job_cpus', jobs), gauge('slurm_nodes', [{}])]);
    const budget = 64 * 1024;
    const requests = splitForPush(rm, budget);
    expect(requests.length).toBeGreaterThan(4);
    for (const r of requests) {
      for (const size of sizes(r)) expect(size).toBeLessThanOrEqual(budget);
      expect(r.resource).toBe(RESOURCE);
      expect(r.scopeMetrics.every((s) => s.scope === SCOPE)).toBe(true);
    }
    expect(points(requests)).toEqual(points([rm]));
  });

  it('stays under the budget for any label text: ASCII, control characters, CJK, astral', () => {
    const text = fc.string({ unit: fc.constantFrom('a', '\u0001', '"', '\\', 'é', '漢', '😀'), maxLength: 40 });
    fc.assert(
      fc.property(
        fc.array(fc.dictionary(fc.constantFrom('k', 'node_name', 'reason'), text), { maxLength: 300 }),
        (labels) => {
          const rm = collection([gauge('g', labels)]);
          const requests = splitForPush(rm, 8 * 1024);
          for (const r of requests) for (const size of sizes(r)) expect(size).toBeLessThanOrEqual(8 * 1024);
          expect(points(requests)).toEqual(points([rm]));
        },
      ),
      { numRuns: 60 },
    );
  });

  it('sends a point larger than the budget alone, and an empty collection as one request', () => {
    const big = { comment: 'x'.repeat(10_000) };
    const requests = splitForPush(collection([gauge('g', [{ a: '1' }, big, { a: '2' }])]), 4096);
    expect(requests.map((r) => points([r]).length)).toEqual([1, 1, 1]);
    const empty: ResourceMetrics = { resource: emptyResource(), scopeMetrics: [] };
    expect(splitForPush(empty, 4096)).toEqual([empty]);
  });
});

describe('SplitExporter', () => {
  /** An exporter that records the points of each request and answers as `answer` says. */
  function recorder(answer: (i: number) => ExportResult): { exporter: PushMetricExporter; seen: string[][] } {
    const seen: string[][] = [];
    const exporter: PushMetricExporter = {
      export: (rm, done) => {
        seen.push(points([rm]));
        setImmediate(() => done(answer(seen.length - 1)));
      },
      forceFlush: async () => undefined,
      shutdown: async () => undefined,
    };
    return { exporter, seen };
  }
  const push = (e: PushMetricExporter, rm: ResourceMetrics): Promise<ExportResult> =>
    new Promise((resolve) => e.export(rm, resolve));
  const rm = collection([
    gauge(
      'g',
      Array.from({ length: 300 }, (_, i) => ({ i: String(i) })),
    ),
  ]);

  it('sends the requests one after another and succeeds when all did', async () => {
    const { exporter, seen } = recorder(() => ({ code: ExportResultCode.SUCCESS }));
    expect((await push(new SplitExporter(exporter, 4096), rm)).code).toBe(ExportResultCode.SUCCESS);
    expect(seen.length).toBeGreaterThan(2);
    expect(seen.flat()).toEqual(points([rm]));
  });

  it('fails the push at the first refused request and sends no more', async () => {
    const refused = { code: ExportResultCode.FAILED, error: new Error('413') };
    const { exporter, seen } = recorder((i) => (i === 1 ? refused : { code: ExportResultCode.SUCCESS }));
    expect(await push(new SplitExporter(exporter, 4096), rm)).toBe(refused);
    expect(seen).toHaveLength(2);
  });

  it("sums the points each request's answer refused, also when a later request fails", async () => {
    // As the SDK does: the partial success is reported just before the callback, in the same run.
    const answering = (fail: number): PushMetricExporter => {
      let i = 0;
      return {
        export: (_rm, done) =>
          setImmediate(() => {
            const n = i++;
            if (n === fail) return done({ code: ExportResultCode.FAILED, error: new Error('503') });
            notePartialSuccess(JSON.stringify({ rejectedDataPoints: String(n + 1), errorMessage: `bad ${n}` }));
            done({ code: ExportResultCode.SUCCESS });
          }),
        forceFlush: async () => undefined,
        shutdown: async () => undefined,
      };
    };
    const requests = splitForPush(rm, 4096).length;
    const whole: PushResult = await push(new SplitExporter(answering(-1), 4096), rm);
    expect(whole.code).toBe(ExportResultCode.SUCCESS);
    expect(whole.rejected).toEqual({ points: (requests * (requests + 1)) / 2, message: `bad ${requests - 1}` });
    const cut: PushResult = await push(new SplitExporter(answering(2), 4096), rm);
    expect(cut.code).toBe(ExportResultCode.FAILED);
    expect(cut.rejected).toEqual({ points: 1 + 2, message: 'bad 1' });
  });

  it('never takes a partial success noted for an answer nobody called back', async () => {
    notePartialSuccess('{"rejectedDataPoints":"9"}');
    await new Promise((r) => setImmediate(r));
    const { exporter } = recorder(() => ({ code: ExportResultCode.SUCCESS }));
    const result: PushResult = await push(new SplitExporter(exporter, 4096), rm);
    expect(result.rejected).toBeUndefined();
  });
});
