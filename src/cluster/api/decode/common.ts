/**
 * Fields that have the same name and meaning in every API version, v0.0.36 to v0.0.45. The
 * decoder families add the fields that changed (state shapes, renamed memory and CPU fields,
 * exit codes, array ids) on top of these.
 *
 * Numbers go through the tolerant readers, which accept plain numbers and no-val structs alike:
 * that is what lets one reader serve v0.0.39 and v0.0.40, which disagree on which fields are
 * structs.
 */
import type { Decoded, ItemResult, PartitionPriority, RpcByMessageType, RpcByUser, SlurmDiag } from '../../model.js';
import { ItemCollector, notAnObject } from './envelope.js';
import { bool, count, field, idString, isRecord, num, strList, unixTime } from '../json/read.js';
import type { JsonRecord } from '../json/read.js';
import { arrayTaskExpression, cpuListCount, nodeListString, text, timeLimit } from './states.js';
import { tresListToString } from './decode-tres.js';

export const NOT_AN_OBJECT = { ok: false, reason: 'element is not an object' } as const;

/**
 * An element seen through the members a decoder reads: reading any other member does not type-check,
 * so the member lists below (which the stream reader uses to skip everything else) cannot fall
 * behind the decoders.
 */
export type Wire<K extends string> = { readonly [P in K]?: unknown };
export type MemberOf<L extends readonly string[]> = L[number];

export const NODE_COMMON_MEMBERS = [
  'address',
  'hostname',
  'instance_id',
  'reason',
  'reason_set_by_user',
  'reason_changed_at',
  'comment',
  'reservation',
  'partitions',
  'features',
  'cpus',
  'alloc_cpus',
  'specialized_cores',
  'specialized_cpus',
  'cpu_load',
  'real_memory',
  'alloc_memory',
  'specialized_memory',
  'tres',
  'tres_used',
  'gres',
  'gres_used',
  'boot_time',
  'last_busy',
  'slurmd_start_time',
] as const;

/** Node fields common to all versions (v0.0.36 lacks some of them: they read as undefined). */
export function nodeCommon(v: Wire<MemberOf<typeof NODE_COMMON_MEMBERS>>) {
  const specialized = v['specialized_cpus'];
  return {
    address: text(v['address']),
    hostname: text(v['hostname']),
    instance_id: text(v['instance_id']),
    reason: text(v['reason']),
    reason_set_by_user: text(v['reason_set_by_user']),
    reason_changed_at: unixTime(v['reason_changed_at']),
    comment: text(v['comment']),
    reservation: text(v['reservation']),
    partitions: strList(v['partitions']),
    features: strList(v['features']),
    cpus: count(v['cpus']),
    alloc_cpus: count(v['alloc_cpus']),
    specialized_cores: count(v['specialized_cores']),
    specialized_cpus: text(specialized),
    specialized_cpus_count: typeof specialized === 'string' ? cpuListCount(specialized) : undefined,
    cpu_load: num(v['cpu_load']),
    real_memory: count(v['real_memory']),
    alloc_memory: count(v['alloc_memory']),
    specialized_memory: count(v['specialized_memory']),
    tres: text(v['tres']),
    tres_used: text(v['tres_used']),
    gres: text(v['gres']),
    gres_used: text(v['gres_used']),
    boot_time: unixTime(v['boot_time']),
    last_busy: unixTime(v['last_busy']),
    slurmd_start_time: unixTime(v['slurmd_start_time']),
  };
}

export const JOB_COMMON_MEMBERS = [
  'name',
  'state_reason',
  'state_description',
  'partition',
  'account',
  'qos',
  'user_name',
  'user_id',
  'group_name',
  'mail_user',
  'standard_error',
  'standard_output',
  'restart_cnt',
  'submit_time',
  'eligible_time',
  'start_time',
  'end_time',
  'time_limit',
  'nodes',
  'cpus',
  'node_count',
  'max_nodes',
  'memory_per_node',
  'memory_per_cpu',
  'tres_alloc_str',
  'tres_req_str',
  'last_sched_evaluation',
  'priority_by_partition',
] as const;

