/**
 * The cluster agent's collection loop. Every tick tries to start each
 * sub-collector (nodes, jobs, diag and the optional ones) and does not wait for it: a slow /jobs
 * never delays /nodes. Each run is isolated: a failure keeps its last good
 * data and is counted; an in-flight limit per sub-collector skips a run rather
 * than pile requests onto a slow slurmrestd; a result older than the one
 * stored (runs overlapping when the limit is above 1) is dropped. Every stored
 * result is announced, so the agent can publish it at once. A run whose
 * endpoint slurmrestd does not serve is no failure: its data is dropped, so its
 * families are absent rather than frozen. Scrapes never reach this code.
 */
import type { Logger } from '../log.js';
import { absenceOf, type Absence } from './http/failure.js';
import type {
  SlurmAccountingLimits,
  SlurmDiag,
  SlurmJob,
  SlurmLicense,
  SlurmNode,
  NodeTopology,
  SlurmPartition,
  SlurmReservation,
  SlurmShare,
} from './model.js';
import { SUB_COLLECTORS, type ClusterSnapshot, type Collected, type SubCollector } from './snapshot.js';

export interface Fetchers {
  readonly nodes: (signal: AbortSignal) => Promise<readonly SlurmNode[]>;
  readonly jobs: (signal: AbortSignal) => Promise<readonly SlurmJob[]>;
  readonly diag: (signal: AbortSignal) => Promise<SlurmDiag>;
  /** Optional sub-collectors: absent means switched off (never started, never counted). */
  readonly partitions?: (signal: AbortSignal) => Promise<readonly SlurmPartition[]>;
  readonly licenses?: (signal: AbortSignal) => Promise<readonly SlurmLicense[]>;
  readonly reservations?: (signal: AbortSignal) => Promise<readonly SlurmReservation[]>;
  readonly shares?: (signal: AbortSignal) => Promise<readonly SlurmShare[]>;
  readonly limits?: (signal: AbortSignal) => Promise<SlurmAccountingLimits>;
  readonly topology?: (signal: AbortSignal) => Promise<ReadonlyMap<string, NodeTopology>>;
}

/** What the loop reports, for self-monitoring. */
export interface LoopHooks {
  runFinished(name: SubCollector, durationMs: number, error?: unknown): void;
  /** The run's endpoint is missing on the negotiated API version (`new`: found by this run). */
  absent?(name: SubCollector, durationMs: number, absence: Absence, error: unknown): void;
  skipped(name: SubCollector): void;
  stale(name: SubCollector): void;
  inflight(name: SubCollector, count: number): void;
  /** A result was stored (it is the newest of its sub-collector), or dropped for a missing endpoint. */
  stored?(name: SubCollector): void;
}

export interface LoopOptions {
  readonly fetchers: Fetchers;
  readonly maxInflight: number;
  readonly hooks: LoopHooks;
  readonly logger: Logger;
  readonly now?: () => number;
}

export interface TickResult {
  readonly snapshot: ClusterSnapshot;
  readonly durationMs: number;
  /** Sub-collectors this tick started (the others were at their in-flight limit). */
  readonly started: readonly SubCollector[];
  /** Sub-collectors that failed in this tick. */
  readonly failed: readonly SubCollector[];
  /** Sub-collectors whose endpoint slurmrestd does not serve (not failures). */
  readonly absent: readonly SubCollector[];
}

/**
 * What is worth remembering of a tick after it: no data. Holding the tick itself would keep the
 * previous jobs alive through the next collection (tens of MB on a large cluster).
 */
export interface TickSummary {
  readonly atMs: number;
  readonly durationMs: number;
  readonly failed: readonly SubCollector[];
  /** Per sub-collector: when its stored data was requested, and how many items it holds. */
  readonly collectors: Readonly<Partial<Record<SubCollector, { readonly atMs: number; readonly items?: number }>>>;
}

export function summarize(t: TickResult): TickSummary {
  const collectors: Partial<Record<SubCollector, { atMs: number; items?: number }>> = {};
  for (const name of SUB_COLLECTORS) {
    const got = t.snapshot[name];
    if (got)
      collectors[name] = Array.isArray(got.value) ? { atMs: got.atMs, items: got.value.length } : { atMs: got.atMs };
  }
  return { atMs: t.snapshot.atMs, durationMs: t.durationMs, failed: t.failed, collectors };
}

