/**
 * Soperator's snapshot families: the latest state of nodes, jobs and slurmctld's RPC counters, under the
 * names Soperator's Slurm exporter documents (observe → the snapshot producer). The RPC counters
 * belong here: slurmctld already accumulates them, we only copy its totals.
 */
import { closedValues, defineMetric as spec, switchedBy } from '../../telemetry/spec.js';

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

/** The values of the legacy labels: Slurm's base state as Soperator names it, then three "true"/"false". */
export const LEGACY_STATE_VALUES = {
  state_base: ['UNKNOWN', 'DOWN', 'IDLE', 'ALLOCATED', 'ERROR', 'MIXED', 'FUTURE'],
  state_is_drain: ['true', 'false'],
  state_is_maintenance: ['true', 'false'],
  state_is_reserved: ['true', 'false'],
} as const;

/** A newer flag, or whether the node is unavailable: "true" or empty. */
const FLAG_VALUES = ['true', ''] as const;

const NODE_INFO_VALUES = {
  ...LEGACY_STATE_VALUES,
  ...(Object.fromEntries(NEW_STATE_FLAG_LABELS.map((l) => [l, FLAG_VALUES])) as Record<
    (typeof NEW_STATE_FLAG_LABELS)[number],
    typeof FLAG_VALUES
  >),
  is_unavailable: FLAG_VALUES,
};

const NODE_INFO_LABELS = [
  'node_name',
  'instance_id',
  'nodeset_name',
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

export const CLUSTER_METRICS = {
  nodeInfo: closedValues(
    spec(
      'gauge',
      'slurm_node_info',
      '',
      NODE_INFO_LABELS,
      "Slurm node identity and state: Soperator NodeSet (the worker pod's slurm.nebius.ai/nodeset label, pending pods included; empty without), base state, state flags, whether the exporter considers it unavailable, reservation, address, reason and comment; value is always 1.",
    ),
    NODE_INFO_VALUES,
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
    "One series per job and node it runs (or ran) on, with the node's NVLink instance group and Soperator NodeSet from Kubernetes (empty without); value is always 1.",
  ),
  nodeNvlinkInstanceGroup: switchedBy(
    spec(
      'gauge',
      'slurm_node_nvlink_instance_group',
      '',
      ['node_name', 'instance_id', 'nvlink_instance_group', 'nodeset_name'],
      "Slurm node → NVLink instance group, from the label of the Kubernetes Node its worker pod runs on, and its NodeSet, from the worker pod's label (Soperator); only for nodes whose group is known; value is always 1.",
    ),
    { option: '--optional-collectors', value: 'topology', listed: true },
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
