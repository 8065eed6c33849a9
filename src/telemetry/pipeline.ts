/**
 * One export pipeline per agent: the snapshot producer and the agent's event
 * instruments feed a Prometheus rendering (made once per collection, served
 * from cache, gzipped once off the event loop) and, when configured, an
 * OTLP/HTTP push reader.
 *
 * The snapshot families (up to ~700k series on a 100k-job cluster) are written
 * straight to UTF-8 buffers in exactly the text PrometheusSerializer would
 * produce for them; only the event instruments, which live in the SDK, go
 * through the SDK's collect() and serializer.
 */
import { gzip } from 'node:zlib';
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
import type { Logger } from '../log.js';
import type { Body } from './http.js';
import { emptyResource } from '@opentelemetry/resources';
import { SnapshotProducer, toMetricData, type Scope } from './producer.js';
import { buildResource, type ResourceOptions } from './resource.js';
import type { Family, MetricEvent, MetricSpec, Point } from './spec.js';

/** Series per event instrument before the SDK folds the rest into an overflow series. */
const EVENT_CARDINALITY_LIMIT = 1_000_000;

export type OtlpProtocol = 'http/json' | 'http/protobuf';

export interface OtlpOptions {
  /** Full URL of the metrics endpoint, e.g. http://127.0.0.1:4318/v1/metrics. */
  readonly url: string;
  readonly protocol: OtlpProtocol;
  readonly intervalMs: number;
  readonly timeoutMs: number;
  /** Extra headers; the SDK also honours OTEL_EXPORTER_OTLP_HEADERS itself. */
  readonly headers?: Readonly<Record<string, string>>;
}

export interface PipelineOptions {
  readonly resource: ResourceOptions;
  readonly scope: Scope;
  readonly otlp?: OtlpOptions;
  readonly logger: Logger;
  /** Families fed by events (SDK synchronous instruments) rather than by the snapshot producer. */
  readonly eventSpecs?: readonly (MetricSpec & { kind: 'counter' | 'histogram' })[];
  /** Called after every OTLP export attempt: for the self-monitoring counters. */
  readonly onExport?: (ok: boolean) => void;
}

export const PROMETHEUS_CONTENT_TYPE = 'text/plain; version=0.0.4; charset=utf-8';

/** Renderings at least this large are gzipped in the background as soon as they are made. */
const EAGER_GZIP_BYTES = 64 * 1024;

export class Pipeline {
  readonly producer: SnapshotProducer;
  private readonly provider: MeterProvider;
  private readonly instruments = new Map<string, Counter | Histogram>();
  private readonly prometheus: PrometheusExporter;
  private readonly serializer = new PrometheusSerializer(undefined, false, undefined, false, true);
  /** For snapshot histograms: the same settings, without target_info. */
  private readonly familySerializer = new PrometheusSerializer(undefined, false, undefined, true, true);
  private rendered: Body = { contentType: PROMETHEUS_CONTENT_TYPE, text: '', status: 503 };

  constructor(private readonly opts: PipelineOptions) {
    // Only the OTLP reader collects from the producer; Prometheus renders the families itself.
    this.producer = new SnapshotProducer(opts.scope, { retain: opts.otlp !== undefined });
    this.prometheus = new PrometheusExporter({ preventServerStart: true, withoutScopeInfo: true });
    const readers: MetricReader[] = [this.prometheus];
    if (opts.otlp) readers.push(this.pushReader(opts.otlp));
    const events = opts.eventSpecs ?? [];
    // Events are keyed by node or job: lift the SDK's default cap of 2000 series per instrument.
    const views: ViewOptions[] = events.map((spec) => ({
      instrumentName: spec.name,
      aggregationCardinalityLimit: EVENT_CARDINALITY_LIMIT,
      ...(spec.kind === 'histogram'
        ? { aggregation: { type: AggregationType.EXPLICIT_BUCKET_HISTOGRAM as const, options: { boundaries: [...(spec.buckets ?? [])] } } }
        : {}),
    }));
    this.provider = new MeterProvider({ resource: buildResource(opts.resource), readers, views });
    const meter = this.provider.getMeter(opts.scope.name, opts.scope.version);
    for (const spec of events) {
      const o = { description: spec.description, unit: spec.unit };
      this.instruments.set(spec.name, spec.kind === 'counter' ? meter.createCounter(spec.name, o) : meter.createHistogram(spec.name, o));
    }
    routeSdkDiagnostics(opts.logger);
  }

  /** Records events into their instruments; an event of an undeclared family is a programming error. */
  record(events: readonly MetricEvent[]): void {
    for (const e of events) {
      const inst = this.instruments.get(e.spec.name);
      if (!inst) throw new Error(`event family ${e.spec.name} was not declared in eventSpecs`);
      if ('add' in inst) inst.add(e.value, e.attributes);
      else inst.record(e.value, e.attributes);
    }
  }

