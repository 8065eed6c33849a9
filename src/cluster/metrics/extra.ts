/** Families beyond Slurm's own set, in its naming style. */
import { allSwitchedBy, closedValues, type Switch } from '../../telemetry/spec.js';
import { gauge, values } from './gauge.js';
import type { GaugeSpec } from './gauge.js';
import { NATIVE_NODE_STATES } from './native.js';

/** A family of an optional sub-collector, on only when --optional-collectors lists it. */
function optional(collector: string): Switch {
  return { option: '--optional-collectors', value: collector, listed: true };
}

/** From /jobs (no request of their own). */
export const JOB_EXTRA_METRICS = {
  pendingReason: gauge(
    'slurm_jobs_pending_reason',
    ['reason', 'partition'],
    'Pending jobs by the reason slurmctld gives (Priority, Resources, JobHeldUser, ...) and partition; a job submitted to several partitions counts in each. From API v0.0.38.',
  ),
  gpuAllocated: gauge(
    'slurm_job_gpu_allocated',
    ['job_id', 'node_name', 'gpu_index', 'gpu_type'],
    "One series per GPU Slurm allocated to a running job on a node, from the job's gres_detail: gpu_index is Slurm's GRES index on that node (gres.conf order; not the device minor, nvidia-smi's index or a CUDA ordinal), gpu_type the GRES type (empty when none is given). Joins the node agent's GPU series by job_id and node_name = instance (host.name); value is always 1. From API v0.0.38.",
  ),
} as const;

/** From /licenses, its own sub-collector. */
export const LICENSE_METRICS = allSwitchedBy(optional('licenses'), {
  total: gauge('slurm_license_total', ['license'], 'Licenses configured (Total). From API v0.0.38.'),
  used: gauge('slurm_license_used', ['license'], 'Licenses in use by jobs. From API v0.0.38.'),
  free: gauge('slurm_license_free', ['license'], 'Licenses available to jobs now. From API v0.0.38.'),
  reserved: gauge('slurm_license_reserved', ['license'], 'Licenses held by reservations. From API v0.0.38.'),
} as const);

const RESERVATION = ['reservation'] as const;

/** From /reservations, its own sub-collector (node states joined from /nodes). */
export const RESERVATION_METRICS = allSwitchedBy(optional('reservations'), {
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
  nodeStates: closedValues(
    gauge(
      'slurm_reservation_nodes_state',
      ['reservation', 'state'],
      'Reserved nodes by state, under the state names of slurm_nodes_<state> and powering_down (a node counts under its base state and each flag). From API v0.0.38.',
    ),
    // A node powering down is counted under that name, which slurm_nodes_<state> has no family for.
    { state: [...NATIVE_NODE_STATES, 'powering_down'] },
  ),
} as const);

const SHARE = ['account', 'user', 'partition'] as const;
const share = (name: string, d: string): GaugeSpec<(typeof SHARE)[number]> =>
  gauge(
    `slurm_fairshare_${name}`,
    SHARE,
    `${d} One series per account (user empty) and per user in an account, as sshare lists them. From API v0.0.40.`,
  );

/** From /shares, its own sub-collector; nothing before v0.0.40 (Slurm 23.11), which has no /shares. */
export const FAIRSHARE_METRICS = allSwitchedBy(optional('shares'), {
  rawShares: share('raw_shares', 'Shares assigned (RawShares).'),
  normShares: share('norm_shares', 'Shares normalised to the whole cluster (NormShares).'),
  rawUsage: share('raw_usage', 'Decayed usage in CPU-seconds (RawUsage).'),
  normUsage: share('norm_usage', 'Usage normalised to the whole cluster (NormUsage).'),
  effectiveUsage: share('effective_usage', "Usage including the parent account's (EffectvUsage)."),
  factor: share('factor', 'Fairshare factor, 0 to 1 (FairShare).'),
  level: share('level', 'Fairshare factor at this level of the tree (LevelFS).'),
} as const);

const ASSOC = ['account', 'user', 'partition'] as const;

/** `--accounting-limits`: from slurmdbd's /qos and /associations, a sub-collector of its own. */
export const LIMIT_METRICS = allSwitchedBy({ option: '--accounting-limits' }, {
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
} as const);

/** Families beyond slurmctld's own, in the order of docs/metrics.md. */
export const EXTRA_SPECS: readonly GaugeSpec[] = [
  ...values(JOB_EXTRA_METRICS),
  ...values(LICENSE_METRICS),
  ...values(RESERVATION_METRICS),
  ...values(FAIRSHARE_METRICS),
  ...values(LIMIT_METRICS),
];
