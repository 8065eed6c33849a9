/** One node-agent cycle: read, join, attribute, observe. Keeps the state between cycles. */
import { attribute, EMPTY_STATE, type AttributionState } from './join/attribution.js';
import { JobIdResolver, type JobIdTable } from './read/jobids.js';
import { observe, qpFamilies, usageFamilies } from './observe.js';
import { holdOomKills, usageStarts, type OomHeld, type UsageStarts } from './join/job-usage.js';
import { accumulateQp, EMPTY_QP_STATE, type QpState } from './qp/qp-counters.js';
import type { QpReadings } from './qp/qp-source.js';
import { FdScanner } from './read/owners.js';
import type { FdReader } from './read/fd-native.js';
import { HcaCache } from './read/hca.js';
import { GpuCache } from './read/gpus.js';
import { LocalityCache } from './read/pci-topology.js';
import type { Roots } from './read/roots.js';
import type { JobMetadataSource } from './read/squeue.js';
import type { GpuAllocationSource } from './read/gres-source.js';
import type { Cycle } from './join/cycle.js';
import { snapshotSteps, type NodeSnapshot } from './join/snapshot.js';
import { qpReadingWithout, withoutExcluded, type DeviceFilter } from './join/excluded.js';
import { runSteps, runStepsYielding, type Steps } from '../steps.js';
import type { UnreadablePolicy } from './read/unreadable.js';
import { RdmaContexts, sharesPidSpace, type RdmaContextsOptions } from './read/rdma-contexts.js';
import type { Logger } from '../log.js';

export interface CollectorOptions {
  readonly roots: Roots;
  readonly fdRescanIntervalMs: number;
  /** What an unreadable fd table outside every job costs (default strict: every port). */
  readonly unreadableProcesses?: UnreadablePolicy;
  readonly jobIdTable?: JobIdTable;
  /** Source of the optional user/account/partition labels on job series. */
  readonly metadata?: JobMetadataSource;
  /** Slurm's GPU allocation on this node (--gpu-allocation slurm). */
  readonly gpuAllocation?: GpuAllocationSource;
  /** Read the fd tables of processes whose cgroup's rdma.current already tells what they hold (explain). */
  readonly readAllFds?: boolean;
  /** Per-PID QP counters read in the background (--qp-counters observe|manage). */
  readonly qp?: QpReadings;
  /** Counter files kept open between cycles, at most (a running agent: HOLD_COUNTER_FILES). */
  readonly holdCounterFiles?: number;
  /** How long a piece of the fd scan runs before a yielding cycle gives the event loop a turn (steps.ts). */
  readonly sliceMs?: number;
  /** The clock a cycle is stamped with (default Date.now): tests make time pass without waiting. */
  readonly now?: () => number;
  /** The rdma tool for the kernel's list of verbs contexts (rdma-contexts.ts); none read when absent. */
  readonly contexts?: Omit<RdmaContextsOptions, 'logger'>;
  readonly logger?: Logger;
  /** Read each job's CPU and memory use from its cgroup (--job-usage, default on). */
  readonly jobUsage?: boolean;
  /** Devices left out of every series and of the attribution (the operator's patterns). */
  readonly devices?: DeviceFilter;
  /** The fd scan's native reader (--fd-reader native, where it loads); absent, Node's fs reads. */
  readonly fdReader?: FdReader;
}

/** The HCAs `devices` leaves out, told by name before anything of theirs is read. */
function leftOutHca(devices: DeviceFilter | undefined): ((device: string) => boolean) | undefined {
  return devices === undefined ? undefined : (device) => devices([device]) !== undefined;
}

/** What a running agent keeps open: every counter of 16 dual-port HCAs with mlx5's ~60 counters each. */
export const HOLD_COUNTER_FILES = 2048;

export class NodeCollector {
  private readonly readers;
  private state: AttributionState = EMPTY_STATE;
  private qpState: QpState = EMPTY_QP_STATE;
  private usageStarts: UsageStarts = new Map();
  private oomHeld: OomHeld = new Map();
  private readonly qp: QpReadings | undefined;
  private readonly now: () => number;
  private readonly devices: DeviceFilter | undefined;

