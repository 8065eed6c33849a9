/**
 * The sub-collectors' requests, from the client's typed results to the
 * plain lists the collection loop stores, their repeated values shared. Malformed elements are
 * skipped and counted here; a whole failed response becomes an error the loop counts.
 */
import type { Logger } from '../log.js';
import { orThrow, type AccountingQuery, type CallOptions, type CallResult } from './api/call-result.js';
import { CallError } from './http/failure.js';
import { describeMessages, isBenign } from './api/decode/envelope.js';
import type { Fetchers } from './collect.js';
import { Interner, type InternFields } from './intern.js';
import { LABEL_VALUE_MAX_BYTES, type TopologyRead } from './kubernetes/topology.js';
import type {
  ApiMessage,
  SlurmAccountingLimits,
  SlurmAssociationLimits,
  SlurmDiag,
  SlurmJob,
  SlurmLicense,
  SlurmNode,
  SlurmPartition,
  SlurmQosLimits,
  SlurmReservation,
  SlurmShare,
} from './model.js';
import { adjustAccountingJobs } from './adjust-accounting.js';
import { hostlistError } from './hostlist.js';
import { parseNodeGres } from './api/decode/gres-detail.js';
import { DEFAULT_OPTIONAL_SUB_COLLECTORS, type OptionalSubCollector, type SubCollector } from './snapshot.js';
import { eachInSlices, runStepsYielding, Slice, type Steps } from '../steps.js';

/** What the fetchers need of the client (the real SlurmClient, or a test double). */
export interface SlurmApi {
  nodes(opts?: CallOptions<SlurmNode>): Promise<CallResult<SlurmNode>>;
  jobs(opts?: CallOptions<SlurmJob>): Promise<CallResult<SlurmJob>>;
  diag(opts?: CallOptions): Promise<CallResult<SlurmDiag>>;
  /** Optional: without it (a test double, a bench) the partitions sub-collector is off. */
  partitions?(opts?: CallOptions): Promise<CallResult<SlurmPartition>>;
  licenses?(opts?: CallOptions): Promise<CallResult<SlurmLicense>>;
  reservations?(opts?: CallOptions): Promise<CallResult<SlurmReservation>>;
  shares?(opts?: CallOptions): Promise<CallResult<SlurmShare>>;
  qos?(opts?: CallOptions): Promise<CallResult<SlurmQosLimits>>;
  associations?(opts?: CallOptions): Promise<CallResult<SlurmAssociationLimits>>;
  accountingJobs(q: AccountingQuery, opts?: CallOptions<SlurmJob>): Promise<CallResult<SlurmJob>>;
}

export type JobSource = 'controller' | 'accounting';

export interface FetcherOptions {
  readonly api: SlurmApi;
  readonly jobSource: JobSource;
  /** Accounting window: [now − lookback, now + skew]. */
  readonly accountingLookbackMs: number;
  readonly clusterName?: string;
  readonly logger: Logger;
  /** The optional sub-collectors to run (default DEFAULT_OPTIONAL_SUB_COLLECTORS). */
  readonly optional?: readonly OptionalSubCollector[];
  /** QoS and association limits from slurmdbd (two requests more per cycle). */
  readonly accountingLimits?: boolean;
  /** Worker placement from the Kubernetes API (Soperator); run when `topology` is among `optional`. */
  readonly topology?: (signal: AbortSignal) => Promise<TopologyRead>;
  readonly onSkipped?: (collector: SubCollector, count: number) => void;
  /** A successful response that also carried Slurm `errors[]` (the data is used). */
  readonly onApiErrors?: (collector: SubCollector, count: number) => void;
  /** Fields the items had before an API version change and lack after it. */
  readonly onFieldsLost?: (collector: SubCollector, fields: readonly string[]) => void;
  /** Items kept whose hostlist cannot be expanded (their per-host series are missing). */
  readonly onBadHostlists?: (collector: SubCollector, count: number) => void;
  /** Per-node `gres_detail` entries of jobs with GRES that cannot be read (the readable rest is kept). */
  readonly onBadGresDetail?: (collector: SubCollector, count: number) => void;
  /** Label values from outside slurmrestd that were cut to size or had characters replaced. */
  readonly onBoundedValues?: (collector: SubCollector, count: number) => void;
  readonly now?: () => number;
  /** How long a piece of a response's checks runs before it yields (steps.ts; tests give 0). */
  readonly sliceMs?: number;
}

