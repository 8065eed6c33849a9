/**
 * The sub-collectors' requests, from the client's typed results to the
 * plain lists the collection loop stores, their repeated values shared. Malformed elements are
 * skipped and counted here; a whole failed response becomes an error the loop counts.
 */
import type { Logger } from '../log.js';
import { orThrow, type AccountingQuery, type CallOptions, type CallResult } from './api/client.js';
import type { Fetchers } from './collect.js';
import type { SlurmAccountingLimits, SlurmAssociationLimits, SlurmDiag, SlurmQosLimits, SlurmJob, SlurmLicense, SlurmNode, SlurmPartition, SlurmReservation, SlurmShare } from './model.js';
import { internFields, type InternFields } from './intern.js';
import { adjustAccountingJobs } from './rules.js';
import { DEFAULT_OPTIONAL_SUB_COLLECTORS, type OptionalSubCollector, type SubCollector } from './snapshot.js';

/** What the fetchers need of the client (the real SlurmClient, or a test double). */
export interface SlurmApi {
  nodes(opts?: CallOptions): Promise<CallResult<SlurmNode>>;
  jobs(opts?: CallOptions): Promise<CallResult<SlurmJob>>;
  diag(opts?: CallOptions): Promise<CallResult<SlurmDiag>>;
  /** Optional: without it (a test double, a bench) the partitions sub-collector is off. */
  partitions?(opts?: CallOptions): Promise<CallResult<SlurmPartition>>;
  licenses?(opts?: CallOptions): Promise<CallResult<SlurmLicense>>;
  reservations?(opts?: CallOptions): Promise<CallResult<SlurmReservation>>;
  shares?(opts?: CallOptions): Promise<CallResult<SlurmShare>>;
  qos?(opts?: CallOptions): Promise<CallResult<SlurmQosLimits>>;
  associations?(opts?: CallOptions): Promise<CallResult<SlurmAssociationLimits>>;
  accountingJobs(q: AccountingQuery, opts?: CallOptions): Promise<CallResult<SlurmJob>>;
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
  readonly onSkipped?: (collector: SubCollector, count: number) => void;
  readonly now?: () => number;
}

/** Clock drift between slurmrestd, slurmctld and slurmdbd (Soperator uses the same 5 minutes). */
export const ACCOUNTING_SKEW_MS = 5 * 60_000;

const JOB_FIELDS: InternFields<SlurmJob> = {
  strings: ['source', 'name', 'state_reason', 'state_description', 'partition', 'account', 'qos', 'user_name', 'group_name', 'mail_user',
    'standard_error', 'standard_output', 'nodes', 'tres_alloc_str', 'tres_req_str', 'array_job_id', 'array_task_id'],
  values: ['state', 'exit_code'],
};

const NODE_FIELDS: InternFields<SlurmNode> = {
  strings: ['reason', 'reason_set_by_user', 'comment', 'reservation', 'tres', 'tres_used', 'gres', 'gres_used', 'slurmd_version', 'specialized_cpus'],
  values: ['state', 'partitions', 'features'],
};

export function makeFetchers(o: FetcherOptions): Fetchers {
  const now = o.now ?? Date.now;
  const items = <T>(collector: SubCollector, result: CallResult<T>): readonly T[] => {
    const data = orThrow(result);
    if (data.skipped > 0) {
      o.onSkipped?.(collector, data.skipped);
      o.logger.warn({ collector, skipped: data.skipped, reasons: data.skip_reasons.slice(0, 3) }, 'malformed elements skipped');
    }
    return data.items;
  };
  const shared = <T extends object>(list: readonly T[], fields: InternFields<T>): readonly T[] => {
    internFields(list, fields);
    return list;
  };
  /** An optional sub-collector: on when the API has its call and the operator chose it. */
  const chosen = o.optional ?? DEFAULT_OPTIONAL_SUB_COLLECTORS;
  const optional = <K extends OptionalSubCollector, T>(name: K, call: ((opts?: CallOptions) => Promise<CallResult<T>>) | undefined) =>
    call === undefined || !chosen.includes(name) ? {} : { [name]: async (signal: AbortSignal) => items(name, await call({ signal })) };
  return {
    nodes: async (signal) => shared(items('nodes', await o.api.nodes({ signal })), NODE_FIELDS),
    ...optional('partitions', o.api.partitions?.bind(o.api)),
    ...optional('licenses', o.api.licenses?.bind(o.api)),
    ...optional('reservations', o.api.reservations?.bind(o.api)),
    ...optional('shares', o.api.shares?.bind(o.api)),
    ...(o.accountingLimits ? limitsFetcher(o.api, items) : {}),
    diag: async (signal) => {
      const [diag] = items('diag', await o.api.diag({ signal }));
      if (!diag) throw new Error('diag response carried no statistics');
      return diag;
    },
    jobs: async (signal) => {
      if (o.jobSource === 'controller') return shared(items('jobs', await o.api.jobs({ signal })), JOB_FIELDS);
      const t = now();
      const query = { cluster: o.clusterName, startTime: new Date(t - o.accountingLookbackMs), endTime: new Date(t + ACCOUNTING_SKEW_MS) };
      return adjustAccountingJobs(shared(items('jobs', await o.api.accountingJobs(query, { signal })), JOB_FIELDS), t);
    },
  };
}

type Items = <T>(collector: SubCollector, result: CallResult<T>) => readonly T[];

/** Both slurmdbd lists at once; either failing fails the run (and keeps the last good pair). */
function limitsFetcher(api: SlurmApi, items: Items): Pick<Fetchers, 'limits'> {
  const { qos, associations } = api;
  if (qos === undefined || associations === undefined) return {};
  return {
    limits: async (signal): Promise<SlurmAccountingLimits> => {
      const [q, a] = await Promise.all([qos.call(api, { signal }), associations.call(api, { signal })]);
      return { qos: items('limits', q), associations: items('limits', a) };
    },
  };
}
