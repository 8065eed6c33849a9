/**
 * Version-free model of what the cluster agent reads from slurmrestd.
 *
 * Every decoder (one per API family under ./api/) maps its wire shape onto these types, so the
 * collectors, the state machine and the rules never see an API version. The types are plain,
 * immutable-by-convention data: no classes, no Sets/Maps, so a snapshot can be compared,
 * logged and serialised as it is.
 *
 * Conventions:
 * - Field names follow Slurm's own (snake_case) so they read like the labels they become.
 * - Every field Slurm may omit is optional. `undefined` means "not reported / unset / NO_VAL";
 *   decoders never invent a 0 for a missing number.
 * - Memory is in MiB exactly as Slurm reports it (`real_memory`, `alloc_memory`, ...); callers
 *   convert to bytes (× 1024²) at the edge.
 * - Times are Unix seconds. A time that Slurm reports as 0, NO_VAL or INFINITE is `undefined`.
 * - Numbers that may exceed 2^32 (e.g. `schedule_cycle_sum`, RPC `total_time`) stay JS numbers;
 *   they are exact up to 2^53, far beyond what a controller accumulates.
 */

/** Node base states Slurm encodes in the low bits of a node state (slurm.h `node_states`). */
export const NODE_BASE_STATES = ['UNKNOWN', 'DOWN', 'IDLE', 'ALLOCATED', 'ERROR', 'MIXED', 'FUTURE'] as const;
export type NodeBaseState = (typeof NODE_BASE_STATES)[number];

/**
 * A node state split into its base state and its flags.
 *
 * `base` is one of NODE_BASE_STATES; `flags` holds every other word Slurm sent, upper-cased and
 * de-duplicated, in the order received. Unknown words (flags added by newer Slurm releases such as
 * `BLOCKED` or `EXTERNAL`) are kept verbatim: the rules decide what they mean, the decoder never
 * drops or rejects them.
 */
export interface NodeState {
  readonly base: NodeBaseState;
  readonly flags: readonly string[];
}

/** One node, as reported by `GET /slurm/vX/nodes/`. */
export interface SlurmNode {
  readonly name: string;
  readonly address?: string;
  readonly hostname?: string;
  /** Cloud instance behind the node (v0.0.40+, e.g. `computeinstance-…` on Soperator). */
  readonly instance_id?: string;
  readonly state: NodeState;
  /** Reason set with the last DOWN/DRAIN; empty or undefined when none. */
  readonly reason?: string;
  readonly reason_set_by_user?: string;
  readonly reason_changed_at?: number;
  readonly comment?: string;
  readonly reservation?: string;
  /** Partitions the node belongs to (empty when the API version does not report them, v0.0.36). */
  readonly partitions: readonly string[];
  readonly features?: readonly string[];
  readonly cpus?: number;
  readonly alloc_cpus?: number;
  /** Idle CPUs as reported by Slurm (`alloc_idle_cpus` from v0.0.40, `idle_cpus` before). */
  readonly alloc_idle_cpus?: number;
  /** CPUs usable by jobs (v0.0.40+); Slurm computes it as cpus minus specialized CPUs. */
  readonly effective_cpus?: number;
  /** Number of cores reserved for system use (`CoreSpecCount`). */
  readonly specialized_cores?: number;
  /** Abstract CPU ids reserved for system use (`CpuSpecList`), raw, e.g. `0-1,32`. */
  readonly specialized_cpus?: string;
  /** Count of CPUs in `specialized_cpus` (undefined when the list is absent or unreadable). */
  readonly specialized_cpus_count?: number;
  /** CPU load × 100, as slurmd reports it. */
  readonly cpu_load?: number;
  /** MiB. */
  readonly real_memory?: number;
  /** MiB. */
  readonly alloc_memory?: number;
  /** MiB (`free_mem` from v0.0.40, `free_memory` before). */
  readonly free_mem?: number;
  /** MiB reserved for system use (`MemSpecLimit`). */
  readonly specialized_memory?: number;
  /** Configured TRES, e.g. `cpu=8,mem=1G,billing=8,gres/gpu=2`. */
  readonly tres?: string;
  /** TRES in use; undefined when the node is idle (Slurm sends null or ""). */
  readonly tres_used?: string;
  readonly gres?: string;
  readonly gres_used?: string;
  readonly boot_time?: number;
  readonly last_busy?: number;
  readonly slurmd_start_time?: number;
  readonly slurmd_version?: string;
}

