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
export const LEGACY_STATE_LABELS = ['state_base', 'state_is_drain', 'state_is_maintenance', 'state_is_reserved'] as const;

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
  nodeInfo: spec('gauge', 'slurm_node_info', '', NODE_INFO_LABELS,
    'Slurm node identity and state: base state, state flags, whether the exporter considers it unavailable, reservation, address, reason and comment; value is always 1.'),
  nodeCpusTotal: spec('gauge', 'slurm_node_cpus_total', '', NODE, 'CPUs configured on the node.'),
  nodeCpusAllocated: spec('gauge', 'slurm_node_cpus_allocated', '', NODE, 'CPUs of the node allocated to jobs.'),
  nodeCpusIdle: spec('gauge', 'slurm_node_cpus_idle', '', NODE, 'CPUs of the node not allocated to any job.'),
  nodeCpusEffective: spec('gauge', 'slurm_node_cpus_effective', '', NODE,
    'CPUs of the node usable by jobs: the total minus the CPUs reserved for system daemons.'),
  nodeMemoryTotal: spec('gauge', 'slurm_node_memory_total_bytes', 'By', NODE, 'Memory configured on the node (RealMemory).'),
  nodeMemoryAllocated: spec('gauge', 'slurm_node_memory_allocated_bytes', 'By', NODE, 'Memory of the node allocated to jobs.'),
  nodeMemoryFree: spec('gauge', 'slurm_node_memory_free_bytes', 'By', NODE, 'Free memory on the node as slurmd last reported it.'),
  nodeMemoryEffective: spec('gauge', 'slurm_node_memory_effective_bytes', 'By', NODE,
    'Memory of the node usable by jobs: the total minus the memory reserved for system daemons.'),
  nodePartition: spec('gauge', 'slurm_node_partition', '', ['node_name', 'partition'],
    'One series per node and partition it belongs to, for partition-level joins; value is always 1.'),
  jobInfo: spec('gauge', 'slurm_job_info', '', JOB_INFO_LABELS,
    'Slurm job identity, state, owner, output paths, array identity and times (Unix seconds, empty when unset); value is always 1.'),
  nodeJob: spec('gauge', 'slurm_node_job', '', ['job_id', 'node_name'], 'One series per job and node it runs (or ran) on; value is always 1.'),
  jobDuration: spec('gauge', 'slurm_job_duration_seconds', 's', JOB,
    'Run time of the job: until now while it runs, end minus start once it has finished. Only for jobs that have started.'),
  jobCpus: spec('gauge', 'slurm_job_cpus', '', JOB, 'CPUs of the job: allocated, or requested while nothing is allocated.'),
  jobMemory: spec('gauge', 'slurm_job_memory_bytes', 'By', JOB, 'Memory of the job: allocated, or requested while nothing is allocated.'),
  jobGpus: spec('gauge', 'slurm_job_gpus', '', JOB, 'GPUs allocated to the job (gres/gpu in its allocated TRES). Not reported for pending jobs.'),
  rpcCalls: spec('counter', 'slurm_controller_rpc_calls', '', ['message_type'],
    'RPCs slurmctld has processed, by message type, since its statistics were last reset (as sdiag shows them).'),
  rpcDuration: spec('counter', 'slurm_controller_rpc_duration_seconds', 's', ['message_type'],
    'Time slurmctld has spent processing RPCs, by message type, since its statistics were last reset.'),
  rpcUserCalls: spec('counter', 'slurm_controller_rpc_user_calls', '', ['user', 'user_id'],
    'RPCs slurmctld has processed, by calling user, since its statistics were last reset.'),
  rpcUserDuration: spec('counter', 'slurm_controller_rpc_user_duration_seconds', 's', ['user', 'user_id'],
    'Time slurmctld has spent processing RPCs, by calling user, since its statistics were last reset.'),
  serverThreadCount: spec('gauge', 'slurm_controller_server_thread_count', '', [], 'Server threads slurmctld is running.'),
  jobGpuSeconds: spec('counter', 'slurm_job_gpu_seconds', 's', JOB,
    'GPU seconds allocated to jobs while Slurm lists them: run time between two job refreshes × GPUs allocated to the job, counted since the agent first saw the job.'),
} as const;

