/**
 * Attribution rules: pure functions over a snapshot and the previous state.
 *
 * A job gets series on a (device, port) only when it is the only holder of
 * the device and the agent saw everything; any doubt suppresses and says why.
 * Job counters start at 0 when the job becomes the sole user and add only the
 * increases seen while it stayed sole user: a counter missing from a few readings
 * meanwhile is compared with the last value seen, so its increase is not lost.
 */
import { increase } from '../read/hca.js';
import type { JobAllocation, NodeSnapshot } from './snapshot.js';
import { blindsDevice, describeUnreadable, type UnreadableProcess } from '../read/unreadable.js';
import type { GpuUnit } from '../read/gpus.js';
import type { GpuAllocationTable } from '../read/gres-source.js';

export type PortStatus = 'sole' | 'shared' | 'idle' | 'nonjob' | 'incomplete';
export const PORT_STATUSES: readonly PortStatus[] = ['sole', 'shared', 'idle', 'nonjob', 'incomplete'];

/** What any device that jobs hold is judged to be, and why. */
export interface Verdict {
  readonly status: PortStatus;
  /** Job ids holding the device (allocation ids for unresolved ones). */
  readonly jobs: readonly string[];
  readonly jobPids: readonly number[];
  readonly nonJobPids: readonly number[];
  /** The attributed job, when status is sole. */
  readonly soleJobId?: string;
  readonly why: string;
}

export interface PortVerdict extends Verdict {
  readonly device: string;
  readonly port: string;
}

/** One job's accumulated counters on one port. */
export interface JobSeries {
  readonly jobId: string;
  readonly device: string;
  readonly port: string;
  readonly startMs: number;
  readonly values: ReadonlyMap<string, bigint>;
  /**
   * Last raw value seen of each counter since the job last became sole user; absent after a
   * cycle it was not (what the port counted meanwhile belongs to no one job).
   */
  readonly last?: ReadonlyMap<string, bigint>;
}

export interface AttributionState {
  /** Keyed by `jobId device port`; kept while the job lives, even when suppressed. */
  readonly jobs: ReadonlyMap<string, JobSeries>;
  /** Device counter start times: a counter that goes down starts a new series. */
  readonly deviceStarts: ReadonlyMap<string, { readonly startMs: number; readonly last: bigint }>;
}

export const EMPTY_STATE: AttributionState = { jobs: new Map(), deviceStarts: new Map() };

/**
 * A GPU's statuses: a port's, and `unallocated`: the only job holding it is one Slurm did not give
 * it to (possible without ConstrainDevices), so it is not attributed.
 */
export type GpuStatus = PortStatus | 'unallocated';
export const GPU_STATUSES: readonly GpuStatus[] = [...PORT_STATUSES, 'unallocated'];

/** A GPU unit's verdict: the same statuses and rules as a port's (a GPU has no counters of ours). */
export interface GpuVerdict extends Omit<Verdict, 'status'> {
  readonly status: GpuStatus;
  readonly unit: GpuUnit;
  /** The jobs on this node Slurm gave this GPU to; absent when the allocation is unknown. */
  readonly allocatedTo?: readonly string[];
}

export interface Attribution {
  readonly verdicts: readonly PortVerdict[];
  readonly gpus?: readonly GpuVerdict[];
  readonly state: AttributionState;
}

export function attribute(snap: NodeSnapshot, prev: AttributionState): Attribution {
  const verdicts = judgePorts(snap);
  return {
    verdicts,
    gpus: judgeGpus(snap),
    state: { jobs: accumulate(snap, verdicts, prev.jobs), deviceStarts: deviceStarts(snap, prev.deviceStarts) },
  };
}

/**
 * GPU units under the ports' rules. No kernel evidence covers GPUs (the rdma cgroup and the list
 * of verbs contexts say nothing of them), so a process whose fds cannot all be known costs every
 * GPU what its policy says, whatever that evidence made of it for the HCAs.
 */
export function judgeGpus(snap: NodeSnapshot): GpuVerdict[] {
  const byKey = new Map(snap.allocations.map((a) => [a.key, a]));
  const blind = new Map<string, UnreadableProcess>();
  for (const u of snap.unreadable)
    if (u.policyEffect === 'job' && u.allocation !== undefined && !blind.has(u.allocation)) blind.set(u.allocation, u);
  const described = new Set(snap.gaps);
  const gaps = [
    ...snap.gaps,
    ...snap.unreadable
      .filter((u) => u.policyEffect === 'node')
      .map(describeUnreadable)
      .filter((g) => !described.has(g)),
  ];
  return snap.gpus.units.map((unit) => {
    const h = snap.gpuHolders.get(unit.key);
    const allocs = (h?.allocations ?? []).map((k) => byKey.get(k));
    const nonJobPids = h?.nonJobPids ?? [];
    const sole = allocs.length === 1 ? allocs[0] : undefined;
    const remaining = blindWhy(blind, allocs[0]?.key) ?? (allocs.length === 1 ? soleWhy(sole) : undefined);
    const [status, why] = decide(gaps, allocs.length, nonJobPids.length, remaining);
    const base = {
      unit,
      status,
      why,
      jobs: allocs.map((a) => a?.jobId ?? a?.id ?? '?'),
      jobPids: h?.jobPids ?? [],
      nonJobPids,
    };
    return withAllocation(
      status === 'sole' && sole?.jobId !== undefined ? { ...base, soleJobId: sole.jobId } : base,
      snap.gpuAllocation,
    );
  });
}

