/**
 * The fake cluster in the v0.0.38 wire shape of Slurm 22.05 (openapi/v0.0.38 and dbv0.0.38),
 * modelled on the responses recorded from a real 22.05.8 (fixtures/slurm/recorded/): node `state`
 * is a lower-case base word with flags in `state_flags`, `job_state` a string, numbers plain,
 * exit codes raw wait statuses, `meta.Slurm` with numeric version parts, a pending array master's
 * slurmdbd `task` a hex bitmap.
 *
 * Where 22.05 sends `null` (an unset or INFINITE number, no owner), the static v0.0.38 spec says
 * integer or string: those members are left out instead, which a reader sees the same way and the
 * spec accepts. That loses one fact: v0.0.38 cannot tell an unlimited time limit from an unset one.
 *
 * Only tests speak v0.0.38 to the agent, so this renderer lives with them: they hand
 * V0038_RENDERERS to renderText or to the fake slurmrestd.
 */
import type { FakeDiag, FakeJob, FakeNode } from '../../src/demo/fake-cluster-types.js';
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
} from '../../src/demo/fake-cluster-types.js';
import {
  average,
  gpuTypeOf,
  jobGresDetail,
  sortedRpcTypes,
  sortedRpcUsers,
  SCHEDULE_CYCLES_PER_MINUTE,
  stdoutPath,
  tresEntries,
} from '../../src/demo/fake-cluster-derived.js';
import type { TresEntry } from '../../src/demo/fake-cluster-derived.js';
import type { ClusterView } from '../../src/demo/fake-cluster-types.js';
import {
  accountingJobs,
  DEFAULT_RELEASES,
  licensesOf,
  list,
  partitionsOf,
  partitionTres,
  reservationsOf,
  reservationWire,
  type BodyPlan,
  type Endpoint,
  type FakePartition,
  type RenderOptions,
  type Renderers,
} from '../../src/demo/slurm-render.js';

export interface Ctx38 {
  readonly release: string;
  readonly view: ClusterView;
}

type Obj = Record<string, unknown>;

export function meta38(c: Ctx38, daemon: 'slurmctld' | 'slurmdbd'): Obj {
  const [major = 0, minor = 0, micro = 0] = c.release.split('.').map(Number);
  const plugin =
    daemon === 'slurmctld'
      ? { type: 'openapi/v0.0.38', name: 'Slurm OpenAPI v0.0.38' }
      : { type: 'openapi/dbv0.0.38', name: 'Slurm OpenAPI DB v0.0.38' };
  return { plugin, Slurm: { version: { major, micro, minor }, release: c.release } };
}

export function node38(n: FakeNode, c: Ctx38): Obj {
  const state = nodeStateOf(n);
  const used = nodeTresUsed(n);
  return {
    architecture: 'x86_64',
    burstbuffer_network_address: '',
    boards: 1,
    boot_time: n.bootTime,
    comment: '',
    cores: n.coresPerSocket,
    cpu_binding: 0,
    cpu_load: n.cpuLoad,
    extra: '',
    free_memory: n.freeMemMiB,
    cpus: n.cpus,
    last_busy: n.lastBusy,
    features: n.features.join(','),
    active_features: n.features.join(','),
    gres: nodeGres(n),
    gres_drained: 'N/A',
    gres_used: nodeGresUsed(n),
    mcs_label: '',
    name: n.name,
    next_state_after_reboot: 'invalid',
    address: n.address,
    hostname: n.name,
    state: state.base.toLowerCase(),
    state_flags: state.flags,
    next_state_after_reboot_flags: [],
    operating_system: 'Linux 5.10.0-28-amd64 #1 SMP Debian 5.10.209-2 (2024-01-31)',
    partitions: [n.partition],
    port: 6818,
    real_memory: n.realMemoryMiB,
    reason: n.reason,
    reason_changed_at: n.reasonChangedAt,
    reason_set_by_user: n.reasonSetBy === '' ? undefined : n.reasonSetBy,
    slurmd_start_time: n.slurmdStartTime,
    sockets: n.sockets,
    threads: n.threadsPerCore,
    temporary_disk: 0,
    weight: 1,
    tres: nodeTres(n),
    slurmd_version: c.release,
    alloc_memory: n.allocMemoryMiB,
    alloc_cpus: n.allocCpus,
    idle_cpus: n.cpus - n.allocCpus,
    tres_used: used === '' ? undefined : used,
    tres_weighted: n.allocCpus,
  };
}

