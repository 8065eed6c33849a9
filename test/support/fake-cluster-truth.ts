/**
 * The fake cluster's state in the model's terms (src/cluster/model.ts): what a correct decoder
 * must produce from any rendering of it, and (truthSeenThrough) what a reader of one API version
 * can know of it. Only tests use it, so it is not shipped.
 */
import type {
  JobExitCode,
  RpcByMessageType,
  RpcByUser,
  SlurmDiag,
  SlurmJob,
  SlurmNode,
} from '../../src/cluster/model.js';
import type { FakeCluster } from '../../src/demo/fake-cluster.js';
import type { ClusterView, FakeDiag, FakeJob, FakeNode } from '../../src/demo/fake-cluster-types.js';
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
} from '../../src/demo/fake-cluster-types.js';
import {
  average,
  gpuTypeOf,
  jobGresDetail,
  SCHEDULE_CYCLES_PER_MINUTE,
  sortedRpcTypes,
  sortedRpcUsers,
  SPECIALIZED_CPU_COUNT,
  SPECIALIZED_CPUS,
  SPECIALIZED_MEMORY_MIB,
  stdoutPath,
  tresEntries,
  type TresEntry,
} from '../../src/demo/fake-cluster-derived.js';
import { minorOf, type RenderVersion } from '../../src/demo/slurm-render.js';

export interface ClusterTruth {
  readonly nowMs: number;
  readonly nodes: readonly SlurmNode[];
  /** What `/slurm/vX/jobs/` reports. */
  readonly jobs: readonly SlurmJob[];
  /** What `/slurmdb/vX/jobs/` reports. */
  readonly accountingJobs: readonly SlurmJob[];
  readonly diag: SlurmDiag;
}

/** What a correct reader of this cluster's REST API must find, in the model's terms. */
export function knownTruth(cluster: FakeCluster): ClusterTruth {
  const v = cluster.view();
  return {
    nowMs: cluster.now,
    nodes: v.nodes.map((n) => nodeTruth(n)),
    jobs: v.jobs.map((j) => controllerJobTruth(j, v)),
    accountingJobs: v.accounting.map((j) => accountingJobTruth(j, v)),
    diag: diagTruth(v.diag, v.now),
  };
}

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

export function controllerJobTruth(j: FakeJob, view: ClusterView): SlurmJob {
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
    gres_detail: jobGresDetail(j, view),
  };
}

/** The controller string form of a TRES list, as the decoders render slurmdbd's arrays. */
function tresListString(entries: readonly TresEntry[]): string | undefined {
  if (entries.length === 0) return undefined;
  return entries
    .map((e) => `${e.name !== '' ? `${e.type}/${e.name}` : e.type}=${e.count}${e.type === 'mem' ? 'M' : ''}`)
    .join(',');
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

// ------------------------------------------------------------------ what each version can carry

const UINT32 = 2 ** 32;

function nodeSeen(n: SlurmNode, version: RenderVersion): SlurmNode {
  if (version !== 'v0.0.38') return n;
  // No specialized resources and no effective CPU count in the 22.05 node.
  return {
    ...n,
    effective_cpus: undefined,
    specialized_cpus: undefined,
    specialized_cpus_count: undefined,
    specialized_memory: undefined,
  };
}

function jobSeen(j: SlurmJob, version: RenderVersion): SlurmJob {
  const minor = minorOf(version);
  let out: SlurmJob = j;
  if (version === 'v0.0.38') {
    const pending = j.exit_code?.status[0] === 'PENDING';
    const exit = pending
      ? { status: ['SUCCESS'], return_code: 0 }
      : j.source === 'controller' && j.exit_code
        ? { ...j.exit_code, signal_name: undefined }
        : j.exit_code;
    // 22.05 has no mail_user in its job record.
    out = { ...out, time_limit_unlimited: undefined, mail_user: undefined, exit_code: exit };
  }
  if (j.source === 'accounting' && minor < 41) out = { ...out, standard_output: undefined, standard_error: undefined };
  if (j.source === 'accounting' && minor < 42) out = { ...out, restart_cnt: undefined };
  return out;
}

function diagSeen(d: SlurmDiag, version: RenderVersion): SlurmDiag {
  const minor = minorOf(version);
  if (minor >= 44) return d;
  const sum = minor >= 41 && d.schedule_cycle_sum !== undefined ? d.schedule_cycle_sum % UINT32 : undefined;
  return { ...d, schedule_cycle_sum: sum, bf_cycle_max: minor === 40 ? undefined : d.bf_cycle_max };
}

/**
 * The truth as a reader of `version` can know it: the members that version does not carry are
 * removed, and the ones it carries differently (a 32-bit scheduler sum, 22.05's exit codes) are
 * shown as that version shows them.
 */
export function truthSeenThrough(version: RenderVersion, truth: ClusterTruth): ClusterTruth {
  return {
    nowMs: truth.nowMs,
    nodes: truth.nodes.map((n) => nodeSeen(n, version)),
    jobs: truth.jobs.map((j) => jobSeen(j, version)),
    accountingJobs: truth.accountingJobs.map((j) => jobSeen(j, version)),
    diag: diagSeen(truth.diag, version),
  };
}