/** A response that decoded but carries no usable data: counted as a `decode` failure. */
const malformed = (message: string): CallError => new CallError({ kind: 'decode', message, errors: [] });

/** Clock drift between slurmrestd, slurmctld and slurmdbd (Soperator uses the same 5 minutes). */
export const ACCOUNTING_SKEW_MS = 5 * 60_000;

const JOB_FIELDS: InternFields<SlurmJob> = {
  strings: [
    'name',
    'state_reason',
    'partition',
    'account',
    'qos',
    'user_name',
    'group_name',
    'mail_user',
    'standard_output',
    'nodes',
    'tres_alloc_str',
    'tres_req_str',
  ],
  values: ['state', 'exit_code'],
  // By default stderr goes where stdout goes, one file per job (slurm-%j.out).
  sameAs: [['standard_error', 'standard_output']],
};

const NODE_FIELDS: InternFields<SlurmNode> = {
  strings: [
    'reason',
    'reason_set_by_user',
    'comment',
    'reservation',
    'tres',
    'tres_used',
    'gres',
    'gres_used',
    'slurmd_version',
    'specialized_cpus',
  ],
  values: ['state', 'partitions', 'features'],
};

export function makeFetchers(o: FetcherOptions): Fetchers {
  const now = o.now ?? Date.now;
  const watch = new ResponseWatch(o);
  // The checks pass over every item (tens of milliseconds at 100,000 jobs), in pieces that let
  // scrapes through.
  const items = async <T>(
    collector: SubCollector,
    result: CallResult<T>,
    signal: AbortSignal,
  ): Promise<readonly T[]> => {
    const data = orThrow(result);
    if (data.skipped > 0) {
      o.onSkipped?.(collector, data.skipped);
      o.logger.warn(
        { collector, skipped: data.skipped, reasons: data.skip_reasons.slice(0, 3) },
        'malformed elements skipped',
      );
    }
    // Nothing decoded out of something sent is a broken response, not an empty cluster.
    if (data.items.length === 0 && data.skipped > 0)
      throw malformed(`${collector}: all ${data.skipped} elements are malformed`);
    watch.errors(
      collector,
      data.errors.filter((e) => !isBenign(e)),
    );
    const version = result.ok ? result.version : undefined;
    await runStepsYielding(watch.itemSteps(collector, version, data.items, new Slice(o.sliceMs)), signal);
    return data.items;
  };
  // Each element's repeated values are shared as it is decoded (see intern.ts).
  const shared = <T extends object>(signal: AbortSignal, fields: InternFields<T>): CallOptions<T> => {
    const interner = new Interner(fields);
    return { signal, onItem: (item) => interner.add(item) };
  };
  /** An optional sub-collector: on when the API has its call and the operator chose it. */
  const chosen = o.optional ?? DEFAULT_OPTIONAL_SUB_COLLECTORS;
  const optional = <K extends OptionalSubCollector, T>(
    name: K,
    call: ((opts?: CallOptions) => Promise<CallResult<T>>) | undefined,
  ) =>
    call === undefined || !chosen.includes(name)
      ? {}
      : { [name]: async (signal: AbortSignal) => items(name, await call({ signal }), signal) };
  return {
    nodes: async (signal) => items('nodes', await o.api.nodes(shared(signal, NODE_FIELDS)), signal),
    ...optional('partitions', o.api.partitions?.bind(o.api)),
    ...optional('licenses', o.api.licenses?.bind(o.api)),
    ...optional('reservations', o.api.reservations?.bind(o.api)),
    ...optional('shares', o.api.shares?.bind(o.api)),
    ...(o.accountingLimits ? limitsFetcher(o.api, items) : {}),
    ...topologyFetcher(o, chosen, watch),
    diag: async (signal) => {
      const [diag] = await items('diag', await o.api.diag({ signal }), signal);
      if (!diag) throw malformed('diag response carried no statistics');
      return diag;
    },
    jobs: async (signal) => {
      if (o.jobSource === 'controller') return items('jobs', await o.api.jobs(shared(signal, JOB_FIELDS)), signal);
      const t = now();
      const query = {
        cluster: o.clusterName,
        startTime: new Date(t - o.accountingLookbackMs),
        endTime: new Date(t + ACCOUNTING_SKEW_MS),
      };
      const got = await o.api.accountingJobs(query, shared(signal, JOB_FIELDS));
      return adjustAccountingJobs(await items('jobs', got, signal), t);
    },
  };
}