/** The raw wait(2) status slurmctld 22.05 reports: exit status << 8, or the signal number. */
function waitStatus(j: FakeJob): number {
  if (j.state === 'CANCELLED' || j.state === 'TIMEOUT') return 15;
  if (j.state === 'FAILED') return j.exitStatus << 8;
  return 0;
}

/** 22.05 lists only the allocated cores, keyed by socket and core id. */
function jobResources38(j: FakeJob, c: Ctx38): unknown {
  const nodes = j.nodeIdx.map((i) => c.view.nodes[i]).filter((n): n is FakeNode => n !== undefined);
  if (nodes.length === 0) return undefined;
  const allocated = nodes.map((n) => {
    const total = n.sockets * n.coresPerSocket;
    const want = Math.min(total, Math.ceil(j.cpusPerNode / n.threadsPerCore));
    const sockets: Record<string, { cores: Record<string, string> }> = {};
    for (let k = 0; k < want; k++) {
      const abs = (j.id * 7 + k) % total;
      const s = String(Math.floor(abs / n.coresPerSocket));
      (sockets[s] ??= { cores: {} }).cores[String(abs % n.coresPerSocket)] = 'allocated';
    }
    return { sockets, nodename: n.name, cpus_used: 0, memory_used: 0, memory_allocated: j.memPerNodeMiB };
  });
  const cores = nodes.reduce((s, n) => s + Math.ceil(j.cpusPerNode / n.threadsPerCore), 0);
  return { nodes: j.nodeList, allocated_cores: cores, allocated_hosts: nodes.length, allocated_nodes: allocated };
}

export function job38(j: FakeJob, c: Ctx38): Obj {
  const u = j.user;
  const a = j.array;
  const cpus = jobCpus(j);
  const out = stdoutPath(j, true);
  return {
    account: u.account,
    accrue_time: j.submitTime,
    admin_comment: '',
    array_job_id: a?.jobId ?? 0,
    array_task_id: a?.taskId,
    array_max_tasks: a?.maxRunning ?? 0,
    array_task_string: arrayTaskString(j),
    association_id: u.uid - 990,
    batch_features: '',
    batch_flag: true,
    batch_host: j.nodeIdx.length > 0 ? (c.view.nodes[j.nodeIdx[0] as number]?.name ?? '') : '',
    flags: ['JOB_MEM_SET'],
    burst_buffer: '',
    burst_buffer_state: '',
    cluster: c.view.clusterName,
    cluster_features: '',
    command: `/home/${u.name}/${j.name}.sh`,
    comment: '',
    container: '',
    contiguous: false,
    billable_tres: cpus,
    cpus_per_tres: '',
    deadline: 0,
    delay_boot: 0,
    dependency: '',
    derived_exit_code: 0,
    eligible_time: j.eligibleTime,
    end_time: j.endTime,
    excluded_nodes: '',
    exit_code: waitStatus(j),
    features: '',
    federation_origin: '',
    federation_siblings_active: '',
    federation_siblings_viable: '',
    gres_detail: jobGresDetail(j, c.view),
    group_id: u.uid,
    group_name: u.name,
    job_id: j.id,
    job_resources: jobResources38(j, c),
    job_state: j.state,
    last_sched_evaluation: Math.max(j.submitTime, c.view.now - 5),
    licenses: '',
    max_cpus: 0,
    max_nodes: 0,
    mcs_label: '',
    memory_per_tres: '',
    name: j.name,
    nodes: j.nodeList,
    tasks_per_node: 0,
    tasks_per_board: 0,
    cpus,
    node_count: j.nodeCount,
    tasks: cpus,
    het_job_id: 0,
    het_job_id_set: '',
    het_job_offset: 0,
    partition: j.partition,
    prefer: '',
    memory_per_node: j.memPerNodeMiB,
    minimum_cpus_per_node: 1,
    minimum_tmp_disk_per_node: 0,
    preempt_time: 0,
    pre_sus_time: 0,
    priority: j.priority,
    qos: 'normal',
    reboot: false,
    required_nodes: '',
    requeue: true,
    resize_time: 0,
    restart_cnt: j.restartCnt,
    resv_name: '',
    show_flags: ['SHOW_ALL', 'SHOW_DETAIL', 'SHOW_LOCAL'],
    sockets_per_board: 0,
    start_time: j.startTime,
    state_description: '',
    state_reason: j.reason,
    standard_error: out,
    standard_input: '/dev/null',
    standard_output: out,
    submit_time: j.submitTime,
    suspend_time: 0,
    system_comment: '',
    time_limit: j.timeLimitMin === 'UNLIMITED' ? undefined : j.timeLimitMin,
    time_minimum: 0,
    tres_bind: '',
    tres_freq: '',
    tres_per_job: '',
    tres_per_node: j.gpusPerNode > 0 ? `gres/gpu:${j.gpusPerNode}` : '',
    tres_per_socket: '',
    tres_per_task: '',
    tres_req_str: jobReqTres(j),
    tres_alloc_str: j.allocTres,
    user_id: u.uid,
    user_name: u.name,
    wckey: '',
    current_working_directory: `/home/${u.name}`,
  };
}

