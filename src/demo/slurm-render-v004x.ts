/**
 * The fake cluster in the data_parser wire shapes v0.0.40–v0.0.45 (Slurm 23.11–26.05): state
 * arrays, `{set, infinite, number}` structs where each version's spec has them, members added and
 * removed per version (one table, SPANS, following the OpenAPI specs in fixtures/slurm/openapi/),
 * and `job_resources` with the per-core layout slurmctld sends, which is what makes a real job
 * object ~5 KB. The demo's fake slurmrestd serves these, and scripts/slurm-fixtures.ts renders the
 * fixtures of fixtures/slurm/built/ with them.
 *
 * A member a version does not define is set to `undefined`, which JSON.stringify leaves out: one
 * object literal per entity keeps Slurm's member order for every version.
 * Here: the shared shapes, nodes and the controller's jobs; slurmdbd's records are in
 * slurm-render-v004x-dbd.ts, the diagnostics in slurm-render-v004x-diag.ts.
 */
import type { ClusterView, FakeJob, FakeNode } from './fake-cluster-types.js';
import { sluidOf } from './sluid.js';
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
} from './fake-cluster-types.js';
import {
  jobGresDetail,
  SPECIALIZED_CPU_COUNT,
  SPECIALIZED_CPUS,
  SPECIALIZED_MEMORY_MIB,
  stdoutPath,
} from './fake-cluster-derived.js';

export type Minor = 40 | 41 | 42 | 43 | 44 | 45;

export interface Ctx4x {
  readonly minor: Minor;
  readonly release: string;
  readonly view: ClusterView;
}

export type Obj = Record<string, unknown>;

/** A no-val struct that is not set (NO_VAL on the wire of older versions). */
export const UNSET = Object.freeze({ set: false, infinite: false, number: 0 });
export const INFINITE = Object.freeze({ set: false, infinite: true, number: 0 });
export const UINT32 = 2 ** 32;

export function nv(n: number): Obj {
  return { set: true, infinite: false, number: n };
}

type Span = readonly [first: Minor, last: Minor];

/**
 * Members that not every version defines, with the first and last version that has each (as the
 * OpenAPI specs in fixtures/slurm/openapi/ define them). Members not listed are in all six. The
 * builders below write every member; `shaped` leaves out those the version does not define.
 * Differences of value rather than presence (`job_resources` before v0.0.41, `average_time`,
 * `schedule_cycle_sum`'s width) are written where the value is built.
 */
const SPANS = {
  node: {
    external_sensors: [40, 44],
    power: [40, 44],
    tres_weighted: [40, 44],
    gpu_spec: [41, 45],
    res_cores_per_gpu: [41, 45],
    topology: [43, 45],
    tls_cert_last_renewal: [43, 45],
    cert_flags: [43, 45],
    suspend_time: [45, 45],
  },
  job: {
    minimum_switches: [40, 41],
    exclusive: [40, 41],
    oversubscribe: [40, 41],
    show_flags: [40, 41],
    power: [40, 44],
    required_switches: [42, 45],
    segment_size: [43, 45],
    licenses_allocated: [43, 45],
    stdin_expanded: [43, 45],
    stdout_expanded: [43, 45],
    stderr_expanded: [43, 45],
    submit_line: [44, 45],
    // Seen in the recordings of real 24.11 and 26.05 (fixtures/slurm/recorded/).
    priority_by_partition: [42, 45],
    step_id: [44, 45],
    container_type: [45, 45],
    memory_update_delay: [45, 45],
    memory_update_margin: [45, 45],
  },
  dbJob: {
    stdin_expanded: [41, 45],
    stdout_expanded: [41, 45],
    stderr_expanded: [41, 45],
    stdout: [41, 45],
    stderr: [41, 45],
    stdin: [41, 45],
    qosreq: [42, 45],
    restart_cnt: [42, 45],
    segment_size: [43, 45],
    sluid: [45, 45],
    original_sluid: [45, 45],
    exclusive: [45, 45],
    oversubscribe: [45, 45],
  },
  dbJobTime: { planned: [41, 45] },
  dbJobReservation: { requested: [43, 45] },
  diag: {
    parts_packed: [40, 44],
    schedule_cycle_sum: [41, 45],
    schedule_cycle_depth: [41, 45],
    bf_cycle_max: [41, 45],
    bf_table_size_sum: [41, 45],
    pending_rpcs: [41, 45],
    pending_rpcs_by_hostlist: [41, 45],
  },
  rpcType: { queued: [41, 45], dropped: [41, 45], cycle_last: [41, 45], cycle_max: [41, 45] },
  qosMaxJobs: { count: [42, 45] },
  qosTresMinutes: { total: [42, 45] },
} as const satisfies Record<string, Record<string, Span>>;

