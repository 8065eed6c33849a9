/**
 * Slurm's own families (slurmctld 25.11+ `metrics/openmetrics`), computed from slurmrestd.
 *
 * Same names, labels and meaning as slurmctld serves them: every one a gauge, the cumulative
 * scheduler counters included, none with `_total`, so dashboards and alerts written for a
 * Slurm ≥ 25.11 work unchanged. Each description ends with the first API version that carries
 * its source field: on an older slurmrestd the family is absent, never 0.
 */
import { switchedBy, type Switch } from '../../telemetry/spec.js';
import { gauge, SINCE_38, values } from './gauge.js';
import type { GaugeSpec } from './gauge.js';

/** Suffixes of `slurm_nodes_<s>`: one per base state and state flag slurmctld counts. */
export const NATIVE_NODE_STATES = [
  'alloc',
  'blocked',
  'completing',
  'cloud',
  'down',
  'drain',
  'drained',
  'draining',
  'dyn_future',
  'dyn_normal',
  'external',
  'fail',
  'future',
  'idle',
  'invalid_reg',
  'maint',
  'mixed',
  'noresp',
  'planned',
  'power_down',
  'power_up',
  'powered_down',
  'powering_up',
  'reboot_issued',
  'reboot_req',
  'resv',
  'unknown',
] as const;
export type NativeNodeState = (typeof NATIVE_NODE_STATES)[number];

/** Suffixes of `slurm_partition_nodes_<s>` (slurmctld spells some differently there). */
export const NATIVE_PARTITION_NODE_STATES = [
  'alloc',
  'blocked',
  'cg',
  'cloud',
  'down',
  'drain',
  'drained',
  'draining',
  'dyn_future',
  'dyn_normal',
  'external',
  'fail',
  'future',
  'idle',
  'invalid_reg',
  'maint',
  'mixed',
  'no_resp',
  'planned',
  'power_down',
  'power_up',
  'powered_down',
  'powering_down',
  'powering_up',
  'reboot_issued',
  'reboot_requested',
  'resv',
  'unknown',
] as const;
export type NativePartitionNodeState = (typeof NATIVE_PARTITION_NODE_STATES)[number];

/** Suffixes of `slurm_jobs_<s>`: base states, state flags and slurmctld's started/finished/hold. */
export const NATIVE_JOB_STATES = [
  'bootfail',
  'cancelled',
  'completed',
  'completing',
  'configuring',
  'deadline',
  'expediting',
  'failed',
  'fed_requeued',
  'finished',
  'hold',
  'node_failed',
  'outofmemory',
  'pending',
  'powerup_node',
  'preempted',
  'requeued',
  'resizing',
  'revoked',
  'running',
  'signaling',
  'stageout',
  'started',
  'suspended',
  'timeout',
] as const;
export type NativeJobState = (typeof NATIVE_JOB_STATES)[number];

function perKey<K extends string, L extends string>(
  keys: readonly K[],
  make: (k: K) => GaugeSpec<L>,
): Readonly<Record<K, GaugeSpec<L>>> {
  return Object.fromEntries(keys.map((k) => [k, make(k)])) as Record<K, GaugeSpec<L>>;
}

const NATIVE_NODE = ['node'] as const;

/**
 * `/metrics/nodes`, as slurmctld serves it: memory in MiB under its `_bytes` names (slurmctld's
 * own units), a GPU family 0 on a node without GPUs.
 */
export const NATIVE_NODE_METRICS = {
  cpus: gauge('slurm_node_cpus', NATIVE_NODE, `CPUs configured on the node. ${SINCE_38}`),
  cpusAlloc: gauge('slurm_node_cpus_alloc', NATIVE_NODE, `CPUs of the node allocated to jobs. ${SINCE_38}`),
  memory: gauge(
    'slurm_node_memory_bytes',
    NATIVE_NODE,
    `Memory configured on the node (RealMemory), in MiB as slurmctld reports it despite the name. ${SINCE_38}`,
  ),
  memoryAlloc: gauge(
    'slurm_node_memory_alloc_bytes',
    NATIVE_NODE,
    `Memory of the node allocated to jobs, in MiB as slurmctld reports it despite the name. ${SINCE_38}`,
  ),
  gpus: gauge(
    'slurm_node_gpus',
    NATIVE_NODE,
    `GPUs configured on the node (gres/gpu in its TRES, 0 without; slurmctld serves it from 26.05). ${SINCE_38}`,
  ),
  gpusAlloc: gauge(
    'slurm_node_gpus_alloc',
    NATIVE_NODE,
    `GPUs of the node allocated to jobs (gres/gpu in its used GRES or TRES, 0 without; slurmctld from 26.05). ${SINCE_38}`,
  ),
  nodes: gauge('slurm_nodes', [], `Nodes slurmctld knows. ${SINCE_38}`),
  states: perKey(NATIVE_NODE_STATES, (s) =>
    gauge(
      `slurm_nodes_${s}`,
      [],
      `Nodes in state or with flag ${s} (drained: DRAIN with no job left; draining: DRAIN with jobs still running). ${SINCE_38}`,
    ),
  ),
} as const;

