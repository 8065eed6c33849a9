/**
 * One export pipeline per agent: the snapshot producer and the agent's event
 * instruments feed a Prometheus rendering (made once per collection, served
 * from cache) and, when configured, an OTLP/HTTP push reader.
 *
 * The snapshot families (~700k series on a 100k-job cluster, a 77 MB
 * exposition) are written in exactly the text PrometheusSerializer would
 * produce for them, but straight into a gzip stream compressing on the libuv
 * thread pool while the rendering goes on: the exposition is held compressed
 * only (6 MB instead of 77), and inflated on the fly for the rare scraper that
 * does not accept gzip. Only the event instruments, which live in the SDK, go
 * through the SDK's collect() and serializer.
 */
import { diag, DiagLogLevel, type Counter, type Histogram } from '@opentelemetry/api';
import { ExportResultCode, type ExportResult } from '@opentelemetry/core';
import { OTLPMetricExporter as OtlpJsonExporter } from '@opentelemetry/exporter-metrics-otlp-http';
import { OTLPMetricExporter as OtlpProtoExporter } from '@opentelemetry/exporter-metrics-otlp-proto';
import { PrometheusExporter, PrometheusSerializer } from '@opentelemetry/exporter-prometheus';
import {
  AggregationTemporality,
  AggregationType,
  MeterProvider,
  PeriodicExportingMetricReader,
  type MetricReader,
  type PushMetricExporter,
  type ResourceMetrics,
  type ViewOptions,
} from '@opentelemetry/sdk-metrics';
import { emptyResource } from '@opentelemetry/resources';
import { redactUrl, type Logger } from '../log.js';
import { bearerTokenFile } from './bearer-file.js';
import { RateLimitedFailures } from './failure-log.js';
import type { Body } from './http.js';
import { SnapshotProducer, toMetricData, type Scope } from './producer.js';
import { notePartialSuccess, PARTIAL_SUCCESS_DIAG_RE } from './partial-success.js';
import { SplitExporter, type PushResult } from './split-push.js';
import { GzipWriter, gzipOnlyBody, NO_REGISTERED_METRICS, writeFamilies } from './prometheus-text.js';
import { buildResource, type ResourceOptions } from './resource.js';
import type { AnyFamily, MetricEvent, MetricSpec } from './spec.js';

/** Series per event instrument before the SDK folds the rest into an overflow series. */
const EVENT_CARDINALITY_LIMIT = 1_000_000;

export type OtlpProtocol = 'http/json' | 'http/protobuf';

/**
 * The bytes one OTLP request may hold, estimated from above (strings at 3 bytes per UTF-16 unit):
 * under the Collector's default max_request_body_size (20 MiB) whatever the text, about 5 MiB of
 * protobuf for ASCII labels. A node agent's push fits in one; a large cluster's is cut.
 */
export const OTLP_MAX_REQUEST_BYTES = 16 * 1024 * 1024;

export interface OtlpOptions {
  /** Full URL of the metrics endpoint, e.g. http://127.0.0.1:4318/v1/metrics. */
  readonly url: string;
  readonly protocol: OtlpProtocol;
  readonly intervalMs: number;
  readonly timeoutMs: number;
  /** Extra headers; the SDK also honours OTEL_EXPORTER_OTLP_HEADERS itself. */
  readonly headers?: Readonly<Record<string, string>>;
  /** A file holding the bearer token sent on every push (read again when it changes). */
  readonly bearerTokenFile?: string;
  /** Each push goes as requests of at most this many bytes (estimated from above); default OTLP_MAX_REQUEST_BYTES. */
  readonly maxRequestBytes?: number;
}

export interface PipelineOptions {
  readonly resource: ResourceOptions;
  readonly scope: Scope;
  readonly otlp?: OtlpOptions;
  readonly logger: Logger;
  /** Families fed by events (SDK synchronous instruments) rather than by the snapshot producer. */
  readonly eventSpecs?: readonly (MetricSpec & { kind: 'counter' | 'histogram' })[];
  /** The clock of the rate limit on export failure lines (tests); Date.now by default. */
  readonly now?: () => number;
  /** Called after every OTLP export attempt: for the self-monitoring counters. */
  readonly onExport?: (outcome: PushOutcome) => void;
  /** A second instrumentation scope for OTLP: families that must not share the main scope's names. */
  readonly otlpSideScope?: Scope;
  /**
   * OTLP names of the families the operator turned off (`--disable-metrics`): dropped here, on the
   * way out, so that none reaches the exposition, a section or a push. A lazy family dropped here
   * is never made.
   */
  readonly disabled?: ReadonlySet<string>;
}