export const CLUSTER_EVENT_METRICS = {
  nodeGpuSeconds: spec('counter', 'slurm_node_gpu_seconds', 's', ['node_name', ...LEGACY_STATE_LABELS],
    'GPU seconds accumulated by nodes: time between two node refreshes × GPUs configured on the node, by the state the node was in.'),
  nodeFails: spec('counter', 'slurm_node_fails', '', ['node_name', ...LEGACY_STATE_LABELS, 'reason'],
    'Times a node went from a healthy state to DOWN or DRAIN, with the state and reason it failed with. Power-managed nodes are not counted.'),
  nodeUnavailability: spec('histogram', 'slurm_node_unavailability_duration_seconds', 's', NODE,
    'Length of node outages (down, not responding, idle and drained, ...), observed when the outage ends. Power-managed nodes are excluded; tracking starts afresh when the exporter restarts.',
    DURATION_BUCKETS),
  nodeDraining: spec('histogram', 'slurm_node_draining_duration_seconds', 's', NODE,
    'Length of draining periods (DRAIN while jobs still run), observed when draining ends. Tracking starts afresh when the exporter restarts.',
    DURATION_BUCKETS),
} as const;

/** Self-monitoring, served on the monitoring endpoint. */
export const CLUSTER_SELF_METRICS = {
  collectionDuration: spec('gauge', 'slurm_exporter_collection_duration_seconds', 's', [], 'Duration of the last collection tick: from its start until every sub-collector run it started had ended.'),
  collectionAttempts: spec('counter', 'slurm_exporter_collection_attempts', '', [], 'Collection ticks that started at least one sub-collector run, counted when those runs have ended.'),
  collectionFailures: spec('counter', 'slurm_exporter_collection_failures', '', [], 'Collection ticks in which at least one sub-collector run failed.'),
  collectorDuration: spec('gauge', 'slurm_exporter_collector_duration_seconds', 's', COLLECTOR,
    'Duration of the last run of each sub-collector (nodes, jobs, diag).'),
  collectorErrors: spec('counter', 'slurm_exporter_collector_errors', '', COLLECTOR,
    'Failed runs of each sub-collector; a failed sub-collector keeps exporting its last good data.'),
  collectorInflight: spec('gauge', 'slurm_exporter_collector_inflight', '', COLLECTOR, 'Runs of each sub-collector in progress.'),
  collectorSkipped: spec('counter', 'slurm_exporter_collector_skipped', '', COLLECTOR,
    'Runs of each sub-collector skipped because its in-flight limit was reached.'),
  collectorStaleResults: spec('counter', 'slurm_exporter_collector_stale_results', '', COLLECTOR,
    'Results of each sub-collector dropped because a newer result was already stored.'),
  skippedItems: spec('counter', 'slurm_exporter_skipped_items', '', COLLECTOR,
    'Malformed nodes or jobs skipped while decoding a response (the rest of the response is kept).'),
  apiErrors: spec('counter', 'slurm_exporter_api_errors', '', COLLECTOR,
    'Slurm errors[] carried by successful responses (the data in them is used; each message is logged once).'),
  apiFieldsLost: spec('counter', 'slurm_exporter_api_fields_lost', '', COLLECTOR,
    'Fields that responses carried before slurmrestd was renegotiated to another API version and lack after it (named in the log).'),
  metricsRequests: spec('counter', 'slurm_exporter_metrics_requests', '', [], 'Requests served by the /metrics endpoint.'),
  metricsExported: spec('gauge', 'slurm_exporter_metrics_exported', '', [], 'Points in the last published snapshot.'),
} as const;

export type ClusterEventSpec = MetricSpec & { kind: 'counter' | 'histogram' };

/** The event families as telemetry's Pipeline wants them (`eventSpecs`). */
export const CLUSTER_EVENT_SPECS: readonly ClusterEventSpec[] = Object.values(CLUSTER_EVENT_METRICS);

checkCatalogue([...Object.values(CLUSTER_METRICS), ...CLUSTER_EVENT_SPECS, ...Object.values(CLUSTER_SELF_METRICS)]);