/**
 * The four `/metrics/nodes` families whose names Soperator's set (on `/metrics`) also uses, with
 * other labels, units and meaning: served on `/metrics/nodes` only, so each endpoint keeps one
 * meaning per name (and pushed over OTLP under `slurmctld_` names, as docs/cluster-agent.md says).
 */
export const NATIVE_NODE_SHARED_METRICS = {
  cpusIdle: gauge(
    'slurm_node_cpus_idle',
    NATIVE_NODE,
    `Effective CPUs of the node minus those allocated, slurmctld's meaning (configured CPUs before API v0.0.40). ${SINCE_38}`,
  ),
  cpusEffective: gauge(
    'slurm_node_cpus_effective',
    NATIVE_NODE,
    'CPUs of the node usable by jobs (configured minus specialized). From API v0.0.40.',
  ),
  memoryFree: gauge(
    'slurm_node_memory_free_bytes',
    NATIVE_NODE,
    `Free memory of the node as slurmd last reported it (0 before it has), in MiB as slurmctld reports it. ${SINCE_38}`,
  ),
  memoryEffective: gauge(
    'slurm_node_memory_effective_bytes',
    NATIVE_NODE,
    `Memory of the node usable by jobs (RealMemory minus MemSpecLimit), in MiB as slurmctld reports it. ${SINCE_38}`,
  ),
} as const;

/**
 * The same four over OTLP, where both sets travel in one stream: under `slurmctld_` names (and
 * their own instrumentation scope), so no OTLP name carries two meanings.
 */
export const NATIVE_NODE_SHARED_OTLP_METRICS = Object.fromEntries(
  Object.entries(NATIVE_NODE_SHARED_METRICS).map(([k, s]) => [
    k,
    { ...s, name: s.name.replace(/^slurm_/, 'slurmctld_') },
  ]),
) as typeof NATIVE_NODE_SHARED_METRICS;

/** The job aggregates of `/metrics/jobs`, by name suffix after `slurm_` (the users/accounts variants reuse them). */
const JOB_AGGREGATES = {
  cpusAlloc: ['jobs_cpus_alloc', 'CPUs allocated to running and suspended jobs.'],
  memoryAlloc: ['jobs_memory_alloc', 'Memory allocated to running and suspended jobs, in MiB as slurmctld counts it.'],
  nodesAlloc: [
    'jobs_nodes_alloc',
    "Distinct nodes running or holding suspended jobs (a shared node counts once; the whole cluster's from /nodes).",
  ],
  gpusAlloc: [
    'jobs_gpus_alloc',
    'GPUs allocated to running and suspended jobs (gres/gpu; slurmctld serves it from 26.05).',
  ],
} as const;

function jobFamilies<const L extends string>(prefix: string, labels: readonly L[], whose: string, jobsWhat: string) {
  return {
    jobs: gauge(`${prefix}jobs`, labels, `${jobsWhat}${whose}. ${SINCE_38}`),
    states: perKey(NATIVE_JOB_STATES, (s) =>
      gauge(
        `${prefix}jobs_${s}`,
        labels,
        `Jobs${whose} in state or with flag ${s} (started: not pending; finished: terminal; hold: held by a user or an admin). ${SINCE_38}`,
      ),
    ),
    ...(Object.fromEntries(
      Object.entries(JOB_AGGREGATES).map(([k, [suffix, d]]) => [
        k,
        gauge(`${prefix}${suffix}`, labels, `${d.slice(0, -1)}${whose}. ${SINCE_38}`),
      ]),
    ) as Record<keyof typeof JOB_AGGREGATES, GaugeSpec<L>>),
  };
}

/** `/metrics/jobs`. */
export const NATIVE_JOB_METRICS = jobFamilies('slurm_', [], '', 'Jobs slurmctld lists, each pending array task one');

/** `/metrics/jobs-users-accts` (on `/metrics` only when asked for: one series per user and per account and state). */
export const NATIVE_USER_METRICS = jobFamilies('slurm_user_', ['username'], ' of the user', 'Job records');
export const NATIVE_ACCOUNT_METRICS = jobFamilies('slurm_account_', ['account'], ' of the account', 'Job records');

