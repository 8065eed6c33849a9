/** The node agent: cycles on its own timer, publishes each snapshot, serves the last one. */
import { htmlBody, type Body } from '../telemetry/http.js';
import { Pipeline } from '../telemetry/pipeline.js';
import {
  closeTelemetry,
  collectOnce,
  runtimeOptions,
  startAgent,
  type AgentSettings,
  type Collecting,
  type RunningAgent,
  type ShutdownOptions,
} from '../telemetry/runtime.js';
import { SelfMonitor } from '../telemetry/selfmon.js';
import { HOLD_COUNTER_FILES, NodeCollector, type CollectorOptions } from './collect.js';
import type { Cycle } from './join/cycle.js';
import { attributionRows, slurmCgroupsNote } from './explain.js';
import { CounterHistory, motionReadings } from './history.js';
import { renderLanding } from './landing.js';
import { gpuSection } from './landing-gpus.js';
import { NODE_SELF_METRICS } from './metrics.js';
import type { NodeSnapshot } from './join/snapshot.js';
import { QpSource, type QpSourceOptions } from './qp/qp-source.js';
import type { QpDropReason } from './qp/qp-parse.js';
import type { FailureKind } from './read/result.js';
import { SlurmGpuAllocation, type GpuAllocationOptions } from './read/gres-source.js';
import { squeueJobIds, squeueMetadata, type SqueueOptions, type Stoppable } from './read/squeue.js';
import { unreadableLine, type UnreadableProcess } from './read/unreadable.js';

export const SCOPE = { name: 'slurm-otel/node', version: '0.1.0' };

/** New unreadable processes logged one by one per cycle; the rest in one line. */
const MAX_LOGGED_UNREADABLE = 5;

export interface NodeAgentOptions extends AgentSettings {
  readonly collector: Omit<CollectorOptions, 'jobIdTable' | 'metadata' | 'qp' | 'gpuAllocation'>;
  /** slurmd -G and squeue --json in the background: which GPUs Slurm gave each job here. */
  readonly gpuAllocation?: Omit<GpuAllocationOptions, 'logger' | 'onError'>;
  /** Per-PID QP counters through the rdma tool (--qp-counters observe|manage); off when absent. */
  readonly qpCounters?: Omit<QpSourceOptions, 'logger' | 'onError' | 'onDropped'>;
  /** squeue for SLUIDs that neither the cache nor the stepd titles resolve. */
  readonly squeue?: Omit<SqueueOptions, 'logger' | 'onError'>;
  /** squeue for the optional user_name/account/slurm_partition labels of job series. */
  readonly jobMetadata?: Omit<SqueueOptions, 'logger' | 'onError'>;
}

export interface NodeAgent extends RunningAgent {
  /** The last completed cycle (explain views and tests read it). */
  readonly last: () => Cycle | undefined;
  /** Runs a cycle now and publishes it (tests; the timer does this on its own). */
  cycleNow(): Promise<Cycle>;
  /** Logs what an exit now, without the stop, leaves changed on the node (links turned on). */
  exitingNow(): void;
}

/** Wires collector, pipeline and self-monitoring; used by both the daemon and `--once`. */
export class NodeRunner implements Collecting {
  readonly pipeline: Pipeline;
  readonly self: SelfMonitor<typeof NODE_SELF_METRICS>;
  private readonly collector: NodeCollector;
  private readonly background: readonly Stoppable[];
  private readonly qp: QpSource | undefined;
  private readonly seen = new Set<string>();
  private readonly loggedUnreadable = new Set<number>();
  private foundSlurm: boolean | undefined;
  private lastCycle: Cycle | undefined;
  /** Recent port and sole-job counters, for the rates on the landing page. */
  private readonly history = new CounterHistory();
  /** Aborted at stop: a cycle in flight ends at its next pause. */
  private readonly stopping = new AbortController();
  /** Settles when the last cycle asked for has ended. */
  private queue: Promise<void> = Promise.resolve();
  /**
   * The landing page, rendered when first asked for after a cycle (one a cycle at most): a node
   * nobody browses renders none, where a page rendered every cycle (some 260 KB on the benches'
   * heavy node) was garbage for the old generation each time.
   */
  private landingPage: Body | (() => Body) = htmlBody(
    '<!doctype html><title>slurm-otel</title><p>No cycle has completed yet.</p>',
    503,
  );

