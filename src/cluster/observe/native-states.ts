/**
 * The state names slurmctld counts nodes and jobs under (`slurm_nodes_<state>`,
 * `slurm_jobs_<state>`, `slurm_partition_*_<state>`), from slurmrestd's state words, and how
 * many tasks a job record stands for.
 */
import type { NativeJobState, NativeNodeState, NativePartitionNodeState } from '../metrics.js';
import type { NodeBaseState, SlurmJob, SlurmNode } from '../model.js';
import { JOB_TERMINAL_STATES } from '../model.js';

// ---- node states ----

const BASE_NAMES: Readonly<Partial<Record<NodeBaseState, NativeNodeState>>> = {
  ALLOCATED: 'alloc',
  DOWN: 'down',
  IDLE: 'idle',
  MIXED: 'mixed',
  FUTURE: 'future',
  UNKNOWN: 'unknown',
};

/** Flag words as slurmrestd sends them → the state names slurmctld counts under. */
const FLAG_NAMES: Readonly<Record<string, NativeNodeState | 'powering_down'>> = {
  BLOCKED: 'blocked',
  COMPLETING: 'completing',
  CLOUD: 'cloud',
  DRAIN: 'drain',
  DYNAMIC_FUTURE: 'dyn_future',
  DYNAMIC_NORM: 'dyn_normal',
  EXTERNAL: 'external',
  FAIL: 'fail',
  INVALID_REG: 'invalid_reg',
  MAINTENANCE: 'maint',
  NOT_RESPONDING: 'noresp',
  PLANNED: 'planned',
  POWER_DOWN: 'power_down',
  POWER_UP: 'power_up',
  POWERED_DOWN: 'powered_down',
  POWERING_UP: 'powering_up',
  POWERING_DOWN: 'powering_down',
  REBOOT_ISSUED: 'reboot_issued',
  REBOOT_REQUESTED: 'reboot_req',
  RESERVED: 'resv',
};

/** Where the partition list spells a state differently. */
export const PARTITION_NAMES: Readonly<Partial<Record<string, NativePartitionNodeState>>> = {
  completing: 'cg',
  noresp: 'no_resp',
  reboot_req: 'reboot_requested',
};

/**
 * Every state name a node counts under: its base state, each flag, and the drain family as
 * slurmctld counts it: DRAIN on an allocated or mixed node is `draining` only; DRAIN otherwise
 * is both `drain` and `drained`.
 */
export function nodeStateNames(node: Pick<SlurmNode, 'state'>): (NativeNodeState | 'powering_down')[] {
  const out: (NativeNodeState | 'powering_down')[] = [];
  const base = BASE_NAMES[node.state.base];
  if (base !== undefined) out.push(base);
  for (const f of node.state.flags) {
    const name = FLAG_NAMES[f];
    if (name !== undefined && name !== 'drain' && !out.includes(name)) out.push(name);
  }
  if (node.state.flags.includes('DRAIN')) {
    const busy = node.state.base === 'ALLOCATED' || node.state.base === 'MIXED';
    out.push(...(busy ? (['draining'] as const) : (['drain', 'drained'] as const)));
  }
  return out;
}

export function countStates<K extends string>(
  keys: readonly K[],
  names: Iterable<readonly string[]>,
  rename: (n: string) => string = (n) => n,
): Record<K, number> {
  const counts = Object.fromEntries(keys.map((k) => [k, 0])) as Record<K, number>;
  for (const list of names)
    for (const n of list) {
      const k = rename(n) as K;
      if (k in counts) counts[k] += 1;
    }
  return counts;
}

// ---- jobs ----

const JOB_BASE_NAMES: Readonly<Record<string, NativeJobState>> = {
  PENDING: 'pending',
  RUNNING: 'running',
  SUSPENDED: 'suspended',
  COMPLETED: 'completed',
  CANCELLED: 'cancelled',
  FAILED: 'failed',
  TIMEOUT: 'timeout',
  NODE_FAIL: 'node_failed',
  PREEMPTED: 'preempted',
  BOOT_FAIL: 'bootfail',
  DEADLINE: 'deadline',
  OUT_OF_MEMORY: 'outofmemory',
};
const JOB_FLAG_NAMES: Readonly<Record<string, NativeJobState>> = {
  COMPLETING: 'completing',
  CONFIGURING: 'configuring',
  EXPEDITING: 'expediting',
  REQUEUE_FED: 'fed_requeued',
  POWER_UP_NODE: 'powerup_node',
  REQUEUED: 'requeued',
  RESIZING: 'resizing',
  REVOKED: 'revoked',
  SIGNALING: 'signaling',
  STAGE_OUT: 'stageout',
};
const HELD_REASONS: ReadonlySet<string> = new Set(['JobHeldUser', 'JobHeldAdmin']);

/** Held as slurmctld counts it: pending with reason JobHeldUser or JobHeldAdmin. */
export function isHeld(job: SlurmJob): boolean {
  return job.state[0] === 'PENDING' && HELD_REASONS.has(job.state_reason ?? '');
}

/** The state names a job counts under: base, flags, started (not pending), finished (terminal), hold. */
export function jobStateNames(job: SlurmJob): NativeJobState[] {
  const base = job.state[0] ?? '';
  const out: NativeJobState[] = [];
  const b = JOB_BASE_NAMES[base];
  if (b !== undefined) out.push(b);
  for (let i = 1; i < job.state.length; i++) {
    const f = JOB_FLAG_NAMES[job.state[i] as string];
    if (f !== undefined && !out.includes(f)) out.push(f);
  }
  if (b !== undefined && base !== 'PENDING') out.push('started');
  if (JOB_TERMINAL_STATES.has(base)) out.push('finished');
  if (isHeld(job)) out.push('hold');
  return out;
}

/** Most tasks one array record is taken to hold (a bound against a hostile range like `0-4000000000`). */
const MAX_ARRAY_TASKS = 10_000_000;

/**
 * Tasks a job record stands for, as slurmctld counts pending ones: the master record of an array
 * holds every task not yet split off (`2-7%2`: 6, `1,3,5-9:2`: 5); any other record is one.
 */
export function arrayTaskCount(job: Pick<SlurmJob, 'array_task_id'>): number {
  const id = job.array_task_id;
  // Most records are one task (no array, or a task split off): no parsing for them.
  if (id === undefined || (!id.includes('-') && !id.includes(','))) return 1;
  const expr = id.split('%')[0] ?? '';
  if (!/[-,]/.test(expr)) return 1;
  let n = 0;
  for (const part of expr.split(',')) {
    const m = /^(\d+)(?:-(\d+)(?::(\d+))?)?$/.exec(part.trim());
    if (!m) return 1;
    const lo = Number(m[1]);
    const hi = m[2] === undefined ? lo : Number(m[2]);
    const step = m[3] === undefined ? 1 : Math.max(1, Number(m[3]));
    if (hi >= lo) n += Math.floor((hi - lo) / step) + 1;
  }
  return Math.min(Math.max(n, 1), MAX_ARRAY_TASKS);
}