const PARTITION = ['partition'] as const;
/** The partitions sub-collector feeds them: on unless --optional-collectors leaves it out. */
const PARTITIONS: Switch = { option: '--optional-collectors', value: 'partitions', listed: true, byDefault: true };
const pGauge = (name: string, description: string): GaugeSpec<'partition'> =>
  switchedBy(gauge(`slurm_partition_${name}`, PARTITION, `${description} ${SINCE_38}`), PARTITIONS);

/** `/metrics/partitions`: /partitions for the partitions, /nodes and /jobs for what is in them. */
export const NATIVE_PARTITION_METRICS = {
  partitions: switchedBy(gauge('slurm_partitions', [], `Partitions slurmctld knows. ${SINCE_38}`), PARTITIONS),
  jobs: pGauge(
    'jobs',
    'Job records of the partition not yet finished (a pending job submitted to several partitions counts in the one slurmctld last tried it in: of the lowest PriorityTier, among equal tiers the one where its priority is lowest (v0.0.42+), then the last listed; a held, dependent or begin-time job never tried in the first by tier).',
  ),
  jobStates: perKey(NATIVE_JOB_STATES, (s) => pGauge(`jobs_${s}`, `Jobs of the partition in state or with flag ${s}.`)),
  jobsCpusAlloc: pGauge('jobs_cpus_alloc', 'CPUs allocated to running and suspended jobs of the partition.'),
  jobsMemoryAlloc: pGauge(
    'jobs_memory_alloc',
    'Memory allocated to running and suspended jobs of the partition, in MiB.',
  ),
  jobsGpusAlloc: pGauge(
    'jobs_gpus_alloc',
    'GPUs allocated to running and suspended jobs of the partition (slurmctld serves it from 26.05).',
  ),
  jobsMaxNodes: pGauge(
    'jobs_max_job_nodes',
    'Largest maximum node count (never below its minimum) a pending job of the partition asks for.',
  ),
  jobsMaxNodesNohold: pGauge(
    'jobs_max_job_nodes_nohold',
    'Largest maximum node count (never below its minimum) a pending job of the partition that is not held asks for.',
  ),
  jobsMinNodes: pGauge('jobs_min_job_nodes', 'Largest minimum node count a pending job of the partition asks for.'),
  jobsMinNodesNohold: pGauge(
    'jobs_min_job_nodes_nohold',
    'Largest minimum node count a pending job of the partition that is not held asks for.',
  ),
  jobsWaitNodeLimit: pGauge(
    'jobs_wait_part_node_limit',
    'Pending jobs of the partition waiting on its node limits (PartitionNodeLimit).',
  ),
  nodes: pGauge('nodes', 'Nodes of the partition.'),
  nodeStates: perKey(NATIVE_PARTITION_NODE_STATES, (s) =>
    pGauge(`nodes_${s}`, `Nodes of the partition in state or with flag ${s}.`),
  ),
  cpusAlloc: pGauge('nodes_cpus_alloc', 'Allocated CPUs of the nodes of the partition.'),
  cpusIdle: pGauge('nodes_cpus_idle', 'Effective minus allocated CPUs of the nodes of the partition.'),
  cpusEffective: switchedBy(
    gauge(
      'slurm_partition_nodes_cpus_efctv',
      PARTITION,
      'CPUs of the nodes of the partition usable by jobs (configured minus specialized). From API v0.0.40.',
    ),
    PARTITIONS,
  ),
  memAlloc: pGauge('nodes_mem_alloc', 'Allocated memory of the nodes of the partition, MiB.'),
  memAvail: pGauge(
    'nodes_mem_avail',
    'Memory of the nodes of the partition usable by jobs (RealMemory minus MemSpecLimit; free or not), MiB.',
  ),
  memFree: pGauge('nodes_mem_free', 'Free memory of the nodes of the partition as slurmd reports it, MiB.'),
  memTotal: pGauge('nodes_mem_tot', 'Memory configured on the nodes of the partition, MiB.'),
  cpus: pGauge('cpus', 'CPUs of the partition (TotalCPUs).'),
  gpus: pGauge('gpus', 'GPUs of the nodes of the partition (gres/gpu in their TRES; slurmctld serves it from 26.05).'),
} as const;

const sGauge = (name: string, description: string, since = 'v0.0.38'): GaugeSpec<never> =>
  gauge(`slurm_${name}`, [], `${description} From API ${since}.`);