/**
 * Slurm's allocation beside what the holders say. A sole holder that Slurm did not give the GPU is
 * `unallocated`, not attributed; a job Slurm has not been asked about yet (it started after the last
 * squeue), a MIG unit, or a node whose allocation is unknown leave the verdict as the holders made it.
 */
export function withAllocation(v: GpuVerdict, table: GpuAllocationTable | undefined): GpuVerdict {
  if (table === undefined || !table.known)
    return { ...v, why: `${v.why}; allocation unknown (${table?.why ?? 'not read'})` };
  if (v.unit.gi !== undefined)
    return { ...v, why: `${v.why}; allocation unknown (MIG: Slurm's MIG GRES are not read)` };
  const device = v.unit.gpu.device;
  const allocatedTo = [...table.jobs].filter(([, devices]) => devices.includes(device)).map(([job]) => job);
  const given =
    allocatedTo.length === 0 ? 'Slurm gave it to no job here' : `Slurm gave it to job ${allocatedTo.join(', ')}`;
  const job = v.soleJobId;
  if (v.status !== 'sole' || job === undefined) return { ...v, allocatedTo, why: `${v.why}; ${given}` };
  if (!table.jobs.has(job))
    return {
      ...v,
      allocatedTo,
      why: `${v.why}; allocation of job ${job} unknown (Slurm not asked yet, or it could not answer)`,
    };
  if (allocatedTo.includes(job)) return { ...v, allocatedTo, why: `${v.why}; Slurm gave it this GPU` };
  const { soleJobId: _dropped, ...rest } = v;
  return {
    ...rest,
    allocatedTo,
    status: 'unallocated',
    why: `job ${job} holds it but Slurm did not give it this GPU (${given})`,
  };
}

export function judgePorts(snap: NodeSnapshot): PortVerdict[] {
  const byKey = new Map(snap.allocations.map((a) => [a.key, a]));
  const out: PortVerdict[] = [];
  for (const hca of snap.hca.hcas) {
    const blind = blindJobs(snap, hca.device);
    const h = snap.holders.get(hca.device);
    const allocs = (h?.allocations ?? []).map((k) => byKey.get(k));
    const jobs = allocs.map((a) => a?.jobId ?? a?.id ?? '?');
    const base = { device: hca.device, jobs, jobPids: h?.jobPids ?? [], nonJobPids: h?.nonJobPids ?? [] };
    const sole = allocs.length === 1 ? allocs[0] : undefined;
    const remaining = blindWhy(blind, allocs[0]?.key) ?? (allocs.length === 1 ? soleWhy(sole) : undefined);
    const [status, why] = decide(deviceGaps(snap, hca.device), allocs.length, base.nonJobPids.length, remaining);
    for (const p of hca.ports) {
      out.push(
        status === 'sole'
          ? { ...base, port: p.port, status, why, soleJobId: sole?.jobId }
          : { ...base, port: p.port, status, why },
      );
    }
  }
  return out;
}

/** What decides a port held by at most one job and nothing else: sole, or why it cannot be; idle when undefined. */
type Remaining = ['sole' | 'incomplete', string];

function decide(
  gaps: readonly string[],
  jobs: number,
  nonJob: number,
  remaining: Remaining | undefined,
): [PortStatus, string] {
  if (gaps.length > 0) return ['incomplete', `${gaps.length} gap(s) in what the agent could see, e.g. ${gaps[0]}`];
  if (jobs > 1) return ['shared', `${jobs} jobs hold the device`];
  if (nonJob > 0) return ['nonjob', `${nonJob} process(es) outside Slurm jobs hold the device`];
  return remaining ?? ['idle', 'no process holds the device'];
}

function soleWhy(sole: JobAllocation | undefined): Remaining {
  if (sole?.jobId === undefined)
    return ['incomplete', `the only holder's job id is unresolved: ${sole?.unresolved ?? 'unknown'}`];
  return ['sole', `job ${sole.jobId} is the only holder`];
}

