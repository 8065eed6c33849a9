/**
 * The cluster agent: sub-collectors started on their own timer (never on the
 * scrape path), each result published as soon as it is stored, transitions
 * turned into events and the latest result of every sub-collector into
 * families, both through the shared telemetry pipeline.
 */
import { htmlBody, type Body } from '../telemetry/http.js';
import { Pipeline } from '../telemetry/pipeline.js';
import {
  closeTelemetry,
  collectOnce,
  runtimeOptions,
  startAgent,
  type AgentSettings,
  type Collecting,
  repeatEvery,
  type Repeat,
  type RunningAgent,
  type Schedule,
  type ShutdownOptions,
} from '../telemetry/runtime.js';
import { SelfMonitor } from '../telemetry/selfmon.js';
import { FAILURE_KINDS, failureKindOf, type FailureKind } from './http/failure.js';
import { CollectionLoop, summarize, type TickResult, type TickSummary } from './collect.js';
import type { SubCollector } from './snapshot.js';
import { makeFetchers, type FetcherOptions } from './fetchers.js';
import { LandingRecord, renderClusterLanding } from './landing.js';
import { CLUSTER_EVENT_SPECS, CLUSTER_SELF_METRICS } from './metrics.js';
import { NATIVE_PATHS, nativeGroupSteps, nativeSections } from './observe/native.js';
import { observeSteps, observeState } from './observe.js';
import { advanceSteps, INITIAL_CLUSTER_STATE, type ClusterState } from './state.js';
import { loopTurn, runStepsYielding, Slice } from '../steps.js';

export const SCOPE = { name: 'slurm-otel/cluster', version: '0.1.0' };
/** OTLP scope of the `/metrics/nodes` families whose names `/metrics` uses with another meaning. */
export const SLURMCTLD_SCOPE = { name: 'slurm-otel/cluster/slurmctld', version: '0.1.0' };

export interface ClusterAgentOptions extends AgentSettings {
  /** Where data comes from: the slurmrestd client and the job source. */
  readonly source: Omit<
    FetcherOptions,
    'logger' | 'onSkipped' | 'onApiErrors' | 'onFieldsLost' | 'onBadHostlists' | 'onBadGresDetail' | 'onBoundedValues'
  >;
  readonly maxInflight: number;
  /** Shown on the landing page: where the agent reads from (never a credential). */
  readonly serverLabel?: string;
  /** Slurm's per-user and per-account job families on `/metrics` too (`--user-account-metrics`). */
  readonly userAccountMetrics?: boolean;
  /** Called on shutdown (closes the client's connections). */
  readonly close?: () => void;
  /** The clock snapshots are stamped with (default Date.now): tests make time pass without waiting. */
  readonly now?: () => number;
}

export interface ClusterAgent extends RunningAgent {
  readonly last: () => TickSummary | undefined;
  collectNow(): Promise<TickResult>;
}

export class ClusterRunner implements Collecting<TickResult> {
  readonly pipeline: Pipeline;
  readonly self: SelfMonitor<typeof CLUSTER_SELF_METRICS>;
  private readonly loop: CollectionLoop;
  private state: ClusterState = INITIAL_CLUSTER_STATE;
  private lastTick: TickSummary | undefined;
  /** Sub-collector health, last errors and state counts for the landing page. */
  private readonly landingRecord = new LandingRecord();
  private publishedAtMs: number | undefined;
  /** The publish in progress; `dirty` asks it for one more round with what was stored meanwhile. */
  private publishing: Promise<void> | undefined;
  private dirty = false;
  private nextPublishAtMs = 0;
  /** Scheduled (daemon): each stored result is published as it arrives, not after the whole tick. */
  private live = false;