/** `/metrics/scheduler`, from /diag (sdiag's figures; times in microseconds, cumulative ones since the last reset). */
export const NATIVE_SCHEDULER_METRICS = {
  agentCnt: sGauge('agent_cnt', 'Agent threads slurmctld runs.'),
  agentQueueSize: sGauge('agent_queue_size', 'Outgoing RPCs queued for the agent.'),
  agentThreadCnt: sGauge('agent_thread_cnt', 'Threads the agents use.'),
  serverThreadCnt: sGauge('server_thread_cnt', 'Server threads slurmctld is running.'),
  dbdQueueSize: sGauge('slurmdbd_queue_size', 'Messages queued for slurmdbd.'),
  lastProcReqStart: sGauge('last_proc_req_start', 'When the statistics were last reset (Unix seconds).'),
  statsTimestamp: sGauge('sched_stats_timestamp', 'When slurmctld took these statistics (Unix seconds).'),
  cycleCnt: sGauge('schedule_cycle_cnt', 'Main scheduler cycles run.'),
  cycleDepth: sGauge('schedule_cycle_depth', 'Jobs the main scheduler has looked at, all cycles together.', 'v0.0.41'),
  cycleLast: sGauge('schedule_cycle_last', 'Length of the last main scheduler cycle, µs.'),
  cycleMax: sGauge('schedule_cycle_max', 'Longest main scheduler cycle, µs.'),
  cycleTot: sGauge('schedule_cycle_tot', 'Time spent in main scheduler cycles, µs.', 'v0.0.41'),
  queueLen: sGauge('schedule_queue_len', 'Jobs pending in the main scheduler queue.'),
  meanCycle: sGauge('sched_mean_cycle', 'Mean main scheduler cycle, µs.'),
  meanDepthCycle: sGauge('sched_mean_depth_cycle', 'Mean jobs looked at per main scheduler cycle.'),
  exitEnd: sGauge('sched_exit_end', 'Main scheduler cycles that ended at the end of the queue.', 'v0.0.40'),
  exitMaxDepth: sGauge('sched_exit_max_depth', 'Main scheduler cycles that ended at default_queue_depth.', 'v0.0.40'),
  exitMaxJobStart: sGauge(
    'sched_exit_max_job_start',
    'Main scheduler cycles that ended at sched_max_job_start.',
    'v0.0.40',
  ),
  exitLic: sGauge('sched_exit_lic', 'Main scheduler cycles that ended blocked on licenses.', 'v0.0.40'),
  exitRpcCnt: sGauge('sched_exit_rpc_cnt', 'Main scheduler cycles that ended at max_rpc_cnt.', 'v0.0.40'),
  exitTimeout: sGauge('sched_exit_timeout', 'Main scheduler cycles that ended at max_sched_time.', 'v0.0.40'),
  bfActive: sGauge('bf_active', 'Whether a backfill cycle is running (1) or not (0).'),
  bfCycleCnt: sGauge('bf_cycle_cnt', 'Backfill cycles run.'),
  bfCycleLast: sGauge('bf_cycle_last', 'Length of the last backfill cycle, µs.'),
  bfCycleMax: sGauge('bf_cycle_max', 'Longest backfill cycle, µs (v0.0.40 leaves it out).'),
  bfCycleTot: sGauge('bf_cycle_tot', 'Time spent in backfill cycles, µs.', 'v0.0.40'),
  bfDepthMean: sGauge('bf_depth_mean', 'Mean jobs looked at per backfill cycle.'),
  bfDepthTot: sGauge('bf_depth_tot', 'Jobs backfill has looked at, all cycles together.', 'v0.0.40'),
  bfDepthTryTot: sGauge('bf_depth_try_tot', 'Jobs backfill has tried to start, all cycles together.', 'v0.0.40'),
  bfTryDepthMean: sGauge('bf_try_depth_mean', 'Mean jobs tried per backfill cycle.'),
  // The v0.0.38 spec lists these two, but Slurm 22.05 does not send them.
  bfLastDepth: sGauge(
    'bf_last_depth',
    'Jobs looked at in the last backfill cycle (Slurm 22.05 does not send it).',
    'v0.0.40',
  ),
  bfLastDepthTry: sGauge(
    'bf_last_depth_try',
    'Jobs tried in the last backfill cycle (Slurm 22.05 does not send it).',
    'v0.0.40',
  ),
  bfMeanCycle: sGauge('bf_mean_cycle', 'Mean backfill cycle, µs.'),
  bfMeanTableSz: sGauge(
    'bf_mean_table_sz',
    'Mean backfill table size (table sizes summed over cycles / cycles).',
    'v0.0.41',
  ),
  bfQueueLen: sGauge('bf_queue_len', 'Jobs pending in the backfill queue.'),
  bfQueueLenMean: sGauge('bf_queue_len_mean', 'Mean backfill queue length.'),
  bfQueueLenTot: sGauge('bf_queue_len_tot', 'Backfill queue lengths, all cycles together.', 'v0.0.40'),
  bfTableSize: sGauge('bf_table_size', 'Backfill table size in the last cycle.'),
  bfTableSizeTot: sGauge('bf_table_size_tot', 'Backfill table sizes, all cycles together.', 'v0.0.41'),
  bfWhenLastCycle: sGauge(
    'bf_when_last_cycle',
    'When the last backfill cycle ended (Unix seconds; 0 before the first).',
  ),
  bfExitEnd: sGauge('bf_exit_end', 'Backfill cycles that ended at the end of the queue.', 'v0.0.40'),
  bfExitMaxJobStart: sGauge('bf_exit_max_job_start', 'Backfill cycles that ended at bf_max_job_start.', 'v0.0.40'),
  bfExitMaxJobTest: sGauge('bf_exit_max_job_test', 'Backfill cycles that ended at bf_max_job_test.', 'v0.0.40'),
  bfExitStateChanged: sGauge(
    'bf_exit_state_changed',
    'Backfill cycles that ended because node or partition state changed.',
    'v0.0.40',
  ),
  bfExitTableLimit: sGauge('bf_exit_table_limit', 'Backfill cycles that ended at bf_node_space_size.', 'v0.0.40'),
  bfExitTimeout: sGauge('bf_exit_timeout', 'Backfill cycles that ended at bf_max_time.', 'v0.0.40'),
  backfilledJobs: sGauge('backfilled_jobs', 'Jobs started by backfill.'),
  backfilledHetJobs: sGauge('backfilled_het_jobs', 'Heterogeneous job components started by backfill.'),
  lastBackfilledJobs: sGauge(
    'last_backfilled_jobs',
    'Jobs started by backfill since the last cycle counters were read.',
  ),
  jobsCanceled: sGauge('sdiag_jobs_canceled', 'Jobs cancelled since the last reset.'),
  jobsCompleted: sGauge('sdiag_jobs_completed', 'Jobs completed since the last reset.'),
  jobsFailed: sGauge('sdiag_jobs_failed', 'Jobs failed since the last reset.'),
  jobsPending: sGauge('sdiag_jobs_pending', 'Jobs pending at the last job state sample.'),
  jobsRunning: sGauge('sdiag_jobs_running', 'Jobs running at the last job state sample.'),
  jobsStarted: sGauge('sdiag_jobs_started', 'Jobs started since the last reset.'),
  jobsSubmitted: sGauge('sdiag_jobs_submitted', 'Jobs submitted since the last reset.'),
  jobStatesTs: sGauge('sdiag_job_states_ts', 'When the job state counts were sampled (Unix seconds).'),
  latency: sGauge('sdiag_latency', 'Cost of a gettimeofday() call as slurmctld measured it, µs.'),
} as const;

