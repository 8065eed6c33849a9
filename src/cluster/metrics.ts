/**
 * The cluster agent's metric families, declared once, under the names Soperator's Slurm exporter
 * documents (OTLP names carry no `_total`: the Prometheus side adds it to counters).
 *
 * Two kinds of families, kept in separate records because telemetry/ feeds them differently:
 * - CLUSTER_METRICS describe the latest snapshot (rules.observe → the snapshot producer). The RPC
 *   counters belong here: slurmctld already accumulates them, we only copy its totals.
 * - CLUSTER_EVENT_METRICS accumulate transitions seen between two refreshes (state.advance →
 *   SDK synchronous counters and histograms), so only this process can know them.
 */
import { checkCatalogue, defineMetric as spec } from '../telemetry/spec.js';
import type { MetricSpec } from '../telemetry/spec.js';

/** Histogram boundaries (seconds) of Soperator's outage and draining durations: 30 s to 30 days. */
export const DURATION_BUCKETS: readonly number[] = [
  30, 60, 300, 600, 1800, 3600, 7200, 14400, 28800, 43200, 86400, 172800, 259200, 604800, 1209600, 2592000,
];

/** Labels of the legacy state flags, always "true" or "false". */
export const LEGACY_STATE_LABELS = [
  'state_base',
  'state_is_drain',
  'state_is_maintenance',
  'state_is_reserved',
] as const;

/** Labels of the newer state flags, "true" or "" (empty keeps VictoriaMetrics under its label limit). */
export const NEW_STATE_FLAG_LABELS = [
  'state_is_completing',
  'state_is_fail',
  'state_is_planned',
  'state_is_not_responding',
  'state_is_invalid',
  'state_is_cloud',
  'state_is_power_down',
  'state_is_power_drain',
  'state_is_powered_down',
  'state_is_powering_down',
  'state_is_powering_up',
  'state_is_power_up',
] as const;

const NODE_INFO_LABELS = [
  'node_name',
  'instance_id',
  ...LEGACY_STATE_LABELS,
  ...NEW_STATE_FLAG_LABELS,
  'is_unavailable',
  'reservation_name',
  'address',
  'reason',
  'comment',
] as const;

/** `user_mail` is not in Soperator's docs but is in its exporter; it sits after user_name there too. */
const JOB_INFO_LABELS = [
  'job_id',
  'job_state',
  'job_state_reason',
  'slurm_partition',
  'job_name',
  'user_name',
  'user_mail',
  'user_id',
  'standard_error',
  'standard_output',
  'array_job_id',
  'array_task_id',
  'submit_time',
  'start_time',
  'end_time',
  'finished_time',
] as const;

const NODE = ['node_name'] as const;
const JOB = ['job_id'] as const;
const COLLECTOR = ['collector'] as const;