type Kind = keyof typeof SPANS;
const MINORS: readonly Minor[] = [40, 41, 42, 43, 44, 45];

function absentPerVersion(spans: Readonly<Record<string, Span>>): Readonly<Record<Minor, readonly string[]>> {
  const out = {} as Record<Minor, string[]>;
  for (const v of MINORS) {
    out[v] = Object.entries(spans)
      .filter(([, [first, last]]) => v < first || v > last)
      .map(([member]) => member);
  }
  return out;
}

/** Per kind and version, the members to leave out. */
const ABSENT = Object.fromEntries(
  Object.entries(SPANS).map(([kind, spans]) => [kind, absentPerVersion(spans)]),
) as Readonly<Record<Kind, Readonly<Record<Minor, readonly string[]>>>>;

/**
 * `o` in version `minor`'s shape: the members it does not define are set to undefined, which
 * JSON.stringify leaves out. In place, so the object keeps the shape V8 built it with.
 */
export function shaped<K extends Kind, T extends Record<keyof (typeof SPANS)[K], unknown>>(
  kind: K,
  minor: Minor,
  o: T,
): T {
  for (const k of ABSENT[kind][minor]) (o as Record<string, unknown>)[k] = undefined;
  return o;
}

export function meta4x(c: Ctx4x, daemon: 'slurmctld' | 'slurmdbd'): Obj {
  const [major = '', minor = '', micro = ''] = c.release.split('.');
  return {
    plugin: {
      type: `openapi/${daemon}`,
      name: `Slurm OpenAPI ${daemon}`,
      data_parser: `data_parser/v0.0.${c.minor}`,
      accounting_storage: 'accounting_storage/slurmdbd',
    },
    client: { source: '[127.0.0.1]:40112(fd:9)', user: 'root', group: 'root' },
    command: [],
    slurm: { version: { major, micro, minor }, release: c.release, cluster: c.view.clusterName },
  };
}

const ENERGY = Object.freeze({
  average_watts: 0,
  base_consumed_energy: 0,
  consumed_energy: 0,
  current_watts: UNSET,
  previous_consumed_energy: 0,
  last_collected: 0,
});

export function node4x(n: FakeNode, c: Ctx4x): Obj {
  const state = nodeStateOf(n);
  return shaped('node', c.minor, {
    architecture: 'x86_64',
    burstbuffer_network_address: '',
    boards: 1,
    boot_time: nv(n.bootTime),
    cluster_name: '',
    cores: n.coresPerSocket,
    specialized_cores: 0,
    cpu_binding: 0,
    cpu_load: n.cpuLoad,
    free_mem: nv(n.freeMemMiB),
    cpus: n.cpus,
    effective_cpus: n.cpus - SPECIALIZED_CPU_COUNT,
    specialized_cpus: SPECIALIZED_CPUS,
    energy: ENERGY,
    external_sensors: {},
    extra: '',
    power: {},
    features: n.features,
    active_features: n.features,
    gres: nodeGres(n),
    gres_drained: 'N/A',
    gres_used: nodeGresUsed(n),
    gpu_spec: '',
    instance_id: '',
    instance_type: '',
    last_busy: nv(n.lastBusy),
    mcs_label: '',
    specialized_memory: SPECIALIZED_MEMORY_MIB,
    name: n.name,
    next_state_after_reboot: ['INVALID'],
    address: n.address,
    hostname: n.name,
    state: [state.base, ...state.flags],
    operating_system: 'Linux 5.15.0-138-generic #148-Ubuntu SMP Fri Mar 14 19:05:48 UTC 2025',
    owner: '',
    partitions: [n.partition],
    port: 6818,
    real_memory: n.realMemoryMiB,
    res_cores_per_gpu: 0,
    comment: '',
    reason: n.reason,
    reason_changed_at: nv(n.reasonChangedAt),
    reason_set_by_user: n.reasonSetBy,
    resume_after: nv(0),
    reservation: '',
    alloc_memory: n.allocMemoryMiB,
    alloc_cpus: n.allocCpus,
    alloc_idle_cpus: n.cpus - n.allocCpus,
    tres_used: nodeTresUsed(n),
    tres_weighted: n.allocCpus,
    slurmd_start_time: nv(n.slurmdStartTime),
    sockets: n.sockets,
    threads: n.threadsPerCore,
    temporary_disk: 0,
    weight: 1,
    tres: nodeTres(n),
    version: c.release,
    topology: '',
    tls_cert_last_renewal: nv(0),
    cert_flags: [],
    suspend_time: UNSET,
  });
}

const NO_SIGNAL = Object.freeze({ id: UNSET, name: '' });
export const EXIT_OK = Object.freeze({ status: ['SUCCESS'], return_code: nv(0), signal: NO_SIGNAL });
const EXIT_PENDING = Object.freeze({ status: ['PENDING'], return_code: UNSET, signal: NO_SIGNAL });