/**
 * Where a Slurm node runs on Kubernetes (Soperator): its NodeSet (a label of its worker pod, known
 * before the pod is scheduled) and NVLink instance group (a label of the Kubernetes Node the pod
 * runs on); each "" when unknown.
 */
export interface NodeTopology {
  readonly nodesetName: string;
  readonly nvlinkInstanceGroup: string;
}

/** One partition, as reported by `GET /slurm/vX/partitions/`. */
export interface SlurmPartition {
  readonly name: string;
  /** The partition's configured hostlist (`node[1-2]`); empty when it has none. */
  readonly nodes: string;
  readonly total_nodes?: number;
  readonly total_cpus?: number;
  /** Configured TRES, e.g. `cpu=8,mem=16000M,node=2,billing=8`. */
  readonly tres?: string;
  /** PriorityTier: slurmctld tries a job submitted to several partitions in the higher tiers first. */
  readonly priority_tier?: number;
}

/** A pending job's priority in one of the partitions it was submitted to (v0.0.42+). */
export interface PartitionPriority {
  readonly partition: string;
  readonly priority: number;
}

/** One license pool, as reported by `GET /slurm/vX/licenses/` (same shape in every version). */
export interface SlurmLicense {
  readonly name: string;
  readonly total?: number;
  readonly used?: number;
  readonly free?: number;
  readonly reserved?: number;
  /** Served by slurmdbd (`sacctmgr add resource`) rather than slurm.conf. */
  readonly remote?: boolean;
}

/** One reservation, as reported by `GET /slurm/vX/reservations/` (same members in every version). */
export interface SlurmReservation {
  readonly name: string;
  readonly partition?: string;
  /** Upper-cased, e.g. `["MAINT","IGNORE_JOBS"]`. */
  readonly flags: readonly string[];
  /** Unix seconds. */
  readonly start_time?: number;
  readonly end_time?: number;
  /** The reserved nodes' hostlist; empty when none. */
  readonly node_list: string;
  readonly node_count?: number;
  readonly core_count?: number;
  readonly users?: string;
  readonly accounts?: string;
}

/** One row of sshare (`GET /slurm/vX/shares`, v0.0.40+): an account, or a user under an account. */
export interface SlurmShare {
  /** The account (ASSOCIATION rows) or the user (USER rows). */
  readonly name: string;
  /** The parent account; for a USER row, the account the user is in. */
  readonly parent: string;
  readonly partition: string;
  readonly kind: 'user' | 'account';
  readonly shares?: number;
  readonly shares_normalized?: number;
  readonly usage?: number;
  readonly usage_normalized?: number;
  readonly effective_usage?: number;
  readonly fairshare_factor?: number;
  readonly fairshare_level?: number;
}

/** A TRES limit: `cpu`, `mem` (MiB), `node`, `gres/gpu`, ... and its count. */
export interface TresLimit {
  readonly limit: string;
  readonly tres: string;
  readonly count: number;
}

/** The limits set on a QoS or an association (slurmdbd), by sacctmgr's names in snake case; unset ones left out. */
export interface SlurmLimits {
  readonly values: Readonly<Record<string, number>>;
  readonly tres: readonly TresLimit[];
}

export interface SlurmQosLimits extends SlurmLimits {
  readonly qos: string;
}