export const CLUSTER_METRICS = {
  nodeInfo: spec(
    'gauge',
    'slurm_node_info',
    '',
    NODE_INFO_LABELS,
    'Slurm node identity and state: base state, state flags, whether the exporter considers it unavailable, reservation, address, reason and comment; value is always 1.',
  ),
  nodeCpusTotal: spec('gauge', 'slurm_node_cpus_total', '', NODE, 'CPUs configured on the node.'),
  nodeCpusAllocated: spec('gauge', 'slurm_node_cpus_allocated', '', NODE, 'CPUs of the node allocated to jobs.'),
  nodeCpusIdle: spec('gauge', 'slurm_node_cpus_idle', '', NODE, 'CPUs of the node not allocated to any job.'),
  nodeCpusEffective: spec(
    'gauge',
    'slurm_node_cpus_effective',
    '',
    NODE,
    'CPUs of the node usable by jobs: the total minus the CPUs reserved for system daemons.',
  ),
  nodeMemoryTotal: spec(
    'gauge',
    'slurm_node_memory_total_bytes',
    'By',
    NODE,
    'Memory configured on the node (RealMemory).',
  ),
  nodeMemoryAllocated: spec(
    'gauge',
    'slurm_node_memory_allocated_bytes',
    'By',
    NODE,
    'Memory of the node allocated to jobs.',
  ),
  nodeMemoryFree: spec(
    'gauge',
    'slurm_node_memory_free_bytes',
    'By',
    NODE,
    'Free memory on the node as slurmd last reported it.',
  ),
  nodeMemoryEffective: spec(
    'gauge',
    'slurm_node_memory_effective_bytes',
    'By',
    NODE,
    'Memory of the node usable by jobs: the total minus the memory reserved for system daemons.',
  ),
  nodePartition: spec(
    'gauge',
    'slurm_node_partition',
    '',
    ['node_name', 'partition'],
    'One series per node and partition it belongs to, for partition-level joins; value is always 1.',
  ),
  jobInfo: spec(
    'gauge',
    'slurm_job_info',
    '',
    JOB_INFO_LABELS,
    'Slurm job identity, state, owner, output paths, array identity and times (Unix seconds, empty when unset); value is always 1.',
  ),
  nodeJob: spec(
    'gauge',
    'slurm_node_job',
    '',
    ['job_id', 'node_name', 'nvlink_instance_group', 'nodeset_name'],
    "One series per job and node it runs (or ran) on, with the node's NVLink instance group and NodeSet from Kubernetes (empty without); value is always 1.",
  ),
  nodeNvlinkInstanceGroup: spec(
    'gauge',
    'slurm_node_nvlink_instance_group',
    '',
    ['node_name', 'instance_id', 'nvlink_instance_group', 'nodeset_name'],
    'Slurm node → NVLink instance group, from the labels of the Kubernetes Node its worker pod runs on (Soperator); only for nodes whose group is known; value is always 1.',
  ),
  jobDuration: spec(
    'gauge',
    'slurm_job_duration_seconds',
    's',
    JOB,
    'Run time of the job: until now while it runs, end minus start once it has finished. Only for jobs that have started.',
  ),
  jobCpus: spec(
    'gauge',
    'slurm_job_cpus',
    '',
    JOB,
    'CPUs of the job: allocated, or requested while nothing is allocated.',
  ),
  jobMemory: spec(
    'gauge',
    'slurm_job_memory_bytes',
    'By',
    JOB,
    'Memory of the job: allocated, or requested while nothing is allocated.',
  ),
  jobGpus: spec(
    'gauge',
    'slurm_job_gpus',
    '',
    JOB,
    'GPUs allocated to the job (gres/gpu in its allocated TRES). Not reported for pending jobs.',
  ),
  rpcCalls: spec(
    'counter',
    'slurm_controller_rpc_calls',
    '',
    ['message_type'],
    'RPCs slurmctld has processed, by message type, since its statistics were last reset (as sdiag shows them).',
  ),
  rpcDuration: spec(
    'counter',
    'slurm_controller_rpc_duration_seconds',
    's',
    ['message_type'],
    'Time slurmctld has spent processing RPCs, by message type, since its statistics were last reset.',
  ),
  rpcUserCalls: spec(
    'counter',
    'slurm_controller_rpc_user_calls',
    '',
    ['user', 'user_id'],
    'RPCs slurmctld has processed, by calling user, since its statistics were last reset.',
  ),
  rpcUserDuration: spec(
    'counter',
    'slurm_controller_rpc_user_duration_seconds',
    's',
    ['user', 'user_id'],
    'Time slurmctld has spent processing RPCs, by calling user, since its statistics were last reset.',
  ),
  serverThreadCount: spec(
    'gauge',
    'slurm_controller_server_thread_count',
    '',
    [],
    'Server threads slurmctld is running.',
  ),
  jobGpuSeconds: spec(
    'counter',
    'slurm_job_gpu_seconds',
    's',
    JOB,
    'GPU seconds allocated to jobs while Slurm lists them: run time between two job refreshes × GPUs allocated to the job, counted since the agent first saw the job.',
  ),
} as const;

export const CLUSTER_EVENT_METRICS = {
  nodeGpuSeconds: spec(
    'counter',
    'slurm_node_gpu_seconds',
    's',
    ['node_name', ...LEGACY_STATE_LABELS],
    'GPU seconds accumulated by nodes: time between two node refreshes × GPUs configured on the node, by the state the node was in.',
  ),
  nodeFails: spec(
    'counter',
    'slurm_node_fails',
    '',
    ['node_name', ...LEGACY_STATE_LABELS, 'reason'],
    'Times a node went from a healthy state to DOWN or DRAIN, with the state and reason it failed with. Power-managed nodes are not counted.',
  ),
  nodeUnavailability: spec(
    'histogram',
    'slurm_node_unavailability_duration_seconds',
    's',
    NODE,
    'Length of node outages (down, not responding, idle and drained, ...), observed when the outage ends. Power-managed nodes are excluded; tracking starts afresh when the exporter restarts.',
    DURATION_BUCKETS,
  ),
  nodeDraining: spec(
    'histogram',
    'slurm_node_draining_duration_seconds',
    's',
    NODE,
    'Length of draining periods (DRAIN while jobs still run), observed when draining ends. Tracking starts afresh when the exporter restarts.',
    DURATION_BUCKETS,
  ),
} as const;