/** What one publish carries beyond the main exposition. */
export interface PublishExtras {
  /** Expositions of their own, by HTTP path (no target_info, no event families). */
  readonly sections?: ReadonlyMap<string, readonly AnyFamily[]>;
  /** Pushed over OTLP under `otlpSideScope` only (never on a Prometheus endpoint). */
  readonly otlpSide?: readonly AnyFamily[];
}

/**
 * How one push ended: `success`, every point taken; `failure`, not delivered (refused, unreachable,
 * timed out); `rejected`, answered but with points refused (OTLP partial success), counted in
 * `rejectedPoints`.
 */
export interface PushOutcome {
  readonly result: 'success' | 'failure' | 'rejected';
  readonly rejectedPoints: number;
}

/** The results a push is counted under, for self-monitoring families keyed by result. */
export const PUSH_RESULTS: readonly PushOutcome['result'][] = ['success', 'failure', 'rejected'];

/** The interval of the rate-limited lines about failed and partly refused pushes. */
const PUSH_LOG_INTERVAL_MS = 60_000;

export const PROMETHEUS_CONTENT_TYPE = 'text/plain; version=0.0.4; charset=utf-8';

export class Pipeline {
  readonly producer: SnapshotProducer;
  private readonly sideProducer: SnapshotProducer | undefined;
  private sectionBodies: ReadonlyMap<string, Body> = new Map();
  private readonly provider: MeterProvider;
  private readonly instruments = new Map<string, Counter | Histogram>();
  private readonly prometheus: PrometheusExporter;
  private readonly serializer = new PrometheusSerializer(undefined, false, undefined, false, true);
  /** For snapshot histograms: the same settings, without target_info. */
  private readonly familySerializer = new PrometheusSerializer(undefined, false, undefined, true, true);
  private rendered: Body = { contentType: PROMETHEUS_CONTENT_TYPE, text: '', status: 503 };
  private publishes = 0;
  private otlp: ObservedExporter | undefined;
  private renderedSeq = 0;
  private readonly disabled: ReadonlySet<string>;

  constructor(private readonly opts: PipelineOptions) {
    this.disabled = opts.disabled ?? new Set();
    // Only the OTLP reader collects from the producer; Prometheus renders the families itself.
    this.producer = new SnapshotProducer(opts.scope, { retain: opts.otlp !== undefined });
    this.sideProducer = opts.otlp && opts.otlpSideScope ? new SnapshotProducer(opts.otlpSideScope) : undefined;
    this.prometheus = new PrometheusExporter({ preventServerStart: true, withoutScopeInfo: true });
    const readers: MetricReader[] = [this.prometheus];
    if (opts.otlp) readers.push(this.pushReader(opts.otlp));
    // A disabled event family gets no instrument, so nothing of it is collected or rendered.
    const events = (opts.eventSpecs ?? []).filter((spec) => !this.disabled.has(spec.name));
    // Events are keyed by node or job: lift the SDK's default cap of 2000 series per instrument.
    const views: ViewOptions[] = events.map((spec) => ({
      instrumentName: spec.name,
      aggregationCardinalityLimit: EVENT_CARDINALITY_LIMIT,
      ...(spec.kind === 'histogram'
        ? {
            aggregation: {
              type: AggregationType.EXPLICIT_BUCKET_HISTOGRAM as const,
              options: { boundaries: [...(spec.buckets ?? [])] },
            },
          }
        : {}),
    }));
    this.provider = new MeterProvider({ resource: buildResource(opts.resource), readers, views });
    const meter = this.provider.getMeter(opts.scope.name, opts.scope.version);
    for (const spec of events) {
      const o = { description: spec.description, unit: spec.unit };
      this.instruments.set(
        spec.name,
        spec.kind === 'counter' ? meter.createCounter(spec.name, o) : meter.createHistogram(spec.name, o),
      );
    }
    routeSdkDiagnostics(opts.logger);
  }