export interface SlurmAssociationLimits extends SlurmLimits {
  readonly account: string;
  /** Empty for an account's own association. */
  readonly user: string;
  readonly partition: string;
}

/** What the limits sub-collector reads from slurmdbd. */
export interface SlurmAccountingLimits {
  readonly qos: readonly SlurmQosLimits[];
  readonly associations: readonly SlurmAssociationLimits[];
}

/** Exit status of a job as Slurm reports it. */
export interface JobExitCode {
  /** Slurm's verdict words, e.g. `["SUCCESS"]`, `["ERROR"]`, `["SIGNALED"]`. */
  readonly status: readonly string[];
  /** Process exit status (0–255) when the job exited normally. */
  readonly return_code?: number;
  /** Signal number when the job was killed by a signal. */
  readonly signal?: number;
  readonly signal_name?: string;
}

/** Where a job record came from: slurmctld (`/slurm/vX/jobs/`) or slurmdbd (`/slurmdb/vX/jobs/`). */
export type JobSource = 'controller' | 'accounting';

/** One job (or one array task, or one pending array master record). */
export interface SlurmJob {
  readonly source: JobSource;
  /** Job id as a string: it is an identifier and a label value, never arithmetic. */
  readonly job_id: string;
  readonly name?: string;
  /**
   * Job state words, base state first (e.g. `["RUNNING"]`, `["PENDING","REQUEUED"]`).
   * Empty when Slurm sent none. Unknown words (e.g. `EXPEDITING`) are kept, upper-cased.
   */
  readonly state: readonly string[];
  /** Why the job is in its state (`Resources`, `Priority`, `None`, ...). */
  readonly state_reason?: string;
  /**
   * Slurm's longer explanation when it has one (e.g. "Nodes required for job are DOWN, DRAINED
   * ..." while `state_reason` says `Resources`); squeue prints this instead of the reason.
   */
  readonly state_description?: string;
  readonly partition?: string;
  readonly account?: string;
  readonly qos?: string;
  readonly user_name?: string;
  /** Numeric uid; undefined on the accounting path, which only reports the user name. */
  readonly user_id?: number;
  readonly group_name?: string;
  readonly mail_user?: string;
  readonly standard_error?: string;
  readonly standard_output?: string;
  /** Array master job id; undefined for jobs that are not part of an array. */
  readonly array_job_id?: string;
  /**
   * Array task identity: a single index (`"3"`) for a task that runs on its own, or a range
   * expression (`"4-7%4"`, `"1,3,5-9:2"`) for a pending master record holding several tasks.
   */
  readonly array_task_id?: string;
  readonly submit_time?: number;
  readonly eligible_time?: number;
  readonly start_time?: number;
  /** For RUNNING jobs on the controller path this is Slurm's forecast (start + time limit). */
  readonly end_time?: number;
  /** Minutes; undefined when unset or unlimited (see `time_limit_unlimited`). */
  readonly time_limit?: number;
  /** True when Slurm reported the limit as INFINITE (`--time=UNLIMITED`). */
  readonly time_limit_unlimited?: boolean;
  /** Raw Slurm hostlist (`worker-[1,0]`); empty when no node is assigned yet. */
  readonly nodes: string;
  /**
   * The GRES Slurm gave the job on each of its nodes, one string per node in the order `nodes`
   * lists them (`gpu:h100:2(IDX:0-1)`; empty for a node without GRES), as sent: read by
   * api/decode/gres-detail.ts. Controller only; undefined when the response has no such member.
   */
  readonly gres_detail?: readonly string[];
  readonly cpus?: number;
  readonly node_count?: number;
  /** The most nodes asked for (`-N 2-4`: 4); 0 when no maximum was given. Controller only. */
  readonly max_nodes?: number;
  /** MiB. */
  readonly memory_per_node?: number;
  /** MiB. */
  readonly memory_per_cpu?: number;
  /** Allocated TRES in Slurm's string form: `cpu=4,mem=8G,node=1,billing=4,gres/gpu=2`. */
  readonly tres_alloc_str?: string;
  /** Requested TRES in Slurm's string form. */
  readonly tres_req_str?: string;
  readonly exit_code?: JobExitCode;
  readonly restart_cnt?: number;
  /**
   * When slurmctld last evaluated the job (Unix seconds): stamped at submission, then by each
   * scheduler pass that tries it. Controller only.
   */
  readonly last_sched_evaluation?: number;
  /**
   * A pending job's priority in each partition it may run in, in slurmctld's own order of its
   * partitions (highest tier first). Controller, v0.0.42+; absent or empty otherwise.
   */
  readonly priority_by_partition?: readonly PartitionPriority[];
}