  constructor(opts: CollectorOptions) {
    this.readers = {
      roots: opts.roots,
      fds: new FdScanner(
        opts.roots.procfs,
        opts.fdRescanIntervalMs,
        opts.roots.fdDevice,
        opts.sliceMs,
        undefined,
        undefined,
        opts.fdReader,
      ),
      hcaCache: new HcaCache(opts.holdCounterFiles ?? 0),
      gpuCache: new GpuCache(),
      localityCache: new LocalityCache(),
      jobIds: new JobIdResolver(opts.roots.procfs, opts.jobIdTable),
      metadata: opts.metadata,
      gpuAllocation: opts.gpuAllocation,
      unreadable: opts.unreadableProcesses ?? 'strict',
      readAllFds: opts.readAllFds,
      jobUsage: opts.jobUsage ?? true,
      leftOutHca: leftOutHca(opts.devices),
      contexts:
        opts.contexts && sharesPidSpace(opts.roots.procfs)
          ? new RdmaContexts({ ...opts.contexts, ...(opts.logger ? { logger: opts.logger } : {}) })
          : undefined,
    };
    this.qp = opts.qp;
    this.devices = opts.devices;
    this.now = opts.now ?? Date.now;
  }

  /** Closes the counter files kept open. */
  close(): void {
    this.readers.hcaCache.close();
  }

  /** Kills what a cycle runs in child processes (fd probes); a stop. */
  stop(): void {
    this.readers.fds.stop();
    this.readers.contexts?.stop();
  }

  /** One cycle, straight through (explain, --once, tests). */
  cycle(nowMs: number = this.now()): Cycle {
    return runSteps(this.cycleSteps(nowMs));
  }

  /**
   * One cycle that gives the event loop a turn every few milliseconds (the running agent: a full
   * fd rescan of thousands of processes must not hold up scrapes or a stop); rejects once
   * `signal` aborts.
   */
  cycleYielding(signal?: AbortSignal, nowMs: number = this.now()): Promise<Cycle> {
    return runStepsYielding(this.cycleSteps(nowMs), signal);
  }

  private *cycleSteps(nowMs: number): Steps<Cycle> {
    const t0 = performance.now();
    let snapshot = withoutExcluded(yield* snapshotSteps(this.readers, nowMs), this.devices);
    const failed = snapshot.hca.failure;
    if (failed !== undefined) {
      return {
        snapshot,
        attribution: { verdicts: [], state: this.state },
        families: [],
        durationMs: performance.now() - t0,
        failed,
      };
    }
    const attribution = attribute(snapshot, this.state);
    this.state = attribution.state;
    const families = observe(snapshot, attribution);
    if (snapshot.usage) {
      const oom = holdOomKills(snapshot.usage, this.oomHeld);
      this.oomHeld = oom.held;
      snapshot = { ...snapshot, usage: oom.usage };
      this.usageStarts = usageStarts(oom.usage, this.usageStarts, snapshot.atMs);
      families.push(...usageFamilies(snapshot, this.usageStarts));
    }
    const qp = this.qp ? this.qpCycle(this.qp, snapshot) : undefined;
    if (qp) families.push(...qpFamilies(snapshot, qp));
    return { snapshot, attribution, families, durationMs: performance.now() - t0, ...(qp ? { qp } : {}) };
  }

  /** Folds the latest background reading into the job totals, and asks for the next one. */
  private qpCycle(qp: QpReadings, snapshot: NodeSnapshot): QpState {
    const jobOf = new Map<number, string>();
    for (const a of snapshot.allocations)
      if (a.jobId !== undefined) for (const pid of [...a.pids, ...a.stepdPids]) jobOf.set(pid, a.jobId);
    const excluded = new Set((snapshot.excluded ?? []).filter((e) => e.kind === 'hca').map((e) => e.device));
    const reading = qpReadingWithout(qp.latest(), excluded);
    this.qpState = accumulateQp(this.qpState, reading, jobOf, new Set(jobOf.values()), snapshot.atMs);
    qp.want(snapshot.hca.hcas.flatMap((h) => h.ports.map((p) => `${h.device}/${p.port}`)));
    return this.qpState;
  }
}