// ------------------------------------------------------------------ slurmdbd (dbv0.0.38)

/** slurmdbd 22.05 returns a pending array's tasks as the hex bitmap it stores (`0xF0` = 4–7). */
export function taskBitmap(tasks: readonly number[]): string {
  let bits = 0n;
  for (const t of tasks) bits |= 1n << BigInt(t);
  return `0x${bits.toString(16).toUpperCase()}`;
}

function tresList38(entries: readonly TresEntry[]): Obj[] {
  return entries.map((e) => ({ type: e.type, name: e.name === '' ? undefined : e.name, id: e.id, count: e.count }));
}

/** Exit codes as dbv0.0.38 words them; a job that has not ended reads as SUCCESS (as recorded). */
function dbExit38(j: FakeJob): Obj {
  if (j.state === 'CANCELLED' || j.state === 'TIMEOUT')
    return { status: 'SIGNALED', signal: { signal_id: 15, name: 'SIGTERM' } };
  if (j.state === 'FAILED') return { status: 'ERROR', return_code: j.exitStatus };
  return { status: 'SUCCESS', return_code: 0 };
}

export function dbJob38(j: FakeJob, c: Ctx38): Obj {
  const u = j.user;
  const a = j.array;
  const ended = isTerminal(j);
  const zero = { seconds: 0, microseconds: 0 };
  return {
    account: u.account,
    comment: { administrator: '', job: '', system: '' },
    allocation_nodes: j.nodeCount,
    array: {
      job_id: a?.jobId ?? 0,
      limits: { max: { running: { tasks: a?.maxRunning ?? 0 } } },
      task: a?.pendingTasks !== undefined ? taskBitmap(a.pendingTasks) : undefined,
      task_id: a?.taskId,
    },
    association: { account: u.account, cluster: c.view.clusterName, partition: j.partition, user: u.name },
    cluster: c.view.clusterName,
    constraints: '',
    derived_exit_code: { status: 'SUCCESS', return_code: 0 },
    time: {
      elapsed: j.startTime > 0 ? (ended ? j.endTime : c.view.now) - j.startTime : 0,
      eligible: j.eligibleTime,
      end: ended ? j.endTime : 0,
      start: j.startTime,
      submission: j.submitTime,
      suspended: 0,
      system: zero,
      limit: j.timeLimitMin === 'UNLIMITED' ? undefined : j.timeLimitMin,
      total: zero,
      user: zero,
    },
    exit_code: dbExit38(j),
    flags: ['CLEAR_SCHEDULING', j.startTime > 0 ? 'STARTED_ON_SCHEDULE' : 'NONE'],
    group: u.name,
    het: { job_id: 0 },
    job_id: j.id,
    name: j.name,
    mcs: { label: '' },
    nodes: j.nodeList === '' ? 'None assigned' : j.nodeList,
    partition: j.partition,
    priority: j.priority,
    qos: 'normal',
    required: { CPUs: jobCpus(j), memory: j.memPerNodeMiB },
    reservation: { id: 0, name: 0 },
    state: { current: j.state, reason: j.reason },
    steps: [],
    tres: {
      allocated: tresList38(tresEntries(j, 'allocated', gpuTypeOf(j, c.view))),
      requested: tresList38(tresEntries(j, 'requested', '')),
    },
    user: u.name,
    wckey: { wckey: '', flags: [] },
    working_directory: `/home/${u.name}`,
  };
}

// ------------------------------------------------------------------ diag