/** One row of sdiag's "Remote Procedure Call statistics by message type". */
export interface RpcByMessageType {
  readonly message_type: string;
  readonly type_id?: number;
  readonly count: number;
  /** Total processing time, microseconds. */
  readonly total_time_us: number;
  readonly average_time_us?: number;
}

/** One row of sdiag's "Remote Procedure Call statistics by user". */
export interface RpcByUser {
  readonly user: string;
  readonly user_id?: number;
  readonly count: number;
  /** Total processing time, microseconds. */
  readonly total_time_us: number;
  readonly average_time_us?: number;
}

/** Controller diagnostics (`GET /slurm/vX/diag/`, the data behind `sdiag`). */
export interface SlurmDiag {
  readonly server_thread_count?: number;
  readonly agent_queue_size?: number;
  readonly agent_count?: number;
  readonly agent_thread_count?: number;
  readonly dbd_agent_queue_size?: number;
  /** When the statistics were taken / last reset (Unix seconds). */
  readonly req_time?: number;
  readonly req_time_start?: number;
  readonly jobs_submitted?: number;
  readonly jobs_started?: number;
  readonly jobs_completed?: number;
  readonly jobs_canceled?: number;
  readonly jobs_failed?: number;
  readonly jobs_pending?: number;
  readonly jobs_running?: number;
  /** Main scheduler, microseconds except the counters. */
  readonly schedule_cycle_max?: number;
  readonly schedule_cycle_last?: number;
  readonly schedule_cycle_sum?: number;
  readonly schedule_cycle_total?: number;
  readonly schedule_cycle_mean?: number;
  readonly schedule_cycle_mean_depth?: number;
  readonly schedule_cycle_per_minute?: number;
  readonly schedule_queue_length?: number;
  /** Backfill scheduler. */
  readonly bf_backfilled_jobs?: number;
  readonly bf_cycle_counter?: number;
  readonly bf_cycle_mean?: number;
  readonly bf_cycle_last?: number;
  readonly bf_cycle_max?: number;
  readonly bf_queue_len?: number;
  readonly bf_active?: boolean;
  /** Backfill and housekeeping figures slurmctld's own metrics also serve (v0.0.38 unless noted). */
  readonly bf_backfilled_het_jobs?: number;
  readonly bf_last_backfilled_jobs?: number;
  readonly bf_depth_mean?: number;
  readonly bf_depth_mean_try?: number;
  readonly bf_last_depth?: number;
  readonly bf_last_depth_try?: number;
  readonly bf_queue_len_mean?: number;
  readonly bf_table_size?: number;
  readonly bf_table_size_mean?: number;
  readonly bf_when_last_cycle?: number;
  /** Running totals: v0.0.40+ (`bf_table_size_sum`, `schedule_cycle_depth` v0.0.41+). */
  readonly bf_cycle_sum?: number;
  readonly bf_depth_sum?: number;
  readonly bf_depth_try_sum?: number;
  readonly bf_queue_len_sum?: number;
  readonly bf_table_size_sum?: number;
  readonly schedule_cycle_depth?: number;
  readonly job_states_ts?: number;
  readonly gettimeofday_latency?: number;
  /** Why scheduling cycles ended, by Slurm's reason key (`end_job_queue`, `licenses`, ...): v0.0.40+. */
  readonly schedule_exit?: Readonly<Record<string, number>>;
  /** Why backfill cycles ended (`end_job_queue`, `bf_max_time`, ...): v0.0.40+. */
  readonly bf_exit?: Readonly<Record<string, number>>;
  readonly rpcs_by_message_type: readonly RpcByMessageType[];
  readonly rpcs_by_user: readonly RpcByUser[];
}