type Stored = {
  nodes?: Collected<readonly SlurmNode[]>;
  jobs?: Collected<readonly SlurmJob[]>;
  diag?: Collected<SlurmDiag>;
  partitions?: Collected<readonly SlurmPartition[]>;
  licenses?: Collected<readonly SlurmLicense[]>;
  reservations?: Collected<readonly SlurmReservation[]>;
  shares?: Collected<readonly SlurmShare[]>;
  limits?: Collected<SlurmAccountingLimits>;
  topology?: Collected<ReadonlyMap<string, NodeTopology>>;
};

export class CollectionLoop {
  private readonly stored: Stored = {};
  private readonly seq = perSubCollector(0);
  private readonly running = perSubCollector(0);
  private readonly aborts = new Set<AbortController>();
  private readonly now: () => number;
  /** The sub-collectors that have a fetcher, in SUB_COLLECTORS order. */
  readonly enabled: readonly SubCollector[];

  constructor(private readonly opts: LoopOptions) {
    this.now = opts.now ?? Date.now;
    this.enabled = SUB_COLLECTORS.filter((name) => opts.fetchers[name] !== undefined);
  }

  /**
   * Starts every sub-collector that is under its in-flight limit, at once and independently;
   * resolves when the runs it started have ended (each one's result is stored as it arrives).
   */
  async tick(): Promise<TickResult> {
    const t0 = this.now();
    const runs = this.enabled.map((name) => this.start(name));
    const outcomes = await Promise.all(runs);
    const started = this.enabled.filter((_, i) => outcomes[i] !== 'skipped');
    const failed = this.enabled.filter((_, i) => outcomes[i] === 'failed');
    const absent = this.enabled.filter((_, i) => outcomes[i] === 'absent');
    return { snapshot: this.snapshot(), durationMs: this.now() - t0, started, failed, absent };
  }

  snapshot(): ClusterSnapshot {
    return { atMs: this.now(), ...this.stored };
  }

  /** Aborts the requests in flight (shutdown); gives the sub-collectors that had one. */
  abort(): SubCollector[] {
    for (const a of this.aborts) a.abort();
    return this.enabled.filter((name) => this.running[name] > 0);
  }

  private async start(name: SubCollector): Promise<'ok' | 'failed' | 'absent' | 'skipped'> {
    const { hooks } = this.opts;
    if (this.running[name] >= this.opts.maxInflight) {
      hooks.skipped(name);
      this.opts.logger.warn(
        { collector: name, inflight: this.running[name] },
        'previous run still in flight; skipping this one',
      );
      return 'skipped';
    }
    const seq = ++this.seq[name];
    const atMs = this.now();
    const abort = new AbortController();
    this.aborts.add(abort);
    hooks.inflight(name, ++this.running[name]);
    try {
      const value = await (this.opts.fetchers[name] as (signal: AbortSignal) => Promise<unknown>)(abort.signal);
      hooks.runFinished(name, this.now() - atMs);
      this.store(name, { value, atMs, seq } as Collected<never>);
      return 'ok';
    } catch (err) {
      const absence = absenceOf(err);
      if (absence !== undefined) {
        hooks.absent?.(name, this.now() - atMs, absence, err);
        this.drop(name, seq);
        return 'absent';
      }
      hooks.runFinished(name, this.now() - atMs, err);
      // Aborted by abort() (a stop): an ordinary end, said at info; anything else is an error.
      if (abort.signal.aborted) this.opts.logger.info({ collector: name }, 'sub-collector run cut short by the stop');
      else
        this.opts.logger.error(
          { collector: name, err: (err as Error).message },
          'sub-collector failed; keeping its last good data',
        );
      return 'failed';
    } finally {
      this.aborts.delete(abort);
      hooks.inflight(name, --this.running[name]);
    }
  }

  /** Forgets the stored data, unless a newer run stored it. */
  private drop(name: SubCollector, seq: number): void {
    const current = this.stored[name];
    if (current === undefined || current.seq > seq) return;
    delete this.stored[name];
    this.opts.hooks.stored?.(name);
  }

  private store(name: SubCollector, result: Collected<never>): void {
    const current = this.stored[name];
    if (current && current.seq > result.seq) {
      this.opts.hooks.stale(name);
      return;
    }
    this.stored[name] = result;
    this.opts.hooks.stored?.(name);
  }
}

function perSubCollector<T>(initial: T): Record<SubCollector, T> {
  return Object.fromEntries(SUB_COLLECTORS.map((name) => [name, initial])) as Record<SubCollector, T>;
}