type Items = <T>(collector: SubCollector, result: CallResult<T>, signal: AbortSignal) => Promise<readonly T[]>;

function topologyFetcher(
  o: FetcherOptions,
  chosen: readonly OptionalSubCollector[],
  watch: ResponseWatch,
): Pick<Fetchers, 'topology'> {
  const read = o.topology;
  if (read === undefined || !chosen.includes('topology')) return {};
  return {
    topology: async (signal) => {
      const got = await read(signal);
      watch.bounded('topology', got);
      return got.byNode;
    },
  };
}

/** Both slurmdbd lists at once; either failing fails the run (and keeps the last good pair). */
function limitsFetcher(api: SlurmApi, items: Items): Pick<Fetchers, 'limits'> {
  const { qos, associations } = api;
  if (qos === undefined || associations === undefined) return {};
  return {
    limits: async (signal): Promise<SlurmAccountingLimits> => {
      const [q, a] = await Promise.all([qos.call(api, { signal }), associations.call(api, { signal })]);
      return { qos: await items('limits', q, signal), associations: await items('limits', a, signal) };
    },
  };
}

/** At most this many distinct Slurm error messages (and bad hostlists) are remembered as already logged. */
const MAX_LOGGED_MESSAGES = 100;

/** The hostlist each sub-collector's items carry: the rules expand it to per-host series. */
const HOSTLIST_FIELD: Partial<Record<SubCollector, string>> = {
  jobs: 'nodes',
  partitions: 'nodes',
  reservations: 'node_list',
};

/**
 * What a successful response can hide: Slurm `errors[]` next to the data, and, after slurmrestd
 * was renegotiated to another API version, fields that the new version no longer sends (their
 * families then vanish). Both are counted; each distinct message or loss is logged once.
 */
class ResponseWatch {
  private readonly logged = new Set<string>();
  private readonly seen = new Map<SubCollector, { version: string; fields: ReadonlySet<string> }>();
  private readonly loggedHostlists = new Set<string>();
  private readonly loggedGres = new Set<string>();
  private lastBounded = 0;

  constructor(private readonly o: FetcherOptions) {}

  errors(collector: SubCollector, errors: readonly ApiMessage[]): void {
    if (errors.length === 0) return;
    this.o.onApiErrors?.(collector, errors.length);
    const text = describeMessages(errors);
    if (this.logged.has(`${collector} ${text}`) || this.logged.size >= MAX_LOGGED_MESSAGES) return;
    this.logged.add(`${collector} ${text}`);
    this.o.logger.warn({ collector, errors: text }, 'slurmrestd answered with data and errors; using the data');
  }

  /** The checks of a response's items, one pass each, in pieces that yield when the slice is due. */
  *itemSteps(
    collector: SubCollector,
    version: string | undefined,
    items: readonly unknown[],
    slice: Slice,
  ): Steps<void> {
    yield* this.fields(collector, version, items, slice);
    yield* this.hostlists(collector, items, slice);
    yield* this.gresDetails(collector, items, slice);
  }