/** Controller job fields common to all versions. */
export function jobCommon(v: Wire<MemberOf<typeof JOB_COMMON_MEMBERS>>) {
  return {
    name: text(v['name']),
    state_reason: text(v['state_reason']),
    state_description: text(v['state_description']),
    partition: text(v['partition']),
    account: text(v['account']),
    qos: text(v['qos']),
    // Soperator's fallback: the group name stands in when slurmctld sends no user name.
    user_name: v['user_name'] == null ? text(v['group_name']) : text(v['user_name']),
    user_id: count(v['user_id']),
    group_name: text(v['group_name']),
    mail_user: text(v['mail_user']),
    standard_error: text(v['standard_error']),
    standard_output: text(v['standard_output']),
    restart_cnt: count(v['restart_cnt']),
    submit_time: unixTime(v['submit_time']),
    eligible_time: unixTime(v['eligible_time']),
    start_time: unixTime(v['start_time']),
    end_time: unixTime(v['end_time']),
    ...timeLimit(v['time_limit']),
    nodes: nodeListString(v['nodes']),
    cpus: count(v['cpus'], { u32: true }),
    node_count: count(v['node_count'], { u32: true }),
    max_nodes: count(v['max_nodes'], { u32: true }),
    memory_per_node: count(v['memory_per_node']),
    memory_per_cpu: count(v['memory_per_cpu']),
    tres_alloc_str: text(v['tres_alloc_str']),
    tres_req_str: text(v['tres_req_str']),
    last_sched_evaluation: unixTime(v['last_sched_evaluation']),
    ...partitionPriorities(v['priority_by_partition']),
  };
}

/** `priority_by_partition` (v0.0.42+): `[{partition, priority}]`, in slurmctld's order; malformed entries dropped. */
function partitionPriorities(v: unknown): { priority_by_partition?: PartitionPriority[] } {
  if (!Array.isArray(v) || v.length === 0) return {};
  const out: PartitionPriority[] = [];
  for (const e of v as unknown[]) {
    const partition = text(field(e, 'partition'));
    const priority = count(field(e, 'priority'), { u32: true });
    if (partition !== undefined && partition !== '' && priority !== undefined) out.push({ partition, priority });
  }
  return out.length ? { priority_by_partition: out } : {};
}

/**
 * Controller array identity: a running task has its own `array_task_id`; the pending master
 * record has none and lists its remaining tasks in `array_task_string` (`4-7%4`).
 */
export const JOB_ARRAY_MEMBERS = ['array_job_id', 'array_task_id', 'array_task_string'] as const;

export function jobArray(v: Wire<MemberOf<typeof JOB_ARRAY_MEMBERS>>): {
  array_job_id?: string;
  array_task_id?: string;
} {
  // A job outside any array has array_job_id 0, kept as "0" as slurmctld sends it (and Soperator exports it).
  // Each member stands alone: a task id without an array job id is still exported (as Soperator does).
  const arrayJobId = jobIdText(v['array_job_id']);
  const taskId = count(v['array_task_id'], { u32: true });
  const taskText = taskId !== undefined ? String(taskId) : text(v['array_task_string']);
  return {
    ...(arrayJobId !== undefined ? { array_job_id: arrayJobId } : {}),
    ...(taskText !== undefined ? { array_task_id: taskText } : {}),
  };
}

/**
 * An array job id as text: a number, maybe in a `{set, number}` struct, or the digits of one too
 * large for a double (quoted by the stream reader). 0 (a job outside any array) stays "0"; the
 * uint32 sentinels and an unset struct mean "not reported".
 */
function jobIdText(v: unknown): string | undefined {
  const raw = isRecord(v) && v['set'] === true && v['infinite'] !== true ? v['number'] : v;
  if (typeof raw === 'string') return /^(0|[1-9]\d*)$/.test(raw) ? raw : undefined;
  const n = count(raw, { u32: true });
  return n === undefined ? undefined : String(n);
}