  constructor(private readonly opts: ClusterAgentOptions) {
    this.self = new SelfMonitor(opts.resource, SCOPE, CLUSTER_SELF_METRICS);
    this.pipeline = new Pipeline({
      resource: opts.resource,
      scope: SCOPE,
      otlp: opts.otlp,
      logger: opts.logger,
      eventSpecs: CLUSTER_EVENT_SPECS,
      otlpSideScope: SLURMCTLD_SCOPE,
      disabled: opts.disabledMetrics,
      // Counted as the node agent counts its pushes, so that the OTLP alert covers both agents.
      onExport: ({ result, rejectedPoints }) => {
        this.self.m.otlpExports.record(1, { result });
        if (rejectedPoints > 0) this.self.m.otlpRejectedPoints.record(rejectedPoints);
      },
    });
    const m = this.self.m;
    // Soperator's family has the collector only; why it failed goes in a family of its own.
    const countError = (collector: SubCollector, kind: FailureKind): void => {
      m.collectorErrors.record(1, { collector });
      m.collectorErrorKinds.record(1, { collector, kind });
    };
    this.loop = new CollectionLoop({
      fetchers: makeFetchers({
        ...opts.source,
        now: opts.now,
        logger: opts.logger,
        onSkipped: (collector, n) => m.skippedItems.record(n, { collector }),
        onApiErrors: (collector, n) => m.apiErrors.record(n, { collector }),
        onFieldsLost: (collector, fields) => m.apiFieldsLost.record(fields.length, { collector }),
        onBadHostlists: (collector, n) => m.hostlistErrors.record(n, { collector }),
        onBadGresDetail: (collector, n) => m.gresDetailErrors.record(n, { collector }),
        onBoundedValues: (collector, n) => m.boundedValues.record(n, { collector }),
      }),
      maxInflight: opts.maxInflight,
      logger: opts.logger,
      ...(opts.now ? { now: opts.now } : {}),
      hooks: {
        runFinished: (collector, ms, err) => {
          m.collectorDuration.record(ms / 1000, { collector });
          if (err !== undefined) countError(collector, failureKindOf(err));
          this.landingRecord.runFinished(collector, Date.now(), ms, err);
        },
        // Counted once, when found: a missing endpoint is a fact about slurmrestd, not a failing run.
        absent: (collector, ms, absence, err) => {
          m.collectorDuration.record(ms / 1000, { collector });
          this.landingRecord.absent(collector, Date.now(), ms);
          if (absence === 'new') {
            countError(collector, 'absent');
            this.landingRecord.error(collector, Date.now(), err);
          }
        },
        skipped: (collector) => {
          m.collectorSkipped.record(1, { collector });
          this.landingRecord.skipped(collector);
        },
        stale: (collector) => m.collectorStaleResults.record(1, { collector }),
        inflight: (collector, n) => m.collectorInflight.record(n, { collector }),
        stored: () => {
          if (this.live) void this.refresh();
        },
      },
    });
    // Every self-monitoring series exists from the start, at 0, as Soperator registers them.
    this.self.zero({ collector: this.loop.enabled, kind: FAILURE_KINDS });
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
      enabled: this.loop.enabled,
    };
    return htmlBody(renderClusterLanding(this.lastTick, meta, this.landingRecord), this.lastTick ? 200 : 503);
  }

  /** One tick, waiting for every run it started, then one publish (`--once`, tests). */
  async collect(): Promise<TickResult> {
    const tick = await this.loop.tick();
    this.tickEnded(tick);
    await this.refresh();
    return tick;
  }

  /**
   * The daemon's timer: a tick every interval, whether or not the previous tick's runs have
   * ended (the in-flight limit, not the timer, keeps a slow sub-collector from piling up).
   */
  schedule(intervalMs: number, repeat: Repeat = repeatEvery): Schedule {
    this.live = true;
    const ticks = new Set<Promise<void>>();
    const tick = (): Promise<void> => {
      const t = this.loop.tick().then((r) => {
        this.tickEnded(r);
        // Until something is published the endpoint says "no data yet"; after, it keeps the last.
        return this.publishedAtMs === undefined ? this.refresh() : this.publishing;
      });
      ticks.add(t);
      void t.finally(() => ticks.delete(t));
      return t;
    };
    const first = tick();
    const cancel = repeat(intervalMs, () => void tick());
    return {
      first,
      stop: async () => {
        cancel();
        this.loop.abort();
        await Promise.all(ticks);
        await this.publishing;
      },
    };
  }

  /** Soperator's per-tick figures: counted when the runs a tick started have all ended. */
  private tickEnded(tick: TickResult): void {
    if (tick.started.length === 0) return;
    const m = this.self.m;
    m.collectionAttempts.record(1);
    m.collectionDuration.record(tick.durationMs / 1000);
    if (tick.failed.length > 0) m.collectionFailures.record(1);
    this.lastTick = summarize(tick);
    this.landingRecord.counted(tick.snapshot);
  }

  /**
   * Publishes the latest result of every sub-collector. Publishes never overlap: results stored
   * during one are taken up together by one more round.
   */
  refresh(): Promise<void> {
    this.dirty = true;
    this.publishing ??= this.drain().finally(() => (this.publishing = undefined));
    return this.publishing;
  }

  private async drain(): Promise<void> {
    while (this.dirty) {
      // Rendering takes at most half of the agent's time: on a large cluster (a second or more
      // per render) results arriving during and just after one render share the next.
      const wait = this.nextPublishAtMs - Date.now();
      if (wait > 0) await new Promise((resolve) => setTimeout(resolve, wait));
      this.dirty = false;
      const t0 = Date.now();
      try {
        await this.publish();
      } catch (err) {
        this.opts.logger.error({ err: (err as Error).message }, 'publishing failed; serving the previous exposition');
        this.landingRecord.error('publish', Date.now(), err);
      }
      this.nextPublishAtMs = 2 * Date.now() - t0;
    }
  }

  /**
   * State depending on several sources is recomputed from the latest result of each. At 100,000
   * jobs this takes up to a second: its steps yield within their loops when a slice (20 ms) is
   * due, and the event loop gets a whole turn at each yield and between the steps (scrapes are
   * answered meanwhile, from the previous exposition), so the longest stall is one piece, not the
   * sum. Publishes never overlap (drain), so nothing else moves the state between the pieces.
   */
  private async publish(): Promise<void> {
    // A publish follows a response's checks or a tick's end, from the same turn: a turn first.
    await loopTurn();
    const snapshot = this.loop.snapshot();
    const next = await runStepsYielding(advanceSteps(this.state, snapshot, new Slice()));
    this.state = next.state;
    this.pipeline.record(next.events);
    await loopTurn();
    // slurmctld always serves /metrics/jobs-users-accts; the switch puts those families on /metrics too.
    const groups = await runStepsYielding(nativeGroupSteps(snapshot, true, new Slice()));
    const native = { userAccountMetrics: this.opts.userAccountMetrics ?? false, groups };
    await loopTurn();
    const observed = await runStepsYielding(observeSteps(snapshot, snapshot.atMs, native, new Slice()));
    const families = [...observed, ...observeState(this.state)];
    await loopTurn();
    await this.pipeline.publish(families, snapshot.atMs, {
      sections: nativeSections(groups),
      otlpSide: groups.nodesSharedOtlp,
    });
    this.self.m.metricsExported.record(this.pipeline.producer.size);
    this.publishedAtMs = snapshot.atMs;
  }

  /** Aborts the requests in flight, the version negotiation and a token renewal included. */
  abort(): void {
    const cut = this.loop.abort();
    this.opts.close?.();
    if (cut.length > 0)
      this.opts.logger.warn({ collectors: cut }, 'slurmrestd requests in flight cut short by the stop');
  }

  lastAtMs(): number | undefined {
    return this.publishedAtMs;
  }

  selfExposition(): Promise<Body> {
    return this.self.exposition();
  }

  async shutdown(opts: ShutdownOptions = {}): Promise<void> {
    this.loop.abort();
    this.opts.close?.();
    await closeTelemetry(this.pipeline, this.self, opts);
  }
}

export async function startClusterAgent(opts: ClusterAgentOptions): Promise<ClusterAgent> {
  const runner = new ClusterRunner(opts);
  const running = await startAgent(
    runner,
    runtimeOptions('cluster agent', opts, {
      onRequest: (path) => {
        if (path === '/metrics') runner.self.m.metricsRequests.record(1);
      },
      // slurmctld's own paths: a scrape configuration written for slurmctld works by changing host and port.
      routes: {
        '/': () => runner.landing,
        ...Object.fromEntries(NATIVE_PATHS.map((p) => [p, () => runner.pipeline.section(p)])),
        // Off by default, as SchedMD warns of its size: say how to turn it on rather than serve nothing.
      },
    }),
  );
  return { ...running, last: () => runner.last, collectNow: () => runner.collect() };
}

/** `slurm-otel cluster --once`: one collection, rendered through the same pipeline. */
export async function runClusterOnce(opts: ClusterAgentOptions): Promise<{ text: string; failed: readonly string[] }> {
  const { text, result } = await collectOnce(new ClusterRunner({ ...opts, otlp: undefined }));
  return { text, failed: result.failed };
}