  /**
   * Records events into their instruments; events of a disabled family are dropped, one of an
   * undeclared family is a programming error.
   */
  record(events: readonly MetricEvent[]): void {
    for (const e of events) {
      const inst = this.instruments.get(e.spec.name);
      if (!inst && this.disabled.has(e.spec.name)) continue;
      if (!inst) throw new Error(`event family ${e.spec.name} was not declared in eventSpecs`);
      if ('add' in inst) inst.add(e.value, e.attributes);
      else inst.record(e.value, e.attributes);
    }
  }

  /** Publishes one collection and renders its exposition once, for every scrape until the next. */
  async publish(all: readonly AnyFamily[], atMs: number = Date.now(), extras: PublishExtras = {}): Promise<void> {
    const families = this.enabled(all);
    this.producer.publish(families, atMs);
    this.sideProducer?.publish(this.enabled(extras.otlpSide ?? []), atMs);
    const seq = ++this.publishes;
    const { gzip, bytes } = await this.render(families, atMs);
    const sections = new Map<string, Body>();
    for (const [path, fams] of extras.sections ?? []) {
      const r = await this.renderSection(this.enabled(fams), atMs);
      sections.set(path, gzipOnlyBody(PROMETHEUS_CONTENT_TYPE, r.gzip, r.bytes));
    }
    // Renderings yield to the event loop: one that started earlier must not replace a later one.
    if (seq < this.renderedSeq) return;
    this.renderedSeq = seq;
    this.rendered = gzipOnlyBody(PROMETHEUS_CONTENT_TYPE, gzip, bytes);
    this.sectionBodies = sections;
  }

  /** The families not disabled. */
  private enabled(families: readonly AnyFamily[]): readonly AnyFamily[] {
    return this.disabled.size === 0 ? families : families.filter((f) => !this.disabled.has(f.spec.name));
  }

  /** The exposition of the last publish (503 until the first). */
  get exposition(): Body {
    return this.rendered;
  }

  /** The exposition of one section of the last publish (503 until the first publish that had it). */
  section(path: string): Body {
    return this.sectionBodies.get(path) ?? { contentType: PROMETHEUS_CONTENT_TYPE, text: '', status: 503 };
  }

  /** A section's families alone, as the main exposition writes them. */
  private async renderSection(families: readonly AnyFamily[], atMs: number): Promise<{ gzip: Buffer; bytes: number }> {
    const out = new GzipWriter();
    await writeFamilies(out, families, (fam) =>
      this.familySerializer.serialize({
        resource: emptyResource(),
        scopeMetrics: [{ scope: this.opts.scope, metrics: toMetricData([fam], atMs, atMs) }],
      }),
    );
    return out.finish();
  }

  /**
   * target_info and the event instruments (serialized by the SDK), then the snapshot families:
   * the order and the bytes PrometheusSerializer gives when the producer is one of its sources.
   */
  private async render(families: readonly AnyFamily[], atMs: number): Promise<{ gzip: Buffer; bytes: number }> {
    const { resourceMetrics, errors } = await this.prometheus.collect();
    for (const err of errors) this.opts.logger.warn({ err }, 'metric collection reported an error');
    let head = this.serializer.serialize(resourceMetrics as ResourceMetrics);
    // The serializer ends with this line when the SDK had nothing; the snapshot may have something.
    const sdkEmpty = head.endsWith(NO_REGISTERED_METRICS);
    if (sdkEmpty) head = head.slice(0, -NO_REGISTERED_METRICS.length);
    const out = new GzipWriter();
    out.write(head);
    const series = await writeFamilies(out, families, (fam) =>
      this.familySerializer.serialize({
        resource: emptyResource(),
        scopeMetrics: [{ scope: this.opts.scope, metrics: toMetricData([fam], atMs, atMs) }],
      }),
    );
    this.producer.counted(series);
    if (sdkEmpty && series === 0) out.write(NO_REGISTERED_METRICS);
    return out.finish();
  }

  /** Pushes the latest snapshot now (OTLP only); used on shutdown and by tests. */
  async flush(): Promise<void> {
    await this.provider.forceFlush();
  }

