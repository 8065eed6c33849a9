/** One node-agent cycle: read, join, attribute, observe. Keeps the state between cycles. */
import type { Family } from '../telemetry/spec.js';
import { attribute, EMPTY_STATE, type Attribution, type AttributionState } from './attribution.js';
import { JobIdResolver, type JobIdTable } from './jobids.js';
import { observe } from './observe.js';
import { FdScanner } from './owners.js';
import type { Roots } from './roots.js';
import type { JobMetadataSource } from './squeue.js';
import { takeSnapshot, type NodeSnapshot } from './snapshot.js';
import type { UnreadablePolicy } from './unreadable.js';

export interface CollectorOptions {
  readonly roots: Roots;
  readonly fdRescanIntervalMs: number;
  /** What an unreadable fd table outside every job costs (default strict: every port). */
  readonly unreadableProcesses?: UnreadablePolicy;
  readonly jobIdTable?: JobIdTable;
  /** Source of the optional user/account/partition labels on job series. */
  readonly metadata?: JobMetadataSource;
}

export interface Cycle {
  readonly snapshot: NodeSnapshot;
  readonly attribution: Attribution;
  readonly families: Family[];
  readonly durationMs: number;
  /**
   * Why this reading cannot stand for the node (sysfs unlistable, out of file descriptors):
   * then it has no families, the attribution state is left as it was, and nothing is published.
   */
  readonly failed?: string;
}

export class NodeCollector {
  private readonly readers;
  private state: AttributionState = EMPTY_STATE;

  constructor(opts: CollectorOptions) {
    this.readers = {
      roots: opts.roots,
      fds: new FdScanner(opts.roots.procfs, opts.fdRescanIntervalMs),
      jobIds: new JobIdResolver(opts.roots.procfs, opts.jobIdTable),
      metadata: opts.metadata,
      unreadable: opts.unreadableProcesses ?? 'strict',
    };
  }

  cycle(nowMs: number = Date.now()): Cycle {
    const t0 = performance.now();
    const snapshot = takeSnapshot(this.readers, nowMs);
    const failed = snapshot.hca.failure;
    if (failed !== undefined) {
      return { snapshot, attribution: { verdicts: [], state: this.state }, families: [], durationMs: performance.now() - t0, failed };
    }
    const attribution = attribute(snapshot, this.state);
    this.state = attribution.state;
    const families = observe(snapshot, attribution);
    return { snapshot, attribution, families, durationMs: performance.now() - t0 };
  }
}