  /**
   * Hostlists that cannot be expanded: the rules leave those items out of per-host series (a
   * job's nodes, a reservation's node states) or fall back (a partition's nodes from the nodes'
   * own partition lists). Counted per response; each distinct list is logged once.
   */
  private *hostlists(collector: SubCollector, items: readonly unknown[], slice: Slice): Steps<void> {
    const field = HOSTLIST_FIELD[collector];
    if (field === undefined) return;
    // Interned lists repeat (100k jobs on a few thousand lists): each is checked once per response.
    const verdicts = new Map<string, string | undefined>();
    let bad = 0;
    const check = (item: unknown): void => {
      const list = (item as Record<string, unknown>)[field];
      if (typeof list !== 'string') return;
      if (!verdicts.has(list)) verdicts.set(list, hostlistError(list));
      const error = verdicts.get(list);
      if (error === undefined) return;
      bad++;
      if (this.loggedHostlists.has(list) || this.loggedHostlists.size >= MAX_LOGGED_MESSAGES) return;
      this.loggedHostlists.add(list);
      this.o.logger.warn(
        { collector, field, hostlist: list, error },
        'hostlist cannot be expanded; its hosts are left out',
      );
    };
    yield* eachInSlices(items, check, slice);
    if (bad > 0) this.o.onBadHostlists?.(collector, bad);
  }

  /**
   * Jobs' per-node GRES entries that are not in Slurm's forms: the rules keep the GPUs the rest of
   * the entry names. Counted per response (one per entry); each distinct entry is logged once.
   */
  private *gresDetails(collector: SubCollector, items: readonly unknown[], slice: Slice): Steps<void> {
    if (collector !== 'jobs') return;
    // Entries repeat across jobs of one shape: each distinct one is read once per response.
    const verdicts = new Map<string, readonly string[]>();
    let bad = 0;
    const check = (item: unknown): void => {
      const detail = (item as { gres_detail?: readonly string[] }).gres_detail;
      if (detail === undefined) return;
      for (const entry of detail) {
        let unread = verdicts.get(entry);
        if (unread === undefined) verdicts.set(entry, (unread = parseNodeGres(entry).unread));
        if (unread.length === 0) continue;
        bad++;
        if (this.loggedGres.has(entry) || this.loggedGres.size >= MAX_LOGGED_MESSAGES) continue;
        this.loggedGres.add(entry);
        this.o.logger.warn(
          { collector, gres_detail: entry, unread },
          'GRES detail not in a form Slurm prints; its GPUs there are left out',
        );
      }
    };
    yield* eachInSlices(items, check, slice);
    if (bad > 0) this.o.onBadGresDetail?.(collector, bad);
  }

  /** Counted per response; logged when the count changes, so a steady state is logged once. */
  bounded(collector: SubCollector, got: TopologyRead): void {
    if (got.adjusted > 0) this.o.onBoundedValues?.(collector, got.adjusted);
    if (got.adjusted === this.lastBounded) return;
    this.lastBounded = got.adjusted;
    if (got.adjusted > 0)
      this.o.logger.warn(
        { collector, values: got.adjusted, first: got.example, maxBytes: LABEL_VALUE_MAX_BYTES },
        'label values cut to size or with control characters replaced before export',
      );
  }

  /** Field names are gathered only on the first response and when the version changes. */
  private *fields(
    collector: SubCollector,
    version: string | undefined,
    items: readonly unknown[],
    slice: Slice,
  ): Steps<void> {
    const before = this.seen.get(collector);
    if (version === undefined || items.length === 0 || before?.version === version) return;
    const fields = new Set<string>();
    const names = (item: unknown): void => {
      if (typeof item === 'object' && item !== null) for (const k of Object.keys(item)) fields.add(k);
    };
    yield* eachInSlices(items, names, slice);
    this.seen.set(collector, { version, fields });
    if (before === undefined) return;
    const lost = [...before.fields].filter((f) => !fields.has(f)).sort();
    if (lost.length === 0) return;
    this.o.onFieldsLost?.(collector, lost);
    this.o.logger.warn(
      { collector, from: before.version, to: version, lost },
      'the new slurmrestd API version lacks fields the previous one sent; their metrics are gone',
    );
  }
}