  /** Publishes one collection and renders its exposition once, for every scrape until the next. */
  async publish(families: readonly Family[], atMs: number = Date.now()): Promise<void> {
    this.producer.publish(families, atMs);
    const body = chunksBody(PROMETHEUS_CONTENT_TYPE, await this.render(families, atMs));
    if (body.size >= EAGER_GZIP_BYTES) gzipInBackground(body);
    this.rendered = body;
  }

  /** The exposition of the last publish (503 until the first). */
  get exposition(): Body {
    return this.rendered;
  }

  /**
   * target_info and the event instruments (serialized by the SDK), then the snapshot families:
   * the order and the bytes PrometheusSerializer gives when the producer is one of its sources.
   */
  private async render(families: readonly Family[], atMs: number): Promise<Buffer[]> {
    const { resourceMetrics, errors } = await this.prometheus.collect();
    for (const err of errors) this.opts.logger.warn({ err }, 'metric collection reported an error');
    let head = this.serializer.serialize(resourceMetrics as ResourceMetrics);
    // The serializer ends with this line when the SDK had nothing; the snapshot may have something.
    const sdkEmpty = head.endsWith(NO_REGISTERED_METRICS);
    if (sdkEmpty) head = head.slice(0, -NO_REGISTERED_METRICS.length);
    const out = new ChunkWriter();
    out.write(head);
    const wrote = writeFamilies(out, families, (fam) =>
      this.familySerializer.serialize({ resource: emptyResource(), scopeMetrics: [{ scope: this.opts.scope, metrics: toMetricData([fam], atMs, atMs) }] }),
    );
    if (sdkEmpty && !wrote) out.write(NO_REGISTERED_METRICS);
    return out.finish();
  }

  /** Pushes the latest snapshot now (OTLP only); used on shutdown and by tests. */
  async flush(): Promise<void> {
    await this.provider.forceFlush();
  }

  async shutdown(): Promise<void> {
    await this.provider.shutdown();
  }

  private pushReader(otlp: OtlpOptions): MetricReader {
    const config = {
      url: otlp.url,
      headers: { ...otlp.headers },
      timeoutMillis: otlp.timeoutMs,
      temporalityPreference: AggregationTemporality.CUMULATIVE,
    };
    const inner = otlp.protocol === 'http/protobuf' ? new OtlpProtoExporter(config) : new OtlpJsonExporter(config);
    return new PeriodicExportingMetricReader({
      exporter: observed(inner, this.opts.logger, otlp.url, this.opts.onExport),
      exportIntervalMillis: otlp.intervalMs,
      exportTimeoutMillis: Math.min(otlp.timeoutMs, otlp.intervalMs),
      metricProducers: [this.producer],
    });
  }
}

// ---- Prometheus text for snapshot families -------------------------------------------------------

const NO_REGISTERED_METRICS = '# no registered metrics';

/** Collects UTF-8 text in large buffers: a 75 MB exposition is never one string nor copied whole. */
class ChunkWriter {
  private readonly chunks: Buffer[] = [];
  private buf: Buffer;
  private pos = 0;

  constructor(private readonly chunkBytes = 4 * 1024 * 1024) {
    this.buf = Buffer.allocUnsafe(chunkBytes);
  }

  write(s: string): void {
    // A UTF-16 code unit takes at most 3 bytes in UTF-8.
    if (this.buf.length - this.pos < s.length * 3) {
      this.flush();
      if (s.length * 3 > this.chunkBytes) {
        this.chunks.push(Buffer.from(s, 'utf8'));
        return;
      }
      this.buf = Buffer.allocUnsafe(this.chunkBytes);
    }
    this.pos += this.buf.write(s, this.pos);
  }

  finish(): Buffer[] {
    this.flush();
    return this.chunks;
  }

  private flush(): void {
    if (this.pos > 0) this.chunks.push(this.buf.subarray(0, this.pos));
    this.buf = this.buf.subarray(this.pos);
    this.pos = 0;
  }
}

/** A body whose text is held as UTF-8 chunks; `text` decodes them on demand (tests, --once). */
function chunksBody(contentType: string, chunks: readonly Buffer[]): Body & { readonly size: number } {
  const size = chunks.reduce((n, c) => n + c.length, 0);
  return {
    contentType,
    chunks,
    size,
    get text(): string {
      return Buffer.concat(chunks as Buffer[], size).toString('utf8');
    },
  };
}

/** Compresses a body on the libuv thread pool; a scrape arriving meanwhile waits for it. */
function gzipInBackground(body: Body & { readonly size: number }): void {
  const chunks = body.chunks ?? [];
  const whole = chunks.length === 1 ? (chunks[0] as Buffer) : Buffer.concat(chunks as Buffer[], body.size);
  body.gzipping = new Promise<Buffer | undefined>((resolve) => {
    gzip(whole, { level: 1 }, (err, out) => {
      if (!err) body.gzip = out;
      body.gzipping = undefined;
      resolve(err ? undefined : out);
    });
  });
}