export function exit4x(j: FakeJob): unknown {
  if (!isTerminal(j)) return EXIT_PENDING;
  if (j.state === 'CANCELLED' || j.state === 'TIMEOUT')
    return { status: ['SIGNALED'], return_code: UNSET, signal: { id: nv(15), name: 'SIGTERM' } };
  if (j.state === 'FAILED') return { status: ['ERROR'], return_code: nv(j.exitStatus), signal: NO_SIGNAL };
  return EXIT_OK;
}

/**
 * Socket/core layouts are shared between jobs that have the same shape: they are the bulk of a
 * job object, and JSON.stringify does not mind shared references. Which cores a job holds is
 * cosmetic here (the simulation counts CPUs, not core bitmaps): a run starting at an offset
 * derived from the job id.
 */
const layouts = new Map<string, readonly Obj[]>();
const MAX_LAYOUTS = 4096;

function socketLayout(n: FakeNode, jobId: number, cpusPerNode: number): readonly Obj[] {
  const total = n.sockets * n.coresPerSocket;
  const want = Math.min(total, Math.ceil(cpusPerNode / n.threadsPerCore));
  const offset = (jobId * 7) % total;
  const key = `${n.sockets}/${n.coresPerSocket}/${offset}/${want}`;
  const cached = layouts.get(key);
  if (cached !== undefined) return cached;
  const sockets: Obj[] = [];
  for (let s = 0; s < n.sockets; s++) {
    const cores: Obj[] = [];
    for (let k = 0; k < n.coresPerSocket; k++) {
      // Only the job's own cores are listed, as 22.05 does (see the recorded v0.0.38 jobs).
      if ((s * n.coresPerSocket + k - offset + total) % total < want) cores.push({ index: k, status: ['ALLOCATED'] });
    }
    if (cores.length > 0) sockets.push({ index: s, cores });
  }
  if (layouts.size >= MAX_LAYOUTS) layouts.clear();
  layouts.set(key, sockets);
  return sockets;
}

/** v0.0.40's `{"0": {"cores": {"0": "allocated"}}}` form of a socket layout. */
function socketMap40(sockets: readonly Obj[]): Obj {
  const out: Obj = {};
  for (const s of sockets) {
    const cores: Obj = {};
    for (const k of s.cores as readonly Obj[]) cores[String(k.index)] = 'allocated';
    out[String(s.index)] = { cores };
  }
  return out;
}

function jobResources4x(j: FakeJob, c: Ctx4x): unknown {
  if (j.nodeIdx.length === 0) return undefined;
  const nodes = j.nodeIdx.map((i) => c.view.nodes[i]).filter((n): n is FakeNode => n !== undefined);
  if (c.minor === 40) {
    return {
      nodes: j.nodeList,
      allocated_cores: nodes.reduce((s, n) => s + Math.ceil(j.cpusPerNode / n.threadsPerCore), 0),
      allocated_cpus: jobCpus(j),
      allocated_hosts: nodes.length,
      // As real 24.11 sends v0.0.40: the job's cores by socket index, no node index.
      allocated_nodes: nodes.map((n) => ({
        sockets: socketMap40(socketLayout(n, j.id, j.cpusPerNode)),
        nodename: n.name,
        cpus_used: j.cpusPerNode,
        memory_used: 0,
        memory_allocated: j.memPerNodeMiB,
      })),
    };
  }
  const allocation = nodes.map((n, i) => ({
    index: i,
    name: n.name,
    cpus: { count: j.cpusPerNode, used: 0 },
    memory: { used: 0, allocated: j.memPerNodeMiB },
    sockets: socketLayout(n, j.id, j.cpusPerNode),
  }));
  return {
    select_type: [c.minor >= 45 ? 'CR_CORE_MEMORY' : 'CORE'],
    nodes: { count: nodes.length, select_type: ['ONE_ROW'], list: j.nodeList, whole: false, allocation },
    cpus: jobCpus(j),
    threads_per_core: nv(nodes[0]?.threadsPerCore ?? 1),
  };
}

const JOB_FLAGS = Object.freeze(['EXACT_TASK_COUNT_REQUESTED', 'USING_DEFAULT_QOS', 'USING_DEFAULT_WCKEY']);

