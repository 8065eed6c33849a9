/**
 * Self-monitoring: the agent's own health on its own endpoint, with ordinary
 * SDK synchronous instruments (bounded cardinality) on a separate provider.
 */
import type { Attributes as OtelAttributes } from '@opentelemetry/api';
import { PrometheusExporter, PrometheusSerializer } from '@opentelemetry/exporter-prometheus';
import { MeterProvider, type ResourceMetrics } from '@opentelemetry/sdk-metrics';
import type { Body } from './http.js';
import { PROMETHEUS_CONTENT_TYPE } from './pipeline.js';
import type { Scope } from './producer.js';
import { buildResource, type ResourceOptions } from './resource.js';
import type { Attributes, MetricSpec } from './spec.js';

/** counter/updowncounter: adds; gauge: sets; histogram: observes. */
export interface Recorder {
  record(value: number, attributes?: Attributes): void;
}

export type Recorders<T extends Record<string, MetricSpec>> = { readonly [K in keyof T]: Recorder };

export class SelfMonitor<T extends Record<string, MetricSpec>> {
  readonly m: Recorders<T>;
  private readonly provider: MeterProvider;
  private readonly exporter = new PrometheusExporter({ preventServerStart: true, withoutScopeInfo: true });
  private readonly serializer = new PrometheusSerializer(undefined, false, undefined, false, true);

  constructor(resource: ResourceOptions, scope: Scope, private readonly specs: T) {
    this.provider = new MeterProvider({ resource: buildResource(resource), readers: [this.exporter] });
    const meter = this.provider.getMeter(`${scope.name}/self`, scope.version);
    const out: Record<string, Recorder> = {};
    for (const [key, spec] of Object.entries(specs)) {
      const opts = { description: spec.description, unit: spec.unit, advice: spec.buckets ? { explicitBucketBoundaries: [...spec.buckets] } : undefined };
      const inst =
        spec.kind === 'counter' ? meter.createCounter(spec.name, opts)
        : spec.kind === 'updowncounter' ? meter.createUpDownCounter(spec.name, opts)
        : spec.kind === 'gauge' ? meter.createGauge(spec.name, opts)
        : meter.createHistogram(spec.name, opts);
      out[key] = {
        record: 'add' in inst ? (v, a) => inst.add(v, a as OtelAttributes) : (v, a) => inst.record(v, a as OtelAttributes),
      };
    }
    this.m = out as Recorders<T>;
  }

  /**
   * Starts every family at 0 (counters add 0, gauges set 0) so it is exposed before its first
   * event: families without labels once, families labelled only by `label.name` once per value.
   */
  zero(label: { readonly name: string; readonly values: readonly string[] }): void {
    for (const [key, spec] of Object.entries(this.specs)) {
      if (spec.kind === 'histogram') continue;
      const rec = this.m[key as keyof T];
      if (spec.attributes.length === 0) rec.record(0);
      else if (spec.attributes.length === 1 && spec.attributes[0] === label.name) for (const v of label.values) rec.record(0, { [label.name]: v });
    }
  }

  /** Rendered per request: the self-monitoring families are small. */
  async exposition(): Promise<Body> {
    const { resourceMetrics } = await this.exporter.collect();
    return { contentType: PROMETHEUS_CONTENT_TYPE, text: this.serializer.serialize(resourceMetrics as ResourceMetrics) };
  }

  async shutdown(): Promise<void> {
    await this.provider.shutdown();
  }
}
