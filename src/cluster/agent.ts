/**
 * The cluster agent: a collection loop on its own timer (never on the scrape
 * path), transitions turned into events, the snapshot into families, both
 * published through the shared telemetry pipeline.
 */
import type { Logger } from '../log.js';
import { htmlBody, type BindAddress, type Body } from '../telemetry/http.js';
import { Pipeline, type OtlpOptions } from '../telemetry/pipeline.js';
import type { ResourceOptions } from '../telemetry/resource.js';
import { closeTelemetry, collectOnce, startAgent, type Collecting, type RunningAgent } from '../telemetry/runtime.js';
import { SelfMonitor } from '../telemetry/selfmon.js';
import type { WebConfig } from '../telemetry/webconfig.js';
import { CollectionLoop, summarize, type TickResult, type TickSummary } from './collect.js';
import { makeFetchers, type FetcherOptions } from './fetchers.js';
import { renderClusterLanding } from './landing.js';
import { CLUSTER_EVENT_SPECS, CLUSTER_SELF_METRICS } from './metrics.js';
import { observe, observeState } from './rules.js';
import { advance, INITIAL_CLUSTER_STATE, type ClusterState } from './state.js';

export const SCOPE = { name: 'slurm-otel/cluster', version: '0.1.0' };

export interface ClusterAgentOptions {
  /** Where data comes from: the slurmrestd client and the job source. */
  readonly source: Omit<FetcherOptions, 'logger' | 'onSkipped' | 'onApiErrors' | 'onFieldsLost'>;
  readonly collectionIntervalMs: number;
  readonly maxInflight: number;
  readonly metrics: BindAddress;
  readonly monitoring: BindAddress;
  readonly resource: ResourceOptions;
  readonly otlp?: OtlpOptions;
  readonly security?: WebConfig;
  readonly logger: Logger;
  /** Shown on the landing page: where the agent reads from (never a credential). */
  readonly serverLabel?: string;
  /** Called on shutdown (closes the client's connections). */
  readonly close?: () => void;
}

export interface ClusterAgent extends RunningAgent {
  readonly last: () => TickSummary | undefined;
  collectNow(): Promise<TickResult>;
}

export class ClusterRunner implements Collecting {
  readonly pipeline: Pipeline;
  readonly self: SelfMonitor<typeof CLUSTER_SELF_METRICS>;
  private readonly loop: CollectionLoop;
  private state: ClusterState = INITIAL_CLUSTER_STATE;
  private lastTick: TickSummary | undefined;

  constructor(private readonly opts: ClusterAgentOptions) {
    this.self = new SelfMonitor(opts.resource, SCOPE, CLUSTER_SELF_METRICS);
    this.pipeline = new Pipeline({ resource: opts.resource, scope: SCOPE, otlp: opts.otlp, logger: opts.logger, eventSpecs: CLUSTER_EVENT_SPECS });
    const m = this.self.m;
    this.loop = new CollectionLoop({
      fetchers: makeFetchers({
        ...opts.source,
        logger: opts.logger,
        onSkipped: (collector, n) => m.skippedItems.record(n, { collector }),
        onApiErrors: (collector, n) => m.apiErrors.record(n, { collector }),
        onFieldsLost: (collector, fields) => m.apiFieldsLost.record(fields.length, { collector }),
      }),
      maxInflight: opts.maxInflight,
      logger: opts.logger,
      hooks: {
        runFinished: (collector, ms, err) => {
          m.collectorDuration.record(ms / 1000, { collector });
          if (err !== undefined) m.collectorErrors.record(1, { collector });
        },
        skipped: (collector) => m.collectorSkipped.record(1, { collector }),
        stale: (collector) => m.collectorStaleResults.record(1, { collector }),
        inflight: (collector, n) => m.collectorInflight.record(n, { collector }),
      },
    });
  }

  get last(): TickSummary | undefined {
    return this.lastTick;
  }

  /** Rendered per request: it is small and reads only the last tick. */
  get landing(): Body {
    const meta = {
      clusterName: this.opts.source.clusterName ?? '',
      server: this.opts.serverLabel ?? '',
      version: this.opts.resource.serviceVersion,
      refreshSeconds: this.opts.collectionIntervalMs / 1000,
    };
    return htmlBody(renderClusterLanding(this.lastTick, meta), this.lastTick ? 200 : 503);
  }

  async collect(): Promise<TickResult> {
    const m = this.self.m;
    m.collectionAttempts.record(1);
    const tick = await this.loop.tick();
    const next = advance(this.state, tick.snapshot);
    this.state = next.state;
    this.pipeline.record(next.events);
    await this.pipeline.publish([...observe(tick.snapshot, tick.snapshot.atMs), ...observeState(this.state)], tick.snapshot.atMs);
    m.collectionDuration.record(tick.durationMs / 1000);
    if (tick.failed.length > 0) m.collectionFailures.record(1);
    m.metricsExported.record(this.pipeline.producer.size);
    this.lastTick = summarize(tick);
    return tick;
  }

  abort(): void {
    this.loop.abort();
  }

  lastAtMs(): number | undefined {
    return this.lastTick?.atMs;
  }

  selfExposition(): Promise<Body> {
    return this.self.exposition();
  }

  async shutdown(): Promise<void> {
    this.loop.abort();
    this.opts.close?.();
    await closeTelemetry(this.pipeline, this.self);
  }
}

export async function startClusterAgent(opts: ClusterAgentOptions): Promise<ClusterAgent> {
  const runner = new ClusterRunner(opts);
  const running = await startAgent(runner, {
    name: 'cluster agent',
    metrics: opts.metrics,
    monitoring: opts.monitoring,
    intervalMs: opts.collectionIntervalMs,
    security: opts.security,
    onRequest: (path) => {
      if (path === '/metrics') runner.self.m.metricsRequests.record(1);
    },
    routes: { '/': () => runner.landing },
    logger: opts.logger,
    otlpUrl: opts.otlp?.url,
  });
  return { ...running, last: () => runner.last, collectNow: () => runner.collect() };
}

/** `slurm-otel cluster --once`: one collection, rendered through the same pipeline. */
export async function runClusterOnce(opts: ClusterAgentOptions): Promise<{ text: string; failed: readonly string[] }> {
  const { text, result } = await collectOnce(new ClusterRunner({ ...opts, otlp: undefined }));
  return { text, failed: result.failed };
}
