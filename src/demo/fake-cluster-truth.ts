/**
 * The fake cluster's state in the model's terms (src/cluster/model.ts): what a correct decoder
 * must produce from any rendering of it. Fields a given API version cannot carry are removed by
 * `truthSeenThrough` in slurm-render.ts, next to the renderers that lose them.
 */
import type { JobExitCode, RpcByMessageType, RpcByUser, SlurmDiag, SlurmJob, SlurmNode } from '../cluster/model.js';
import type { ClusterView, FakeDiag, FakeJob, FakeNode, RpcTypeCounter, RpcUserCounter } from './fake-cluster-types.js';
import {
  arrayTaskString,
  isTerminal,
  jobCpus,
  jobReqTres,
  nodeGres,
  nodeGresUsed,
  nodeStateOf,
  nodeTres,
  nodeTresUsed,
  taskRanges,
} from './fake-cluster-types.js';

/** CPUs the fake nodes keep for the system (CpuSpecList `0-1`). */
export const SPECIALIZED_CPUS = '0-1';
export const SPECIALIZED_CPU_COUNT = 2;
export const SPECIALIZED_MEMORY_MIB = 8192;
/** Main scheduler cycles per minute: one per simulation tick. */
export const SCHEDULE_CYCLES_PER_MINUTE = 6;

const SIGTERM = 15;

function orUndefined<T>(v: T, empty: T): T | undefined {
  return v === empty ? undefined : v;
}

export function nodeTruth(n: FakeNode): SlurmNode {
  const hasReason = n.reason !== '';
  return {
    name: n.name,
    address: n.address,
    hostname: n.name,
    state: nodeStateOf(n),
    reason: hasReason ? n.reason : undefined,
    reason_set_by_user: hasReason ? n.reasonSetBy : undefined,
    reason_changed_at: hasReason ? n.reasonChangedAt : undefined,
    partitions: [n.partition],
    features: n.features,
    cpus: n.cpus,
    alloc_cpus: n.allocCpus,
    alloc_idle_cpus: n.cpus - n.allocCpus,
    effective_cpus: n.cpus - SPECIALIZED_CPU_COUNT,
    specialized_cpus: SPECIALIZED_CPUS,
    specialized_cpus_count: SPECIALIZED_CPU_COUNT,
    cpu_load: n.cpuLoad,
    real_memory: n.realMemoryMiB,
    alloc_memory: n.allocMemoryMiB,
    free_mem: n.freeMemMiB,
    specialized_memory: SPECIALIZED_MEMORY_MIB,
    tres: nodeTres(n),
    tres_used: orUndefined(nodeTresUsed(n), ''),
    gres: orUndefined(nodeGres(n), ''),
    gres_used: orUndefined(nodeGresUsed(n), ''),
    boot_time: n.bootTime,
    last_busy: n.lastBusy,
    slurmd_start_time: n.slurmdStartTime,
  };
}

/** Exit code words as the v0.0.4x parsers print them; PENDING while the job has not ended. */
export function exitCodeTruth(j: FakeJob): JobExitCode {
  if (!isTerminal(j)) return { status: ['PENDING'] };
  if (j.state === 'CANCELLED' || j.state === 'TIMEOUT')
    return { status: ['SIGNALED'], signal: SIGTERM, signal_name: 'SIGTERM' };
  if (j.state === 'FAILED') return { status: ['ERROR'], return_code: j.exitStatus };
  return { status: ['SUCCESS'], return_code: 0 };
}

function timeLimitTruth(j: FakeJob): { time_limit?: number; time_limit_unlimited?: boolean } {
  return j.timeLimitMin === 'UNLIMITED' ? { time_limit_unlimited: true } : { time_limit: j.timeLimitMin };
}

function arrayTruth(j: FakeJob, withLimit: boolean): { array_job_id?: string; array_task_id?: string } {
  const a = j.array;
  if (a === undefined) return {};
  const task =
    a.taskId !== undefined ? String(a.taskId) : withLimit ? arrayTaskString(j) : taskRanges(a.pendingTasks ?? []);
  return { array_job_id: String(a.jobId), array_task_id: task };
}

function commonJobTruth(j: FakeJob) {
  return {
    job_id: String(j.id),
    name: j.name,
    state: [j.state],
    state_reason: j.reason,
    partition: j.partition,
    account: j.user.account,
    qos: 'normal',
    user_name: j.user.name,
    group_name: j.user.name,
    submit_time: j.submitTime,
    eligible_time: j.eligibleTime,
    start_time: orUndefined(j.startTime, 0),
    ...timeLimitTruth(j),
    nodes: j.nodeList,
    node_count: j.nodeCount,
    memory_per_node: j.memPerNodeMiB,
    restart_cnt: j.restartCnt,
    exit_code: exitCodeTruth(j),
  };
}

/** Paths slurmctld reports; slurmdbd reports the unexpanded `%j` pattern instead. */
export function stdoutPath(j: FakeJob, expanded: boolean): string {
  return `/home/${j.user.name}/slurm-${expanded ? j.id : '%j'}.out`;
}

export function controllerJobTruth(j: FakeJob): SlurmJob {
  return {
    source: 'controller',
    ...commonJobTruth(j),
    ...arrayTruth(j, true),
    user_id: j.user.uid,
    mail_user: j.user.name,
    standard_output: stdoutPath(j, true),
    standard_error: stdoutPath(j, true),
    // While running, end_time is Slurm's forecast (start + limit, or + 1 year when unlimited).
    end_time: orUndefined(j.endTime, 0),
    cpus: jobCpus(j),
    tres_req_str: jobReqTres(j),
    tres_alloc_str: orUndefined(j.allocTres, ''),
  };
}