/** What a response says about the server that produced it. */
export interface ResponseMeta {
  /** e.g. `data_parser/v0.0.44` (v0.0.40+); for v0.0.36–v0.0.38 the `openapi/v0.0.38` plugin type. */
  readonly data_parser?: string;
  /** e.g. `25.11.5`. */
  readonly slurm_release?: string;
  readonly cluster?: string;
}

/** One entry of a response's `errors[]` (or `warnings[]`), normalised across versions. */
export interface ApiMessage {
  readonly error?: string;
  readonly error_number?: number;
  readonly description?: string;
  readonly source?: string;
}

/** An element the decoder could not use, with a short human reason. */
export interface SkippedItem {
  /** Position in the response array (or in the stream). */
  readonly index: number;
  readonly reason: string;
}

/** Why a whole response could not be used. */
export type DecodeFailureKind =
  /** The body is not a JSON object at all (an HTML error page, a bare string, null). */
  | 'not_an_object'
  /** Slurm answered with a non-empty `errors[]` and no data. */
  | 'api_errors'
  /** A JSON object without the expected member (e.g. no `nodes` array). */
  | 'missing_data'
  /** A streamed body that is not well-formed JSON at the top level, or was cut short. */
  | 'malformed_json';

export interface DecodedOk<T> {
  readonly ok: true;
  readonly items: readonly T[];
  /** Number of elements skipped as malformed. */
  readonly skipped: number;
  /** Reasons for the first skipped elements (capped, so a bad response cannot balloon memory). */
  readonly skip_reasons: readonly SkippedItem[];
  readonly meta: ResponseMeta;
  /** Non-fatal `errors[]` that came along with data (or a benign "nothing found"). */
  readonly errors: readonly ApiMessage[];
  readonly warnings: readonly ApiMessage[];
}

export interface DecodedError {
  readonly ok: false;
  readonly kind: DecodeFailureKind;
  /** One line, suitable for a log message. */
  readonly message: string;
  readonly errors: readonly ApiMessage[];
  readonly meta: ResponseMeta;
}

/** The result of decoding one response. Decoders never throw on bad data; they return this. */
export type Decoded<T> = DecodedOk<T> | DecodedError;

/** The result of decoding a single array element (used by the streaming reader). */
export type ItemResult<T> = { readonly ok: true; readonly item: T } | { readonly ok: false; readonly reason: string };

/** Job base states (slurm.h `job_states`), used to put the base word first. */
export const JOB_BASE_STATES = [
  'PENDING',
  'RUNNING',
  'SUSPENDED',
  'COMPLETED',
  'CANCELLED',
  'FAILED',
  'TIMEOUT',
  'NODE_FAIL',
  'PREEMPTED',
  'BOOT_FAIL',
  'DEADLINE',
  'OUT_OF_MEMORY',
] as const;

/** States after which a job will not run again (its end_time is a real end, not a forecast). */
export const JOB_TERMINAL_STATES: ReadonlySet<string> = new Set([
  'COMPLETED',
  'CANCELLED',
  'FAILED',
  'TIMEOUT',
  'NODE_FAIL',
  'PREEMPTED',
  'BOOT_FAIL',
  'DEADLINE',
  'OUT_OF_MEMORY',
]);

/** The base state of a job (first word), or `UNKNOWN` when Slurm sent none. */
export function jobBaseState(job: Pick<SlurmJob, 'state'>): string {
  return job.state[0] ?? 'UNKNOWN';
}