const INVALID_NAME_CHARS = /[^a-z0-9_]/gi;
const REPEATED_UNDERSCORES = /_{2,}/g;
const NEEDS_ESCAPE = /[\\\n"]/;

/** PrometheusSerializer's name sanitizing. */
function sanitizeName(name: string): string {
  return name.replace(INVALID_NAME_CHARS, '_').replace(REPEATED_UNDERSCORES, '_');
}

function escapeText(s: string): string {
  return s.replace(/\\/g, '\\\\').replace(/\n/g, '\\n');
}

/** PrometheusSerializer's label value escaping (non-strings as JSON, undefined as empty). */
function labelValue(v: unknown): string {
  if (typeof v === 'string') return NEEDS_ESCAPE.test(v) ? escapeText(v).replace(/"/g, '\\"') : v;
  if (v === undefined) return '';
  return escapeText(JSON.stringify(v)).replace(/"/g, '\\"');
}

function valueText(value: number): string {
  return value === Infinity ? '+Inf' : value === -Infinity ? '-Inf' : `${value}`;
}

interface FamilyHeader {
  readonly name: string;
  readonly text: string;
}

const headers = new WeakMap<MetricSpec, FamilyHeader | null>();

/** Name and HELP/UNIT/TYPE lines of a counter, gauge or up-down counter family; null when unnameable. */
function familyHeader(spec: MetricSpec): FamilyHeader | null {
  let h = headers.get(spec);
  if (h !== undefined) return h;
  let name = sanitizeName(escapeText(spec.name));
  if (name === '' || name === '_') {
    diag.error(`Normalization for metric "${spec.name}" resulted in an invalid name: "${name}"`);
    h = null;
  } else {
    if (name[0] !== undefined && name[0] >= '0' && name[0] <= '9') name = `_${name}`;
    if (spec.kind === 'counter' && !name.endsWith('_total')) name += '_total';
    const type = spec.kind === 'counter' ? 'counter' : 'gauge';
    const unit = spec.unit ? `\n# UNIT ${name} ${escapeText(spec.unit)}` : '';
    h = { name, text: `# HELP ${name} ${escapeText(spec.description || 'description missing')}${unit}\n# TYPE ${name} ${type}\n` };
  }
  headers.set(spec, h);
  return h;
}

/**
 * Writes the families as PrometheusSerializer does (no timestamps, no scope labels, attributes
 * in their objects' key order); histograms go through `histogram`. Returns whether any was written.
 */
function writeFamilies(out: ChunkWriter, families: readonly Family[], histogram: (fam: Family) => string): boolean {
  const labelPrefixes = new Map<string, string>();
  let wrote = false;
  for (const fam of families) {
    if (fam.points.length === 0) continue;
    if (fam.spec.kind === 'histogram') {
      out.write(histogram(fam));
      wrote = true;
      continue;
    }
    const header = familyHeader(fam.spec);
    if (header === null) continue;
    out.write(header.text);
    wrote = true;
    const name = header.name;
    for (const p of fam.points as readonly Point[]) {
      let line = name;
      let sep = '{';
      const attributes = p.attributes;
      for (const key in attributes) {
        let prefix = labelPrefixes.get(key);
        if (prefix === undefined) {
          prefix = `${sanitizeName(key)}="`;
          labelPrefixes.set(key, prefix);
        }
        line += sep + prefix + labelValue(attributes[key]) + '"';
        sep = ',';
      }
      out.write(`${sep === ',' ? line + '}' : line} ${valueText(Number(p.value))}\n`);
    }
  }
  return wrote;
}

/** Wraps an exporter so that every failed push is logged and counted, never fatal. */
function observed(inner: PushMetricExporter, logger: Logger, url: string, onExport?: (ok: boolean) => void): PushMetricExporter {
  return {
    export(metrics, done) {
      inner.export(metrics, (result: ExportResult) => {
        const ok = result.code === ExportResultCode.SUCCESS;
        onExport?.(ok);
        if (!ok) logger.warn({ url, err: result.error?.message }, 'OTLP export failed');
        done(result);
      });
    },
    forceFlush: () => inner.forceFlush(),
    shutdown: () => inner.shutdown(),
    selectAggregationTemporality: inner.selectAggregationTemporality?.bind(inner),
    selectAggregation: inner.selectAggregation?.bind(inner),
  };
}

let diagRouted = false;
/** The SDK reports failures through `diag`; without a logger they vanish (REFERENCE §4). */
function routeSdkDiagnostics(logger: Logger): void {
  if (diagRouted) return;
  diagRouted = true;
  diag.setLogger(
    {
      error: (msg, ...args) => logger.error({ args }, `otel: ${msg}`),
      warn: (msg, ...args) => logger.warn({ args }, `otel: ${msg}`),
      info: () => undefined,
      debug: () => undefined,
      verbose: () => undefined,
    },
    DiagLogLevel.WARN,
  );
}