/** Self-monitoring, served on the monitoring endpoint. */
export const CLUSTER_SELF_METRICS = {
  collectionDuration: spec(
    'gauge',
    'slurm_exporter_collection_duration_seconds',
    's',
    [],
    'Duration of the last collection tick: from its start until every sub-collector run it started had ended.',
  ),
  collectionAttempts: spec(
    'counter',
    'slurm_exporter_collection_attempts',
    '',
    [],
    'Collection ticks that started at least one sub-collector run, counted when those runs have ended.',
  ),
  collectionFailures: spec(
    'counter',
    'slurm_exporter_collection_failures',
    '',
    [],
    'Collection ticks in which at least one sub-collector run failed.',
  ),
  collectorDuration: spec(
    'gauge',
    'slurm_exporter_collector_duration_seconds',
    's',
    COLLECTOR,
    'Duration of the last run of each sub-collector (nodes, jobs, diag, and partitions, licenses, reservations, shares, limits when on).',
  ),
  collectorErrors: spec(
    'counter',
    'slurm_exporter_collector_errors',
    '',
    COLLECTOR,
    "Failed runs of each sub-collector (Soperator's series; slurm_exporter_collector_error_kinds says why); a failed sub-collector keeps exporting its last good data.",
  ),
  collectorErrorKinds: spec(
    'counter',
    'slurm_exporter_collector_error_kinds',
    '',
    ['collector', 'kind'],
    'Failed runs of each sub-collector by why they failed (auth, timeout, network, too_large, http, version, decode, api_errors, aborted, internal). `absent`: slurmrestd does not serve the endpoint on the negotiated API version, counted once when found (its families are then absent; it is asked again every 10 minutes).',
  ),
  collectorInflight: spec(
    'gauge',
    'slurm_exporter_collector_inflight',
    '',
    COLLECTOR,
    'Runs of each sub-collector in progress.',
  ),
  collectorSkipped: spec(
    'counter',
    'slurm_exporter_collector_skipped',
    '',
    COLLECTOR,
    'Runs of each sub-collector skipped because its in-flight limit was reached.',
  ),
  collectorStaleResults: spec(
    'counter',
    'slurm_exporter_collector_stale_results',
    '',
    COLLECTOR,
    'Results of each sub-collector dropped because a newer result was already stored.',
  ),
  skippedItems: spec(
    'counter',
    'slurm_exporter_skipped_items',
    '',
    COLLECTOR,
    'Malformed nodes or jobs skipped while decoding a response (the rest of the response is kept).',
  ),
  apiErrors: spec(
    'counter',
    'slurm_exporter_api_errors',
    '',
    COLLECTOR,
    'Slurm errors[] carried by successful responses (the data in them is used; each message is logged once).',
  ),
  hostlistErrors: spec(
    'counter',
    'slurm_exporter_hostlist_errors',
    '',
    COLLECTOR,
    "Items whose hostlist cannot be expanded, per response (a job's nodes, a partition's or reservation's node list): the item is kept, without the series that need its hosts (each distinct list is logged once).",
  ),
  apiFieldsLost: spec(
    'counter',
    'slurm_exporter_api_fields_lost',
    '',
    COLLECTOR,
    'Fields that responses carried before slurmrestd was renegotiated to another API version and lack after it (named in the log).',
  ),
  metricsRequests: spec(
    'counter',
    'slurm_exporter_metrics_requests',
    '',
    [],
    'Requests served by the /metrics endpoint.',
  ),
  metricsExported: spec('gauge', 'slurm_exporter_metrics_exported', '', [], 'Points in the last published snapshot.'),
} as const;

// ---- Slurm's own families (slurmctld 25.11+ `metrics/openmetrics`), computed from slurmrestd ----
//
// Same names, labels and meaning as slurmctld serves them: every one a gauge, the cumulative
// scheduler counters included, none with `_total`, so dashboards and alerts written for a
// Slurm ≥ 25.11 work unchanged. Each description ends with the first API version that carries
// its source field: on an older slurmrestd the family is absent, never 0.

type GaugeSpec<L extends string = string> = MetricSpec<L, never> & { kind: 'gauge' };
const gauge = <const L extends string>(
  name: string,
  labels: readonly L[],
  description: string,
  unit = '',
): GaugeSpec<L> => spec('gauge', name, unit, labels, description);
const SINCE_38 = 'From API v0.0.38.';

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
 * meaning per name (and pushed over OTLP under `slurmctld_` names, see the README).
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