  constructor(private readonly opts: NodeAgentOptions) {
    const { logger } = opts;
    this.self = new SelfMonitor(opts.resource, SCOPE, NODE_SELF_METRICS);
    this.pipeline = new Pipeline({
      resource: opts.resource,
      scope: SCOPE,
      otlp: opts.otlp,
      logger,
      disabled: opts.disabledMetrics,
      onExport: ({ result, rejectedPoints }) => {
        this.self.m.otlpExports.record(1, { result });
        if (rejectedPoints > 0) this.self.m.otlpRejectedPoints.record(rejectedPoints);
      },
    });
    const onError = () => this.self.m.cycleErrors.record(1, { source: 'jobid', kind: 'io' });
    const jobIdTable = opts.squeue ? squeueJobIds({ ...opts.squeue, logger, onError }) : undefined;
    const metadata = opts.jobMetadata ? squeueMetadata({ ...opts.jobMetadata, logger, onError }) : undefined;
    const onRdmaError = (kind: FailureKind) => {
      if (kind !== 'gone') this.self.m.cycleErrors.record(1, { source: 'rdma', kind });
    };
    const onDropped = (reason: QpDropReason, n: number) => this.self.m.qpDropped.record(n, { reason });
    this.qp = opts.qpCounters
      ? new QpSource({ ...opts.qpCounters, logger, onError: onRdmaError, onDropped })
      : undefined;
    const onGresError = () => this.self.m.cycleErrors.record(1, { source: 'gres', kind: 'io' });
    const gpuAllocation = opts.gpuAllocation
      ? new SlurmGpuAllocation({ ...opts.gpuAllocation, logger, onError: onGresError })
      : undefined;
    this.background = [jobIdTable, metadata, this.qp, gpuAllocation].filter(
      (b): b is NonNullable<typeof b> => b !== undefined,
    );
    this.collector = new NodeCollector({
      holdCounterFiles: HOLD_COUNTER_FILES,
      logger,
      ...opts.collector,
      jobIdTable,
      metadata,
      gpuAllocation,
      qp: this.qp,
    });
  }

  get landing(): Body {
    if (typeof this.landingPage === 'function') this.landingPage = this.landingPage();
    return this.landingPage;
  }

  get last(): Cycle | undefined {
    return this.lastCycle;
  }

  /**
   * Runs a cycle once the one in flight (if any) has ended: a cycle yields while it reads, and two
   * at once on one collector would interleave its state (the timer's and a test's cycleNow).
   */
  cycle(): Promise<Cycle> {
    const next = this.queue.then(() => this.runCycle());
    this.queue = next.then(
      () => undefined,
      () => undefined,
    );
    return next;
  }

  private async runCycle(): Promise<Cycle> {
    const c = await this.collector.cycleYielding(this.stopping.signal);
    if (c.failed !== undefined) {
      this.recordFailure(c, c.failed);
      return c;
    }
    this.seen.delete('cycle-failed');
    await this.pipeline.publish(c.families, c.snapshot.atMs);
    this.lastCycle = c;
    this.history.record(c.snapshot.atMs, motionReadings(c.snapshot, c.attribution));
    this.landingPage = () =>
      htmlBody(
        renderLanding(attributionRows(c), {
          host: this.opts.resource.hostName,
          version: this.opts.resource.serviceVersion,
          atMs: c.snapshot.atMs,
          refreshSeconds: this.opts.collectionIntervalMs / 1000,
          gaps: c.snapshot.gaps,
          slurmCgroups: slurmCgroupsNote(c.snapshot),
          unreadable: c.snapshot.unreadable,
          history: this.history,
          ...(c.qp ? { qp: c.qp } : {}),
          gpus: gpuSection(c),
        }),
      );
    this.record(c);
    return c;
  }

  private record(c: Cycle): void {
    this.self.m.seriesExported.record(this.pipeline.producer.size);
    this.recordRun(c);
    if (!c.snapshot.hca.present)
      this.once(
        'no-hca',
        'warn',
        { sysfs: this.opts.collector.roots.sysfs },
        'no InfiniBand class in sysfs: no HCA on this node, exporting no device or job series',
      );
    this.logUnreadable(c.snapshot.unreadable);
    this.logSlurmCgroups(c.snapshot);
  }

  /** A cycle whose reading cannot stand for the node: counted and logged, the last good data stays published. */
  private recordFailure(c: Cycle, why: string): void {
    this.recordRun(c);
    this.once(
      'cycle-failed',
      'warn',
      { reason: why },
      'cycle failed; keeping the last published data and the job counters (logged once until a cycle succeeds)',
    );
  }