/**
 * slurmdbd array identity: a task row has `task_id`; a pending master record has none and holds
 * its tasks in `task` (a range expression; older slurmdbd a hex bitmap, converted).
 */
export function accountingArray(array: unknown): { array_job_id?: string; array_task_id?: string } {
  const arrayJobId = jobIdText(field(array, 'job_id'));
  if (arrayJobId === undefined) return {};
  const taskId = count(field(array, 'task_id'), { u32: true });
  const task = text(field(array, 'task'));
  const taskExpr = task === undefined ? undefined : arrayTaskExpression(task);
  return { array_job_id: arrayJobId, array_task_id: taskId !== undefined ? String(taskId) : taskExpr };
}

export const ACCOUNTING_COMMON_MEMBERS = [
  'name',
  'state',
  'partition',
  'account',
  'qos',
  'user',
  'association',
  'group',
  'restart_cnt',
  'time',
  'nodes',
  'allocation_nodes',
  'tres',
] as const;

/** slurmdbd job fields common to all versions. */
export function accountingCommon(v: Wire<MemberOf<typeof ACCOUNTING_COMMON_MEMBERS>>) {
  const time = v['time'];
  const tres = v['tres'];
  return {
    name: text(v['name']),
    // slurmdbd keeps the reason of the last transition, not the live pending reason.
    state_reason: text(field(v['state'], 'reason')),
    partition: text(v['partition']),
    account: text(v['account']),
    qos: text(v['qos']),
    // Soperator's fallback: the association's user when the row has none.
    user_name: v['user'] == null ? text(field(v['association'], 'user')) : text(v['user']),
    group_name: text(v['group']),
    restart_cnt: count(v['restart_cnt']),
    submit_time: unixTime(field(time, 'submission')),
    eligible_time: unixTime(field(time, 'eligible')),
    start_time: unixTime(field(time, 'start')),
    end_time: unixTime(field(time, 'end')),
    ...timeLimit(field(time, 'limit')),
    nodes: nodeListString(v['nodes']),
    node_count: count(v['allocation_nodes'], { u32: true }),
    tres_alloc_str: tresListToString(field(tres, 'allocated')),
    tres_req_str: tresListToString(field(tres, 'requested')),
  };
}

function decodeRpcType(v: unknown): ItemResult<RpcByMessageType> {
  if (!isRecord(v)) return NOT_AN_OBJECT;
  const messageType = text(v['message_type']);
  const n = count(v['count']);
  const total = count(v['total_time']);
  if (messageType === undefined || n === undefined || total === undefined) {
    return { ok: false, reason: 'RPC type row without message_type, count or total_time' };
  }
  const row = {
    message_type: messageType,
    type_id: count(v['type_id']),
    count: n,
    total_time_us: total,
    average_time_us: count(v['average_time']),
  };
  return { ok: true, item: row };
}

function decodeRpcUser(v: unknown): ItemResult<RpcByUser> {
  if (!isRecord(v)) return NOT_AN_OBJECT;
  const user = text(v['user']) ?? idString(v['user_id']);
  const n = count(v['count']);
  const total = count(v['total_time']);
  if (user === undefined || n === undefined || total === undefined) {
    return { ok: false, reason: 'RPC user row without user, count or total_time' };
  }
  const row = {
    user,
    user_id: count(v['user_id']),
    count: n,
    total_time_us: total,
    average_time_us: count(v['average_time']),
  };
  return { ok: true, item: row };
}

