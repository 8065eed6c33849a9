/**
 * Self-monitoring: the agent's own health on its own endpoint, with ordinary
 * SDK synchronous instruments (bounded cardinality) on a separate provider,
 * plus the process's runtime health (process-metrics.ts) read from Node's own
 * APIs. The provider has no OTLP reader: none of this is pushed.
 */
import fs from 'node:fs';
import { constants as perfConstants, PerformanceObserver, type PerformanceEntry } from 'node:perf_hooks';
import type { Meter, ObservableGauge, Attributes as OtelAttributes } from '@opentelemetry/api';
import { PrometheusExporter, PrometheusSerializer } from '@opentelemetry/exporter-prometheus';
import { MeterProvider, type ResourceMetrics } from '@opentelemetry/sdk-metrics';
import type { Body } from './http.js';
import { GuardCounts } from './http-guard.js';
import { HTTP_GUARD_METRICS } from './http-metrics.js';
import { PROMETHEUS_CONTENT_TYPE } from './pipeline.js';
import { LoopDelay } from './loop-delay.js';
import { PROCESS_METRICS } from './process-metrics.js';
import type { Scope } from './producer.js';
import { buildResource, type ResourceOptions } from './resource.js';
import type { Attributes, AttributesOf, MetricSpec } from './spec.js';

/** counter/updowncounter: adds; gauge: sets; histogram: observes. */
export interface Recorder<A extends Attributes = Attributes> {
  record(value: number, attributes?: A): void;
}

/** One recorder per family, taking that family's attribute keys only. */
export type Recorders<T extends Record<string, MetricSpec>> = { readonly [K in keyof T]: Recorder<AttributesOf<T[K]>> };

export class SelfMonitor<T extends Record<string, MetricSpec>> {
  readonly m: Recorders<T>;
  /** What the agent's endpoints refuse or cut, counted by them as it happens (http-guard.ts). */
  readonly httpCounts = new GuardCounts();
  private readonly provider: MeterProvider;
  private readonly exporter = new PrometheusExporter({ preventServerStart: true, withoutScopeInfo: true });
  private readonly serializer = new PrometheusSerializer(undefined, false, undefined, false, true);
  private readonly runtime: RuntimeObservers;

  constructor(
    resource: ResourceOptions,
    scope: Scope,
    private readonly specs: T,
  ) {
    this.provider = new MeterProvider({ resource: buildResource(resource), readers: [this.exporter] });
    const meter = this.provider.getMeter(`${scope.name}/self`, scope.version);
    this.m = recorders(meter, specs);
    this.runtime = observeRuntime(meter);
    observeHttpGuard(meter, this.httpCounts);
  }

  /**
   * Starts every family at 0 (counters add 0, gauges set 0) so it is exposed before its first
   * event, and a first increment shows in rate(): families without labels once, families whose
   * labels are all in `labels` once per combination of their values.
   */
  zero(labels: Readonly<Record<string, readonly string[]>>): void {
    for (const [key, spec] of Object.entries(this.specs)) {
      if (spec.kind === 'histogram' || !spec.attributes.every((a) => a in labels)) continue;
      const rec = this.m[key as keyof T] as Recorder;
      for (const attrs of combinations(spec.attributes, labels)) rec.record(0, attrs);
    }
  }

  /** Rendered per request: the self-monitoring families are small. */
  async exposition(): Promise<Body> {
    const { resourceMetrics } = await this.exporter.collect();
    return {
      contentType: PROMETHEUS_CONTENT_TYPE,
      text: this.serializer.serialize(resourceMetrics as ResourceMetrics),
    };
  }

  async shutdown(): Promise<void> {
    this.runtime.stop();
    await this.provider.shutdown();
  }
}

/** Every assignment of a value to each of `names` (one empty assignment when there are none). */
function combinations(names: readonly string[], values: Readonly<Record<string, readonly string[]>>): Attributes[] {
  let out: Attributes[] = [{}];
  for (const name of names) out = out.flatMap((a) => (values[name] ?? []).map((v) => ({ ...a, [name]: v })));
  return out;
}

function recorders<T extends Record<string, MetricSpec>>(meter: Meter, specs: T): Recorders<T> {
  const out: Record<string, Recorder> = {};
  for (const [key, spec] of Object.entries(specs)) {
    const opts = instrumentOptions(spec);
    const inst =
      spec.kind === 'counter'
        ? meter.createCounter(spec.name, opts)
        : spec.kind === 'updowncounter'
          ? meter.createUpDownCounter(spec.name, opts)
          : spec.kind === 'gauge'
            ? meter.createGauge(spec.name, opts)
            : meter.createHistogram(spec.name, opts);
    out[key] = {
      record:
        'add' in inst ? (v, a) => inst.add(v, a as OtelAttributes) : (v, a) => inst.record(v, a as OtelAttributes),
    };
  }
  return out as Recorders<T>;
}

function instrumentOptions(spec: MetricSpec) {
  return {
    description: spec.description,
    unit: spec.unit,
    advice: spec.buckets ? { explicitBucketBoundaries: [...spec.buckets] } : undefined,
  };
}