  private recordRun(c: Cycle): void {
    const { m } = this.self;
    m.cycles.record(1);
    m.cycleDuration.record(c.durationMs / 1000);
    m.fdLinksRead.record(c.snapshot.stats.fdLinksRead);
    for (const [result, n] of c.snapshot.stats.fdProbes) m.fdProbes.record(n, { result });
    for (const p of c.snapshot.problems) {
      // A vanished file is normal, not an error: the family's kinds leave it out (it is still logged).
      if (p.kind !== 'gone') m.cycleErrors.record(p.count, { source: p.source, kind: p.kind });
      this.once(
        `${p.source}/${p.kind}`,
        'warn',
        { source: p.source, kind: p.kind, count: p.count, example: p.example },
        'read problems this cycle (logged once per kind; counted in ib_slurm_exporter_cycle_errors_total)',
      );
    }
  }

  /** Each unreadable process is logged when it appears (a few per cycle), not every cycle. */
  private logUnreadable(list: readonly UnreadableProcess[]): void {
    const now = new Set(list.map((u) => u.pid));
    for (const pid of this.loggedUnreadable) if (!now.has(pid)) this.loggedUnreadable.delete(pid);
    const fresh = list.filter((u) => !this.loggedUnreadable.has(u.pid));
    for (const u of fresh.slice(0, MAX_LOGGED_UNREADABLE)) {
      const fields = { pid: u.pid, comm: u.comm, cgroup: u.cgroup, errno: u.errno, scope: u.scope, effect: u.effect };
      this.opts.logger[u.effect === 'ignored' || u.effect === 'cleared' ? 'info' : 'warn'](fields, unreadableLine(u));
    }
    if (fresh.length > MAX_LOGGED_UNREADABLE) {
      this.opts.logger.warn(
        { count: fresh.length - MAX_LOGGED_UNREADABLE },
        'more processes with unreadable fd tables: slurm-otel explain lists them all',
      );
    }
    for (const u of fresh) this.loggedUnreadable.add(u.pid);
  }

  /** Warns when the cgroup root stops holding (or from the start holds no) Slurm hierarchy; once per change. */
  private logSlurmCgroups(snap: NodeSnapshot): void {
    const { found } = snap.slurmCgroups;
    if (found === this.foundSlurm) return;
    const before = this.foundSlurm;
    this.foundSlurm = found;
    const root = this.opts.collector.roots.cgroupfs;
    const note = slurmCgroupsNote(snap);
    if (note !== undefined) this.opts.logger.warn({ cgroupRoot: root, searched: snap.slurmCgroups.searched }, note);
    else if (before === false) this.opts.logger.info({ cgroupRoot: root }, 'Slurm cgroup hierarchy found');
  }

  private once(key: string, level: 'warn' | 'info', fields: object, msg: string): void {
    if (this.seen.has(key)) return;
    this.seen.add(key);
    this.opts.logger[level](fields, msg);
  }

  collect(): Promise<Cycle> {
    return this.cycle();
  }

  lastAtMs(): number | undefined {
    return this.lastCycle?.snapshot.atMs;
  }

  selfExposition(): Promise<Body> {
    return this.self.exposition();
  }

  /** Kills squeue and rdma runs in flight (and whatever they started), and ends a cycle in flight. */
  abort(): void {
    this.stopping.abort();
    this.collector.stop();
    for (const b of this.background) b.stop();
  }

  /** See NodeAgent.exitingNow. */
  exitingNow(): void {
    this.qp?.exitingNow();
  }

  /** Also turns per-PID QP counters off again on the links this agent turned on (while the last push goes). */
  async shutdown(opts: ShutdownOptions = {}): Promise<void> {
    this.abort();
    this.collector.close();
    await Promise.all([this.qp?.restore(), closeTelemetry(this.pipeline, this.self, opts)]);
  }
}

export async function startNodeAgent(opts: NodeAgentOptions): Promise<NodeAgent> {
  const runner = new NodeRunner(opts);
  const running = await startAgent(
    runner,
    runtimeOptions('node agent', opts, {
      routes: { '/': () => runner.landing },
      onRequest: (path) => runner.self.m.scrapeRequests.record(1, { path }),
    }),
  );
  return { ...running, last: () => runner.last, cycleNow: () => runner.cycle(), exitingNow: () => runner.exitingNow() };
}

/**
 * `slurm-otel node --once`: one cycle, rendered through the same producer and serializer; `failed`
 * says why there is none.
 */
export async function runNodeOnce(
  opts: NodeAgentOptions,
): Promise<{ readonly text: string; readonly failed?: string }> {
  const { text, result } = await collectOnce(new NodeRunner({ ...opts, otlp: undefined }));
  return result.failed === undefined ? { text } : { text, failed: result.failed };
}