/** Jobs with a process that may reach `device` and whose fd table is unreadable, by allocation key. */
function blindJobs(snap: NodeSnapshot, device: string): Map<string, UnreadableProcess> {
  const out = new Map<string, UnreadableProcess>();
  for (const u of snap.unreadable)
    if (u.effect === 'job' && u.allocation !== undefined && !out.has(u.allocation) && blindsDevice(u, device))
      out.set(u.allocation, u);
  return out;
}

/** The node's gaps, and those of processes outside the jobs that may reach `device` only. */
function deviceGaps(snap: NodeSnapshot, device: string): readonly string[] {
  const own = snap.unreadable.filter((u) => u.effect === 'node' && u.onlyOn?.includes(device) === true);
  return own.length === 0 ? snap.gaps : [...snap.gaps, ...own.map(describeUnreadable)];
}

/**
 * A job process whose fd table is unreadable may hold any device, but can
 * only add its own job as a holder. So: a port two jobs or a non-job process
 * hold stays shared or nonjob (certain either way); that job is never sole,
 * since the devices it holds are not all known; and a port held by one other
 * job, or by nobody, is incomplete, since that job may hold it too.
 */
function blindWhy(blind: ReadonlyMap<string, UnreadableProcess>, soleKey: string | undefined): Remaining | undefined {
  const own = soleKey === undefined ? undefined : blind.get(soleKey);
  if (own)
    return [
      'incomplete',
      `job ${own.job ?? '?'} has a process whose fd table cannot be read (PID ${own.pid} ${own.comm}): the devices it holds are not all known`,
    ];
  const other = blind.values().next().value;
  if (other)
    return [
      'incomplete',
      `job ${other.job ?? '?'} has a process whose fd table cannot be read (PID ${other.pid} ${other.comm}): it may hold this device too`,
    ];
  return undefined;
}

function accumulate(
  snap: NodeSnapshot,
  verdicts: readonly PortVerdict[],
  prev: ReadonlyMap<string, JobSeries>,
): Map<string, JobSeries> {
  const next = new Map<string, JobSeries>();
  const alive = new Set(snap.allocations.map((a) => a.jobId).filter((j): j is string => j !== undefined));
  // Series of living jobs survive suppression (the value never goes down while the job lives).
  for (const [key, s] of prev) if (alive.has(s.jobId)) next.set(key, { ...s, last: undefined });
  const counters = portCounters(snap);
  for (const v of verdicts) {
    if (v.status !== 'sole' || v.soleJobId === undefined) continue;
    const key = `${v.soleJobId} ${v.device} ${v.port}`;
    const raw = counters.get(`${v.device} ${v.port}`) ?? new Map<string, bigint>();
    const before = prev.get(key);
    next.set(
      key,
      before
        ? advance(before, raw)
        : { jobId: v.soleJobId, device: v.device, port: v.port, startMs: snap.atMs, values: zeroes(raw), last: raw },
    );
  }
  return next;
}

function advance(s: JobSeries, raw: ReadonlyMap<string, bigint>): JobSeries {
  const values = new Map(s.values);
  // Counters missing from this reading keep their last value seen.
  const last = new Map(s.last ?? []);
  for (const [name, cur] of raw) {
    const before = s.last?.get(name);
    const add = before === undefined ? 0n : increase(name, before, cur);
    values.set(name, (values.get(name) ?? 0n) + add);
    last.set(name, cur);
  }
  return { ...s, values, last };
}

function zeroes(raw: ReadonlyMap<string, bigint>): Map<string, bigint> {
  return new Map([...raw.keys()].map((k) => [k, 0n]));
}

function portCounters(snap: NodeSnapshot): Map<string, ReadonlyMap<string, bigint>> {
  const out = new Map<string, ReadonlyMap<string, bigint>>();
  for (const hca of snap.hca.hcas) for (const p of hca.ports) out.set(`${hca.device} ${p.port}`, p.counters);
  return out;
}

function deviceStarts(
  snap: NodeSnapshot,
  prev: AttributionState['deviceStarts'],
): Map<string, { startMs: number; last: bigint }> {
  const next = new Map<string, { startMs: number; last: bigint }>();
  const ports = new Set<string>();
  for (const hca of snap.hca.hcas) {
    for (const p of hca.ports) {
      ports.add(`${hca.device} ${p.port}`);
      for (const [name, value] of p.counters) {
        const key = `${hca.device} ${p.port} ${name}`;
        const before = prev.get(key);
        next.set(key, { startMs: before && value >= before.last ? before.startMs : snap.atMs, last: value });
      }
    }
  }
  // A counter missing from a few readings of a port that is still there has not restarted.
  for (const [key, v] of prev) if (!next.has(key) && ports.has(key.slice(0, key.lastIndexOf(' ')))) next.set(key, v);
  return next;
}