interface RuntimeObservers {
  stop(): void;
}

const GC_KINDS: Readonly<Record<number, string>> = {
  [perfConstants.NODE_PERFORMANCE_GC_MINOR]: 'minor',
  [perfConstants.NODE_PERFORMANCE_GC_MAJOR]: 'major',
  [perfConstants.NODE_PERFORMANCE_GC_INCREMENTAL]: 'incremental',
  [perfConstants.NODE_PERFORMANCE_GC_WEAKCB]: 'weakcb',
};

/**
 * The process families, observed when the endpoint is scraped: a handful of cheap reads of the
 * process's own state (memoryUsage, cpuUsage, its own fd directory). The event-loop delay covers
 * the time since the previous scrape (LoopDelay: a stall that ends just before a scrape counts in
 * it).
 */
function observeRuntime(meter: Meter): RuntimeObservers {
  const P = PROCESS_METRICS;
  const gauge = (s: MetricSpec): ObservableGauge => meter.createObservableGauge(s.name, instrumentOptions(s));
  const g = {
    rss: gauge(P.residentMemory),
    openFds: gauge(P.openFds),
    maxFds: gauge(P.maxFds),
    start: gauge(P.startTime),
    heapUsed: gauge(P.heapUsed),
    heapTotal: gauge(P.heapTotal),
    delayP99: gauge(P.eventLoopDelayP99),
    delayMax: gauge(P.eventLoopDelayMax),
  };
  const cpu = meter.createObservableCounter(P.cpuSeconds.name, instrumentOptions(P.cpuSeconds));
  const startSeconds = Date.now() / 1000 - process.uptime();
  const loop = new LoopDelay();
  meter.addBatchObservableCallback(
    (r) => {
      const mem = process.memoryUsage();
      const used = process.cpuUsage();
      r.observe(g.rss, mem.rss);
      r.observe(g.heapUsed, mem.heapUsed);
      r.observe(g.heapTotal, mem.heapTotal);
      r.observe(cpu, (used.user + used.system) / 1e6);
      r.observe(g.start, startSeconds);
      const fds = countOpenFds();
      if (fds !== undefined) r.observe(g.openFds, fds);
      const limit = maxOpenFiles();
      if (limit !== undefined) r.observe(g.maxFds, limit);
      const delay = loop.read();
      r.observe(g.delayP99, delay.p99Seconds);
      r.observe(g.delayMax, delay.maxSeconds);
    },
    [...Object.values(g), cpu],
  );
  const gc = meter.createHistogram(P.gcDuration.name, instrumentOptions(P.gcDuration));
  const observer = new PerformanceObserver((list) => {
    for (const e of list.getEntries()) {
      const kind = GC_KINDS[(e as PerformanceEntry & { detail?: { kind?: number } }).detail?.kind ?? -1] ?? 'other';
      gc.record(e.duration / 1000, { kind });
    }
  });
  observer.observe({ entryTypes: ['gc'] });
  return {
    stop() {
      observer.disconnect();
      loop.stop();
    },
  };
}

/**
 * What the endpoints refused or cut (http-guard.ts), read at each scrape from the agent's counts:
 * the endpoints count as it happens, from code that knows no meter.
 */
function observeHttpGuard(meter: Meter, counts: GuardCounts): void {
  const H = HTTP_GUARD_METRICS;
  const closed = meter.createObservableCounter(H.connectionsClosed.name, instrumentOptions(H.connectionsClosed));
  const throttled = meter.createObservableCounter(H.authThrottled.name, instrumentOptions(H.authThrottled));
  meter.addBatchObservableCallback(
    (r) => {
      for (const e of counts.entries())
        r.observe(e.family === 'connections' ? closed : throttled, e.value, {
          endpoint: e.endpoint,
          reason: e.reason,
        });
    },
    [closed, throttled],
  );
}

/**
 * Open descriptors of this process; undefined where /proc is missing (not Linux). Kernels from 6.2
 * give the count as the size of the fd directory: one stat, where listing it makes the kernel build
 * an entry for each descriptor (the node agent holds hundreds of counter files open, and the listing
 * was half of what a scrape of this endpoint cost). Older kernels say 0 there, and are listed.
 */
export function countOpenFds(): number | undefined {
  try {
    const size = fs.statSync('/proc/self/fd').size;
    if (size > 0) return size;
    // readdir itself holds one descriptor on the directory while it reads: not ours to report.
    return Math.max(0, fs.readdirSync('/proc/self/fd').length - 1);
  } catch {
    return undefined;
  }
}

/** The soft "Max open files" limit; undefined where /proc is missing or the limit is unlimited. */
function maxOpenFiles(): number | undefined {
  try {
    const m = /^Max open files\s+(\d+)/m.exec(fs.readFileSync('/proc/self/limits', 'utf8'));
    return m ? Number(m[1]) : undefined;
  } catch {
    return undefined;
  }
}