  /**
   * The push at stop: pushes in flight are cut (logged), then one last push of the latest
   * snapshot has `withinMs` to be answered (cut and logged after that); nothing is pushed after.
   */
  async finalPush(withinMs: number): Promise<void> {
    const otlp = this.otlp;
    if (otlp === undefined) return;
    const cut = otlp.cutInFlight();
    if (cut > 0)
      this.opts.logger.warn({ url: redactUrl(this.opts.otlp?.url ?? '') }, 'OTLP push in flight cut short by the stop');
    otlp.bound(Date.now() + withinMs);
    // The margin lets the exporter's own deadline fire first, so the cut is logged where it happens.
    await within(this.provider.forceFlush(), withinMs + 250);
    otlp.close();
  }

  /** Closes the SDK's readers; bounded, since nothing is worth waiting for at this point. */
  async shutdown(withinMs = 1_000): Promise<void> {
    this.otlp?.close();
    await within(this.provider.shutdown(), withinMs);
  }

  private pushReader(otlp: OtlpOptions): MetricReader {
    const config = {
      url: otlp.url,
      headers: otlp.bearerTokenFile ? bearerTokenFile(otlp.bearerTokenFile, otlp.headers) : { ...otlp.headers },
      timeoutMillis: otlp.timeoutMs,
      temporalityPreference: AggregationTemporality.CUMULATIVE,
    };
    const sdk = otlp.protocol === 'http/protobuf' ? new OtlpProtoExporter(config) : new OtlpJsonExporter(config);
    const inner = new SplitExporter(sdk, otlp.maxRequestBytes ?? OTLP_MAX_REQUEST_BYTES);
    const limited = (msg: string): RateLimitedFailures =>
      new RateLimitedFailures(this.opts.logger, msg, PUSH_LOG_INTERVAL_MS, this.opts.now);
    this.otlp = new ObservedExporter(
      inner,
      this.opts.logger,
      {
        failures: limited('OTLP export failed'),
        rejections: limited('OTLP push partly refused by the receiver'),
        warnings: limited('OTLP receiver warned about a push'),
      },
      otlp.url,
      this.opts.onExport,
    );
    return new PeriodicExportingMetricReader({
      exporter: this.otlp,
      exportIntervalMillis: otlp.intervalMs,
      exportTimeoutMillis: Math.min(otlp.timeoutMs, otlp.intervalMs),
      metricProducers: this.sideProducer ? [this.producer, this.sideProducer] : [this.producer],
    });
  }
}

/**
 * What a push cut short by a stop reports to the SDK: not a failure, which the SDK would log again
 * with a stack trace; the cut itself is logged here, once.
 */
const CUT: ExportResult = { code: ExportResultCode.SUCCESS };

/** The rate-limited lines of ObservedExporter: failed pushes, pushes partly refused, receivers' warnings. */
interface PushLogs {
  readonly failures: RateLimitedFailures;
  readonly rejections: RateLimitedFailures;
  readonly warnings: RateLimitedFailures;
}

/**
 * Wraps the OTLP exporter so that every failed or partly refused push is counted and logged (one
 * line per interval, with how many were not logged), never fatal; and so that a stop is bounded:
 * pushes in flight can be cut (the SDK waits for them otherwise, retries included), the last push
 * gets a deadline, and once closed nothing more is sent.
 */
class ObservedExporter implements PushMetricExporter {
  private readonly pending = new Set<(r: ExportResult) => void>();
  private deadlineAtMs: number | undefined;
  private closed = false;
  readonly selectAggregationTemporality: PushMetricExporter['selectAggregationTemporality'];
  readonly selectAggregation: PushMetricExporter['selectAggregation'];

  constructor(
    private readonly inner: PushMetricExporter,
    private readonly logger: Logger,
    private readonly logs: PushLogs,
    private readonly url: string,
    private readonly onExport?: (outcome: PushOutcome) => void,
  ) {
    this.selectAggregationTemporality = inner.selectAggregationTemporality?.bind(inner);
    this.selectAggregation = inner.selectAggregation?.bind(inner);
  }

  export(metrics: ResourceMetrics, done: (r: ExportResult) => void): void {
    // The SDK's own shutdown pushes once more: the final push has been made (or cut) by then.
    if (this.closed) return done({ code: ExportResultCode.SUCCESS });
    let finished = false;
    const finish = (r: ExportResult): void => {
      if (finished) return;
      finished = true;
      clearTimeout(timer);
      this.pending.delete(finish);
      done(r);
    };
    this.pending.add(finish);
    const timer = this.deadlineAtMs === undefined ? undefined : setTimeout(() => this.cut(finish), this.left());
    this.inner.export(metrics, (result: PushResult) => {
      if (finished) return;
      this.report(result);
      finish(result);
    });
  }