const DIAG_SCALARS = [
  'server_thread_count',
  'agent_queue_size',
  'agent_count',
  'agent_thread_count',
  'dbd_agent_queue_size',
  'jobs_submitted',
  'jobs_started',
  'jobs_completed',
  'jobs_canceled',
  'jobs_failed',
  'jobs_pending',
  'jobs_running',
  'schedule_cycle_max',
  'schedule_cycle_last',
  'schedule_cycle_sum',
  'schedule_cycle_total',
  'schedule_cycle_mean',
  'schedule_cycle_mean_depth',
  'schedule_cycle_per_minute',
  'schedule_queue_length',
  'bf_backfilled_jobs',
  'bf_cycle_counter',
  'bf_cycle_mean',
  'bf_cycle_last',
  'bf_cycle_max',
  'bf_queue_len',
  'bf_backfilled_het_jobs',
  'bf_last_backfilled_jobs',
  'bf_depth_mean',
  'bf_depth_mean_try',
  'bf_last_depth',
  'bf_last_depth_try',
  'bf_queue_len_mean',
  'bf_table_size',
  'bf_table_size_mean',
  'bf_when_last_cycle',
  'bf_cycle_sum',
  'bf_depth_sum',
  'bf_depth_try_sum',
  'bf_queue_len_sum',
  'bf_table_size_sum',
  'schedule_cycle_depth',
  'job_states_ts',
  'gettimeofday_latency',
] as const satisfies readonly (keyof SlurmDiag)[];

type DiagScalars = { -readonly [K in (typeof DIAG_SCALARS)[number]]?: number };

function diagScalars(stats: JsonRecord): DiagScalars {
  const out: DiagScalars = {};
  for (const k of DIAG_SCALARS) {
    const n = count(stats[k]);
    if (n !== undefined) out[k] = n;
  }
  return out;
}

/** A `schedule_exit` / `bf_exit` block (v0.0.40+) as reason → count; nothing when absent. */
function exitCounts(
  key: 'schedule_exit' | 'bf_exit',
  v: unknown,
): { schedule_exit?: Record<string, number>; bf_exit?: Record<string, number> } {
  if (!isRecord(v)) return {};
  const out: Record<string, number> = {};
  for (const [reason, n] of Object.entries(v)) {
    const c = count(n);
    if (c !== undefined) out[reason] = c;
  }
  return { [key]: out };
}

function rows<T>(v: unknown, decode: (e: unknown) => ItemResult<T>, where: string, skipped: string[]): T[] {
  const out: T[] = [];
  if (!Array.isArray(v)) return out;
  v.forEach((e, i) => {
    const r = decode(e);
    if (r.ok) out.push(r.item);
    else skipped.push(`${where}[${i}]: ${r.reason}`);
  });
  return out;
}

/**
 * A diag response. Its shape is the same in every version apart from number forms (`average_time`
 * and the times became structs in v0.0.41) and fields added over time (`schedule_cycle_sum`,
 * 64-bit from v0.0.44), which the tolerant readers absorb. v0.0.36/v0.0.37 have no RPC tables.
 * Skipped RPC rows are counted like skipped list elements; the one diag is the single item.
 */
export function decodeDiag(body: unknown): Decoded<SlurmDiag> {
  if (!isRecord(body)) return notAnObject(body, 'diag');
  const stats = body['statistics'];
  const collector = new ItemCollector<SlurmDiag>();
  if (isRecord(stats)) {
    const skipped: string[] = [];
    const diag: SlurmDiag = {
      ...diagScalars(stats),
      req_time: unixTime(stats['req_time']),
      req_time_start: unixTime(stats['req_time_start']),
      bf_active: bool(stats['bf_active']),
      ...exitCounts('schedule_exit', stats['schedule_exit']),
      ...exitCounts('bf_exit', stats['bf_exit']),
      rpcs_by_message_type: rows(stats['rpcs_by_message_type'], decodeRpcType, 'rpcs_by_message_type', skipped),
      rpcs_by_user: rows(stats['rpcs_by_user'], decodeRpcUser, 'rpcs_by_user', skipped),
    };
    for (const reason of skipped) collector.skip(reason);
    collector.add({ ok: true, item: diag });
  }
  return collector.finish(body, isRecord(stats), 'diag');
}