/** One slurmdbd TRES entry. Ids are the usual ones of a fresh slurmdbd (gres get 1001+). */
export interface TresEntry {
  readonly type: string;
  readonly name: string;
  readonly id: number;
  readonly count: number;
}

/** The TRES arrays slurmdbd returns: requested always, allocated once the job was allocated. */
export function tresEntries(j: FakeJob, which: 'requested' | 'allocated', gpuType: string): TresEntry[] {
  if (which === 'allocated' && j.allocTres === '') return [];
  const cpus = jobCpus(j);
  const gpus = j.gpusPerNode * j.nodeCount;
  const out: TresEntry[] = [
    { type: 'cpu', name: '', id: 1, count: cpus },
    { type: 'mem', name: '', id: 2, count: j.memPerNodeMiB * j.nodeCount },
    { type: 'node', name: '', id: 4, count: j.nodeCount },
    { type: 'billing', name: '', id: 5, count: cpus },
  ];
  if (gpus > 0) out.push({ type: 'gres', name: 'gpu', id: 1001, count: gpus });
  if (gpus > 0 && which === 'allocated' && gpuType !== '')
    out.push({ type: 'gres', name: `gpu:${gpuType}`, id: 1002, count: gpus });
  return out;
}

/** The controller string form of a TRES list, as the decoders render slurmdbd's arrays. */
function tresListString(entries: readonly TresEntry[]): string | undefined {
  if (entries.length === 0) return undefined;
  return entries
    .map((e) => `${e.name !== '' ? `${e.type}/${e.name}` : e.type}=${e.count}${e.type === 'mem' ? 'M' : ''}`)
    .join(',');
}

export function gpuTypeOf(j: FakeJob, view: ClusterView): string {
  const first = j.nodeIdx[0];
  return first === undefined ? '' : (view.nodes[first]?.gpuType ?? '');
}

export function accountingJobTruth(j: FakeJob, view: ClusterView): SlurmJob {
  return {
    source: 'accounting',
    ...commonJobTruth(j),
    ...arrayTruth(j, false),
    standard_output: stdoutPath(j, false),
    standard_error: stdoutPath(j, false),
    // slurmdbd records an end only once the job has ended.
    end_time: isTerminal(j) ? j.endTime : undefined,
    tres_req_str: tresListString(tresEntries(j, 'requested', '')),
    tres_alloc_str: tresListString(tresEntries(j, 'allocated', gpuTypeOf(j, view))),
  };
}

/** sdiag lists RPC rows by descending count; rows never used are not listed. */
export function sortedRpcTypes(d: FakeDiag): RpcTypeCounter[] {
  return d.rpcsByType.filter((r) => r.count > 0).sort((a, b) => b.count - a.count || a.typeId - b.typeId);
}

export function sortedRpcUsers(d: FakeDiag): RpcUserCounter[] {
  return d.rpcsByUser.filter((r) => r.count > 0).sort((a, b) => b.count - a.count || a.uid - b.uid);
}

export function average(total: number, count: number): number {
  return count > 0 ? Math.floor(total / count) : 0;
}

export function diagTruth(d: FakeDiag, now: number): SlurmDiag {
  const byType: RpcByMessageType[] = sortedRpcTypes(d).map((r) => ({
    message_type: r.type,
    type_id: r.typeId,
    count: r.count,
    total_time_us: r.totalUs,
    average_time_us: average(r.totalUs, r.count),
  }));
  const byUser: RpcByUser[] = sortedRpcUsers(d).map((r) => ({
    user: r.user,
    user_id: r.uid,
    count: r.count,
    total_time_us: r.totalUs,
    average_time_us: average(r.totalUs, r.count),
  }));
  return {
    server_thread_count: d.serverThreadCount,
    agent_queue_size: d.agentQueueSize,
    agent_count: d.agentCount,
    agent_thread_count: d.agentThreadCount,
    dbd_agent_queue_size: d.dbdAgentQueueSize,
    req_time: now,
    req_time_start: d.reqTimeStart,
    jobs_submitted: d.jobsSubmitted,
    jobs_started: d.jobsStarted,
    jobs_completed: d.jobsCompleted,
    jobs_canceled: d.jobsCanceled,
    jobs_failed: d.jobsFailed,
    jobs_pending: d.jobsPending,
    jobs_running: d.jobsRunning,
    schedule_cycle_max: d.scheduleCycleMax,
    schedule_cycle_last: d.scheduleCycleLast,
    schedule_cycle_sum: d.scheduleCycleSum,
    schedule_cycle_total: d.scheduleCycleTotal,
    schedule_cycle_mean: average(d.scheduleCycleSum, d.scheduleCycleTotal),
    schedule_cycle_mean_depth: average(d.scheduleCycleDepth, d.scheduleCycleTotal),
    schedule_cycle_per_minute: SCHEDULE_CYCLES_PER_MINUTE,
    schedule_queue_length: d.scheduleQueueLength,
    bf_backfilled_jobs: d.bfBackfilledJobs,
    bf_cycle_counter: d.bfCycleCounter,
    bf_cycle_mean: average(d.bfCycleSum, d.bfCycleCounter),
    bf_cycle_last: d.bfCycleLast,
    bf_cycle_max: d.bfCycleMax,
    bf_queue_len: d.bfQueueLen,
    bf_active: false,
    rpcs_by_message_type: byType,
    rpcs_by_user: byUser,
  };
}