// One literal, no spreads: V8 builds it from a boilerplate; a spread in the middle of ~140
// members made it build property by property, ten times slower.
export function job4x(j: FakeJob, c: Ctx4x): Obj {
  const u = j.user;
  const a = j.array;
  const cpus = jobCpus(j);
  const out = stdoutPath(j, true);
  return shaped('job', c.minor, {
    account: u.account,
    accrue_time: nv(j.submitTime),
    admin_comment: '',
    allocating_node: 'login-01',
    array_job_id: nv(a?.jobId ?? 0),
    array_task_id: a?.taskId !== undefined ? nv(a.taskId) : UNSET,
    array_max_tasks: nv(a?.maxRunning ?? 0),
    array_task_string: arrayTaskString(j),
    association_id: u.uid - 990,
    batch_features: '',
    batch_flag: true,
    batch_host: j.nodeIdx.length > 0 ? (c.view.nodes[j.nodeIdx[0] as number]?.name ?? '') : '',
    flags: JOB_FLAGS,
    burst_buffer: '',
    burst_buffer_state: '',
    cluster: c.view.clusterName,
    cluster_features: '',
    command: `/home/${u.name}/${j.name}.sh`,
    comment: '',
    container: '',
    container_id: '',
    contiguous: false,
    core_spec: 0,
    thread_spec: 32766,
    cores_per_socket: UNSET,
    billable_tres: nv(cpus),
    cpus_per_task: nv(1),
    cpu_frequency_minimum: UNSET,
    cpu_frequency_maximum: UNSET,
    cpu_frequency_governor: UNSET,
    cpus_per_tres: '',
    cron: '',
    deadline: nv(0),
    delay_boot: nv(0),
    dependency: '',
    derived_exit_code: EXIT_OK,
    eligible_time: nv(j.eligibleTime),
    end_time: nv(j.endTime),
    excluded_nodes: '',
    exit_code: exit4x(j),
    extra: '',
    failed_node: '',
    features: '',
    federation_origin: '',
    federation_siblings_active: '',
    federation_siblings_viable: '',
    gres_detail: jobGresDetail(j, c.view),
    group_id: u.uid,
    group_name: u.name,
    het_job_id: nv(0),
    het_job_id_set: '',
    het_job_offset: nv(0),
    job_id: j.id,
    job_resources: jobResources4x(j, c),
    job_size_str: [],
    job_state: [j.state],
    last_sched_evaluation: nv(Math.max(j.submitTime, c.view.now - 5)),
    licenses: '',
    mail_type: [],
    mail_user: u.name,
    max_cpus: nv(0),
    max_nodes: nv(0),
    mcs_label: '',
    memory_per_tres: '',
    name: j.name,
    network: '',
    nodes: j.nodeList,
    nice: 0,
    tasks_per_core: INFINITE,
    tasks_per_tres: nv(0),
    tasks_per_node: nv(0),
    tasks_per_socket: INFINITE,
    tasks_per_board: nv(0),
    cpus: nv(cpus),
    node_count: nv(j.nodeCount),
    tasks: nv(cpus),
    partition: j.partition,
    prefer: '',
    memory_per_cpu: UNSET,
    memory_per_node: nv(j.memPerNodeMiB),
    minimum_cpus_per_node: nv(1),
    minimum_tmp_disk_per_node: nv(0),
    power: { flags: [] },
    preempt_time: nv(0),
    preemptable_time: nv(j.startTime),
    pre_sus_time: nv(0),
    hold: false,
    priority: nv(j.priority),
    priority_by_partition: [],
    // The job as a whole: 26.05 names it by its SLUID too.
    step_id: { sluid: sluidOf(j), job_id: nv(j.id), step_het_component: UNSET, step_id: 'entire' },
    container_type: '',
    memory_update_delay: 0,
    memory_update_margin: 0,
    profile: ['NOT_SET'],
    qos: 'normal',
    reboot: false,
    required_nodes: '',
    minimum_switches: 0,
    required_switches: 0,
    requeue: true,
    resize_time: nv(0),
    restart_cnt: j.restartCnt,
    resv_name: '',
    scheduled_nodes: '',
    selinux_context: '',
    shared: [],
    exclusive: [],
    oversubscribe: true,
    show_flags: ['ALL', 'DETAIL', 'LOCAL'],
    sockets_per_board: 0,
    sockets_per_node: UNSET,
    start_time: nv(j.startTime),
    state_description: '',
    state_reason: j.reason,
    standard_error: out,
    standard_input: '/dev/null',
    standard_output: out,
    submit_time: nv(j.submitTime),
    suspend_time: nv(0),
    system_comment: '',
    time_limit: j.timeLimitMin === 'UNLIMITED' ? INFINITE : nv(j.timeLimitMin),
    time_minimum: nv(0),
    threads_per_core: UNSET,
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
    maximum_switch_wait_time: 0,
    wckey: '',
    current_working_directory: `/home/${u.name}`,
    submit_line: `sbatch ${j.name}.sh`,
    segment_size: 0,
    licenses_allocated: '',
    stdin_expanded: '/dev/null',
    stdout_expanded: out,
    stderr_expanded: out,
  });
}