/** `/metrics/jobs-users-accts` (off unless asked for: one series per user and per account and state). */
export const NATIVE_USER_METRICS = jobFamilies('slurm_user_', ['username'], ' of the user', 'Job records');
export const NATIVE_ACCOUNT_METRICS = jobFamilies('slurm_account_', ['account'], ' of the account', 'Job records');

const PARTITION = ['partition'] as const;
const pGauge = (name: string, description: string): GaugeSpec<'partition'> =>
  gauge(`slurm_partition_${name}`, PARTITION, `${description} ${SINCE_38}`);

/** `/metrics/partitions`: /partitions for the partitions, /nodes and /jobs for what is in them. */
export const NATIVE_PARTITION_METRICS = {
  partitions: gauge('slurm_partitions', [], `Partitions slurmctld knows. ${SINCE_38}`),
  jobs: pGauge(
    'jobs',
    'Job records of the partition not yet finished (a pending job submitted to several partitions counts in the last one it lists, where slurmctld leaves it).',
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
  jobsMaxNodes: pGauge('jobs_max_job_nodes', 'Largest node count a pending job of the partition asks for.'),
  jobsMaxNodesNohold: pGauge(
    'jobs_max_job_nodes_nohold',
    'Largest node count a pending job of the partition that is not held asks for.',
  ),
  jobsMinNodes: pGauge('jobs_min_job_nodes', 'Smallest node count a pending job of the partition asks for.'),
  jobsMinNodesNohold: pGauge(
    'jobs_min_job_nodes_nohold',
    'Smallest node count a pending job of the partition that is not held asks for.',
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
  cpusEffective: gauge(
    'slurm_partition_nodes_cpus_efctv',
    PARTITION,
    'CPUs of the nodes of the partition usable by jobs (configured minus specialized). From API v0.0.40.',
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

const values = <T>(r: Readonly<Record<string, T>>): T[] => Object.values(r);
const jobSpecs = (f: ReturnType<typeof jobFamilies>): GaugeSpec[] => [
  f.jobs,
  ...values(f.states),
  f.cpusAlloc,
  f.memoryAlloc,
  f.nodesAlloc,
  f.gpusAlloc,
];

/** Every native family served by default, in README order. */
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

// ---- beyond Slurm's own set, in its naming style ----

/** From /jobs (no request of their own). */
export const JOB_EXTRA_METRICS = {
  pendingReason: gauge(
    'slurm_jobs_pending_reason',
    ['reason', 'partition'],
    'Pending jobs by the reason slurmctld gives (Priority, Resources, JobHeldUser, ...) and partition; a job submitted to several partitions counts in each. From API v0.0.38.',
  ),
} as const;

/** From /licenses, its own sub-collector. */
export const LICENSE_METRICS = {
  total: gauge('slurm_license_total', ['license'], 'Licenses configured (Total). From API v0.0.38.'),
  used: gauge('slurm_license_used', ['license'], 'Licenses in use by jobs. From API v0.0.38.'),
  free: gauge('slurm_license_free', ['license'], 'Licenses available to jobs now. From API v0.0.38.'),
  reserved: gauge('slurm_license_reserved', ['license'], 'Licenses held by reservations. From API v0.0.38.'),
} as const;

const RESERVATION = ['reservation'] as const;

/** From /reservations, its own sub-collector (node states joined from /nodes). */
export const RESERVATION_METRICS = {
  info: gauge(
    'slurm_reservation_info',
    ['reservation', 'partition', 'flags', 'users', 'accounts', 'nodes'],
    'Reservation identity: partition, flags (comma-separated), users, accounts and reserved hostlist; value is always 1. From API v0.0.38.',
  ),
  startTime: gauge(
    'slurm_reservation_start_time_seconds',
    RESERVATION,
    'When the reservation starts (Unix seconds). From API v0.0.38.',
    's',
  ),
  endTime: gauge(
    'slurm_reservation_end_time_seconds',
    RESERVATION,
    'When the reservation ends (Unix seconds). From API v0.0.38.',
    's',
  ),
  nodes: gauge('slurm_reservation_nodes', RESERVATION, 'Nodes reserved. From API v0.0.38.'),
  cores: gauge('slurm_reservation_cores', RESERVATION, 'Cores reserved. From API v0.0.38.'),
  nodeStates: gauge(
    'slurm_reservation_nodes_state',
    ['reservation', 'state'],
    'Reserved nodes by state, under the state names of slurm_nodes_<state> (a node counts under its base state and each flag). From API v0.0.38.',
  ),
} as const;

const SHARE = ['account', 'user', 'partition'] as const;
const share = (name: string, d: string): GaugeSpec<(typeof SHARE)[number]> =>
  gauge(
    `slurm_fairshare_${name}`,
    SHARE,
    `${d} One series per account (user empty) and per user in an account, as sshare lists them. From API v0.0.40.`,
  );

/** From /shares, its own sub-collector; nothing before v0.0.40 (Slurm 23.11), which has no /shares. */
export const FAIRSHARE_METRICS = {
  rawShares: share('raw_shares', 'Shares assigned (RawShares).'),
  normShares: share('norm_shares', 'Shares normalised to the whole cluster (NormShares).'),
  rawUsage: share('raw_usage', 'Decayed usage in CPU-seconds (RawUsage).'),
  normUsage: share('norm_usage', 'Usage normalised to the whole cluster (NormUsage).'),
  effectiveUsage: share('effective_usage', "Usage including the parent account's (EffectvUsage)."),
  factor: share('factor', 'Fairshare factor, 0 to 1 (FairShare).'),
  level: share('level', 'Fairshare factor at this level of the tree (LevelFS).'),
} as const;

const ASSOC = ['account', 'user', 'partition'] as const;

/** `--accounting-limits`: from slurmdbd's /qos and /associations, a sub-collector of its own. */
export const LIMIT_METRICS = {
  qos: gauge(
    'slurm_qos_limit',
    ['qos', 'limit'],
    "A limit set on a QoS, by sacctmgr's name: priority, usage_factor, grp_jobs, grp_submit_jobs (from API v0.0.42), max_jobs_per_user, max_jobs_per_account, max_submit_jobs_per_user, max_submit_jobs_per_account, max_wall_seconds, grp_wall_seconds. Unset limits are absent. From API v0.0.38.",
  ),
  qosTres: gauge(
    'slurm_qos_tres_limit',
    ['qos', 'limit', 'tres'],
    'A TRES limit on a QoS (grp_tres, grp_tres_minutes (from API v0.0.42), max_tres_minutes_per_job, max_tres_per_job, max_tres_per_node, max_tres_per_user, max_tres_per_account), per TRES (cpu, mem in MiB, node, gres/gpu, ...). From API v0.0.38.',
  ),
  association: gauge(
    'slurm_association_limit',
    [...ASSOC, 'limit'],
    "A limit set on an association (user empty: the account's own): shares, priority, max_jobs, max_submit_jobs, max_wall_seconds, grp_jobs, grp_submit_jobs. Unset limits are absent. From API v0.0.38.",
  ),
  associationTres: gauge(
    'slurm_association_tres_limit',
    [...ASSOC, 'limit', 'tres'],
    'A TRES limit on an association (grp_tres, grp_tres_minutes, max_tres_per_job, max_tres_per_node), per TRES. From API v0.0.38.',
  ),
} as const;

/** Families beyond slurmctld's own, in README order. */
export const EXTRA_SPECS: readonly GaugeSpec[] = [
  ...values(JOB_EXTRA_METRICS),
  ...values(LICENSE_METRICS),
  ...values(RESERVATION_METRICS),
  ...values(FAIRSHARE_METRICS),
  ...values(LIMIT_METRICS),
];

/** `--user-account-metrics`. */
export const NATIVE_USER_ACCOUNT_SPECS: readonly GaugeSpec[] = [
  ...jobSpecs(NATIVE_USER_METRICS),
  ...jobSpecs(NATIVE_ACCOUNT_METRICS),
];

export type ClusterEventSpec = MetricSpec & { kind: 'counter' | 'histogram' };

/** The event families as telemetry's Pipeline wants them (`eventSpecs`). */
export const CLUSTER_EVENT_SPECS: readonly ClusterEventSpec[] = Object.values(CLUSTER_EVENT_METRICS);

// Each endpoint has one meaning per name: /metrics/nodes reuses four of /metrics' names.
checkCatalogue([...NATIVE_SPECS, ...values(NATIVE_NODE_SHARED_METRICS)]);
checkCatalogue([
  ...Object.values(CLUSTER_METRICS),
  ...CLUSTER_EVENT_SPECS,
  ...Object.values(CLUSTER_SELF_METRICS),
  ...NATIVE_SPECS,
  ...NATIVE_USER_ACCOUNT_SPECS,
  ...EXTRA_SPECS,
  ...values(NATIVE_NODE_SHARED_OTLP_METRICS),
]);