  /** Counts and logs one push's outcome: refused points count even when a later request failed. */
  private report(result: PushResult): void {
    const url = redactUrl(this.url);
    const ok = result.code === ExportResultCode.SUCCESS;
    const rejected = result.rejected?.points ?? 0;
    this.onExport?.({ result: !ok ? 'failure' : rejected > 0 ? 'rejected' : 'success', rejectedPoints: rejected });
    if (ok) this.logs.failures.succeeded({ url });
    else this.logs.failures.failed({ url, err: result.error?.message });
    const reason = result.rejected?.message;
    if (rejected > 0) this.logs.rejections.failed({ url, rejectedPoints: rejected, err: reason });
    else if (ok) this.logs.rejections.succeeded({ url });
    if (rejected === 0 && reason) this.logs.warnings.failed({ url, err: reason });
  }

  /** Ends the pushes in flight now; gives how many there were. */
  cutInFlight(): number {
    const n = this.pending.size;
    for (const finish of [...this.pending]) finish(CUT);
    return n;
  }

  /** Pushes from now on are cut at `atMs`. */
  bound(atMs: number): void {
    this.deadlineAtMs = atMs;
  }

  close(): void {
    this.closed = true;
    this.cutInFlight();
  }

  /** The inner exporter waits for every push it has started, retries included: at a stop, not past the deadline. */
  async forceFlush(): Promise<void> {
    if (this.deadlineAtMs === undefined) return this.inner.forceFlush();
    await within(this.inner.forceFlush(), this.left());
  }

  /** At a stop the inner exporter's own flush is not waited for (the pushes it holds were cut). */
  async shutdown(): Promise<void> {
    if (this.deadlineAtMs === undefined) return this.inner.shutdown();
    void this.inner.shutdown().catch(() => undefined);
  }

  private left(): number {
    return Math.max(0, (this.deadlineAtMs ?? Date.now()) - Date.now());
  }

  private cut(finish: (r: ExportResult) => void): void {
    this.logger.warn({ url: redactUrl(this.url) }, 'final OTLP push cut short: no answer before the stop deadline');
    this.onExport?.({ result: 'failure', rejectedPoints: 0 });
    finish(CUT);
  }
}

/** Whether `p` settled within `ms` (its rejection counts as settled); the timer never outlives it. */
export async function within(p: Promise<unknown>, ms: number): Promise<boolean> {
  let timer: NodeJS.Timeout | undefined;
  const late = new Promise<false>((resolve) => (timer = setTimeout(() => resolve(false), ms)));
  try {
    return await Promise.race([
      p.then(
        () => true,
        () => true,
      ),
      late,
    ]);
  } finally {
    clearTimeout(timer);
  }
}

/** The reader's own report of a failed push, already logged (once, rate-limited) by ObservedExporter. */
const EXPORT_FAILED_RE = /PeriodicExportingMetricReader: metrics export (failed|timed out)/;

/** An SDK diagnostic without stack traces: an error or a stringified exception becomes its message. */
function compact(v: unknown): unknown {
  if (v instanceof Error) return v.message;
  if (typeof v !== 'string' || !v.startsWith('{')) return v;
  try {
    const parsed = JSON.parse(v) as { message?: unknown };
    return typeof parsed.message === 'string' ? parsed.message : v;
  } catch {
    return v;
  }
}

let diagRouted = false;
/**
 * The SDK reports failures through `diag`: a failed export is retried, then dropped silently unless
 * a diag logger is set.
 */
function routeSdkDiagnostics(logger: Logger): void {
  if (diagRouted) return;
  diagRouted = true;
  diag.setLogger(
    {
      error: (msg, ...args) => {
        if (!EXPORT_FAILED_RE.test(msg)) logger.error({ args: args.map(compact) }, `otel: ${compact(msg)}`);
      },
      warn: (msg, ...args) => {
        // Counted and logged (rate-limited) by the push that got the answer, not once per answer here.
        if (PARTIAL_SUCCESS_DIAG_RE.test(msg)) notePartialSuccess(args[0]);
        else logger.warn({ args: args.map(compact) }, `otel: ${compact(msg)}`);
      },
      info: () => undefined,
      debug: () => undefined,
      verbose: () => undefined,
    },
    DiagLogLevel.WARN,
  );
}