const jobSpecs = (f: ReturnType<typeof jobFamilies>): GaugeSpec[] => [
  f.jobs,
  ...values(f.states),
  f.cpusAlloc,
  f.memoryAlloc,
  f.nodesAlloc,
  f.gpusAlloc,
];

/** Every native family served by default, in the order of docs/metrics.md. */
export const NATIVE_SPECS: readonly GaugeSpec[] = [
  NATIVE_NODE_METRICS.cpus,
  NATIVE_NODE_METRICS.cpusAlloc,
  NATIVE_NODE_METRICS.memory,
  NATIVE_NODE_METRICS.memoryAlloc,
  NATIVE_NODE_METRICS.gpus,
  NATIVE_NODE_METRICS.gpusAlloc,
  NATIVE_NODE_METRICS.nodes,
  ...values(NATIVE_NODE_METRICS.states),
  ...jobSpecs(NATIVE_JOB_METRICS),
  ...Object.values(NATIVE_PARTITION_METRICS).flatMap((v) =>
    'name' in v ? [v as GaugeSpec] : values(v as Record<string, GaugeSpec>),
  ),
  ...values(NATIVE_SCHEDULER_METRICS),
];

/** `--user-account-metrics`. */
export const NATIVE_USER_ACCOUNT_SPECS: readonly GaugeSpec[] = [
  ...jobSpecs(NATIVE_USER_METRICS),
  ...jobSpecs(NATIVE_ACCOUNT_METRICS),
];