export function diagStats38(d: FakeDiag, c: Ctx38): Obj {
  const row = (total: number, count: number) => ({ count, average_time: average(total, count), total_time: total });
  return {
    parts_packed: 1,
    req_time: c.view.now,
    req_time_start: d.reqTimeStart,
    server_thread_count: d.serverThreadCount,
    agent_queue_size: d.agentQueueSize,
    agent_count: d.agentCount,
    agent_thread_count: d.agentThreadCount,
    dbd_agent_queue_size: d.dbdAgentQueueSize,
    gettimeofday_latency: 23,
    schedule_cycle_max: d.scheduleCycleMax,
    schedule_cycle_last: d.scheduleCycleLast,
    schedule_cycle_total: d.scheduleCycleTotal,
    schedule_cycle_mean: average(d.scheduleCycleSum, d.scheduleCycleTotal),
    schedule_cycle_mean_depth: average(d.scheduleCycleDepth, d.scheduleCycleTotal),
    schedule_cycle_per_minute: SCHEDULE_CYCLES_PER_MINUTE,
    schedule_queue_length: d.scheduleQueueLength,
    jobs_submitted: d.jobsSubmitted,
    jobs_started: d.jobsStarted,
    jobs_completed: d.jobsCompleted,
    jobs_canceled: d.jobsCanceled,
    jobs_failed: d.jobsFailed,
    jobs_pending: d.jobsPending,
    jobs_running: d.jobsRunning,
    job_states_ts: d.jobStatesTs,
    bf_backfilled_jobs: d.bfBackfilledJobs,
    bf_last_backfilled_jobs: 0,
    bf_backfilled_het_jobs: 0,
    bf_cycle_counter: d.bfCycleCounter,
    bf_cycle_mean: average(d.bfCycleSum, d.bfCycleCounter),
    bf_depth_mean: average(d.bfDepthSum, d.bfCycleCounter),
    bf_depth_mean_try: average(d.bfDepthSum, d.bfCycleCounter),
    bf_cycle_last: d.bfCycleLast,
    bf_cycle_max: d.bfCycleMax,
    bf_queue_len: d.bfQueueLen,
    bf_queue_len_mean: average(d.bfQueueLenSum, d.bfCycleCounter),
    bf_table_size: 1,
    bf_table_size_mean: 1,
    bf_when_last_cycle: d.bfWhenLastCycle,
    bf_active: false,
    rpcs_by_message_type: sortedRpcTypes(d).map((r) => ({
      message_type: r.type,
      type_id: r.typeId,
      ...row(r.totalUs, r.count),
    })),
    rpcs_by_user: sortedRpcUsers(d).map((r) => ({ user: r.user, user_id: r.uid, ...row(r.totalUs, r.count) })),
  };
}

/** ESLURM_REST_EMPTY_RESULT, as slurmdbd 22.05 reports a query that matched nothing. */
const NOTHING_FOUND = {
  description: 'Nothing found',
  error_number: 9003,
  error: 'Nothing found with query',
  source: 'slurmdb_jobs_get',
};

function plan38(view: ClusterView, endpoint: Endpoint, opts: RenderOptions): BodyPlan {
  const c: Ctx38 = { release: opts.release ?? DEFAULT_RELEASES['v0.0.38'], view };
  const ctld = { meta: meta38(c, 'slurmctld'), errors: [] };
  switch (endpoint) {
    case 'nodes':
      return list('nodes', view.nodes, (n) => node38(n, c), ctld, {});
    case 'jobs':
      return list('jobs', view.jobs, (j) => job38(j, c), ctld, {});
    case 'diag':
      return { kind: 'object', body: { ...ctld, statistics: diagStats38(view.diag, c) } };
    case 'partitions':
      return list('partitions', partitionsOf(view), partition38, ctld, {});
    case 'licenses':
      return list('licenses', licensesOf(view), (l) => l, ctld, {});
    case 'reservations':
      return list('reservations', reservationsOf(view), (r) => reservationWire(r, (n) => n), ctld, {});
    case 'shares':
      throw new Error('v0.0.38 has no /shares');
    case 'qos':
    case 'associations':
      // The real 22.05 answers are in the recorded fixtures; the fake serves these from v0.0.40.
      throw new Error(`no v0.0.38 /${endpoint}`);
    case 'slurmdb-jobs': {
      const items = accountingJobs(view, opts.query);
      const head = { meta: meta38(c, 'slurmdbd'), errors: items.length === 0 ? [NOTHING_FOUND] : [] };
      return list('jobs', items, (j) => dbJob38(j, c), head, {});
    }
  }
}

/** 22.05's shape: hostlist and totals at the top (and its `min nodes per job` spelling). */
function partition38(p: FakePartition): unknown {
  const cpus = p.nodes.reduce((a, n) => a + n.cpus, 0);
  return {
    flags: [],
    name: p.name,
    nodes: p.nodes.map((n) => n.name).join(','),
    'min nodes per job': 0,
    maximum_nodes_per_job: -1,
    state: 'UP',
    total_cpus: cpus,
    total_nodes: p.nodes.length,
    tres: partitionTres(p),
  };
}

/** What tests give the renderer or the fake slurmrestd so that they speak v0.0.38. */
export const V0038_RENDERERS: Renderers = { 'v0.0.38': plan38 };
