/**
 * Members of partitions, reservations, licenses and fairshare rows that the fake cluster does not
 * model (limits, defaults, timeouts, TRES usage), with the neutral values real slurmrestd 24.11 and
 * 26.05 send for a cluster that sets none of them (fixtures/slurm/recorded/slurm-24.11, -26.05).
 * Rendered so the fake's bodies have the recordings' shape in every version.
 */
import { nv, UNSET } from './slurm-render-v004x.js';

type Obj = Record<string, unknown>;
const INFINITE = Object.freeze({ set: false, infinite: true, number: 0 });

/** A partition's unmodelled configuration; `isDefault` is the first partition's flag in v0.0.45. */
export function partitionConfig4x(minor: number, isDefault: boolean): Obj {
  return {
    accounts: { allowed: '', deny: '' },
    groups: { allowed: '' },
    qos: { allowed: '', deny: '', assigned: '' },
    alternate: '',
    cluster: '',
    ...(minor >= 41 ? { select_type: minor >= 45 ? ['NONE'] : [] } : {}),
    defaults: {
      memory_per_cpu: 0,
      partition_memory_per_cpu: UNSET,
      partition_memory_per_node: nv(0),
      time: UNSET,
      job: '',
    },
    ...(minor >= 45 ? { flags: isDefault ? ['DEFAULT'] : [] } : {}),
    grace_time: 0,
    maximums: {
      cpus_per_node: INFINITE,
      cpus_per_socket: INFINITE,
      memory_per_cpu: 0,
      partition_memory_per_cpu: UNSET,
      partition_memory_per_node: nv(0),
      nodes: INFINITE,
      shares: 1,
      oversubscribe: { jobs: 1, flags: [] },
      time: INFINITE,
      over_time_limit: UNSET,
    },
    minimums: { nodes: 0 },
    node_sets: '',
    ...(minor >= 45 ? { preempt_mode: ['CLUSTER_GLOBAL'] } : {}),
    priority: { job_factor: 1, tier: 1 },
    timeouts: { resume: UNSET, suspend: UNSET },
    ...(minor >= 43 ? { topology: '' } : {}),
    suspend_time: UNSET,
  };
}

/** v0.0.45 moved the partition's exclusive and oversubscribe settings into `partition`. */
export function partitionState4x(minor: number): Obj {
  return minor >= 45 ? { exclusive: 'NO', oversubscribe: 'NO', state: ['UP'] } : { state: ['UP'] };
}

/** `cpus.task_binding`: a number up to v0.0.44, a flag list in v0.0.45. */
export function taskBinding4x(minor: number): unknown {
  return minor >= 45 ? [] : 0;
}

/** A reservation's unmodelled members; `cores` gives its `tres` string. */
export function reservationConfig4x(minor: number, cores: number): Obj {
  return {
    burst_buffer: '',
    core_specializations: [],
    features: '',
    groups: '',
    licenses: '',
    max_start_delay: 0,
    purge_completed: { time: nv(300) },
    ...(minor <= 44 ? { watts: {} } : {}),
    tres: `cpu=${cores}`,
  };
}

/** A license pool's bookkeeping members (`Nodes` from v0.0.44). */
export function licenseConfig4x(minor: number): Obj {
  return { LastConsumed: 0, LastDeficit: 0, LastUpdate: 0, ...(minor >= 44 ? { Nodes: '' } : {}) };
}

const SHARE_TRES = ['cpu', 'mem', 'energy', 'node', 'billing', 'fs/disk', 'vmem', 'pages', 'gres/gpu'];

/** A fairshare row's per-TRES usage: none, and no group limit. */
export function shareTres4x(): Obj {
  return {
    run_seconds: SHARE_TRES.map((name) => ({ name, value: nv(0) })),
    group_minutes: SHARE_TRES.map((name) => ({ name, value: INFINITE })),
    usage: SHARE_TRES.map((name) => ({ name, value: 0 })),
  };
}
