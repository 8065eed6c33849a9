/**
 * What the native families of nodes, jobs and partitions count alike: per-render caches (TRES
 * strings parsed once, hosts numbered once, the distinct nodes of a group as a bitset), a node's
 * resources as slurmctld counts them, and the totals one job adds to a group of jobs.
 */
import { expandHostlist } from '../hostlist.js';
import { NATIVE_JOB_STATES, type NativeJobState } from '../metrics.js';
import type { SlurmJob, SlurmNode } from '../model.js';
import { parseTres, type Tres } from '../tres.js';
import { MIB } from './helpers.js';
import { arrayTaskCount, countStates, jobStateNames } from './native-states.js';

export type TresOf = (s: string | undefined) => Tres;
/** A job's nodes as small integers (one per distinct host name in the render). */
export type HostsOf = (job: SlurmJob) => readonly number[];
export const NO_HOSTS: readonly number[] = [];
export const NO_HOSTS_OF: HostsOf = () => NO_HOSTS;

/** TRES strings repeat across jobs and nodes (a few shapes): each distinct one is parsed once per render. */
export function tresCache(): TresOf {
  const cache = new Map<string, Tres>();
  return (s) => {
    const key = s ?? '';
    let t = cache.get(key);
    if (t === undefined) cache.set(key, (t = parseTres(s)));
    return t;
  };
}

/**
 * The nodes of a job (hostlists differ from job to job: expanded each time), each host numbered once:
 * the distinct-node counts of a group are then bits, not string sets (100k jobs, 3 groups each).
 * An unreadable hostlist stands for `node_count` nodes of its own.
 */
export function hostsCache(): HostsOf {
  const ids = new Map<string, number>();
  const idOf = (h: string): number => {
    let id = ids.get(h);
    if (id === undefined) ids.set(h, (id = ids.size));
    return id;
  };
  return (job) => {
    let names: string[];
    try {
      names = expandHostlist(job.nodes);
    } catch {
      names = Array.from({ length: job.node_count ?? 0 }, (_, i) => `\0${job.job_id}\0${i}`);
    }
    return names.map(idOf);
  };
}

/** Distinct node numbers seen, as a bitset that grows with the largest. */
export class NodeBits {
  private bits = new Uint32Array(0);
  size = 0;

  add(id: number): void {
    const word = id >>> 5;
    if (word >= this.bits.length) {
      const grown = new Uint32Array(Math.max(word + 1, this.bits.length * 2));
      grown.set(this.bits);
      this.bits = grown;
    }
    const bit = 1 << (id & 31);
    if ((this.bits[word] as number) & bit) return;
    this.bits[word] = (this.bits[word] as number) | bit;
    this.size++;
  }
}

// ---- what one node has, as slurmctld counts it ----

/**
 * Effective CPUs minus allocated ones (not Slurm's idle count: a drained node's CPUs count too).
 * Before v0.0.40 slurmrestd has no effective count: the configured CPUs stand in.
 */
export function nodeCpusIdle(n: SlurmNode): number | undefined {
  const effective = n.effective_cpus ?? n.cpus;
  return effective === undefined ? undefined : effective - (n.alloc_cpus ?? 0);
}

export function nodeMemoryEffective(n: SlurmNode): number | undefined {
  return n.real_memory === undefined ? undefined : n.real_memory - (n.specialized_memory ?? 0);
}

/** A node without gres/gpu in its TRES has 0 GPUs, as slurmctld counts it. */
export function nodeGpus(n: SlurmNode, tres: TresOf): number {
  return tres(n.tres).gpus ?? 0;
}

/** `gpu:tesla:1(IDX:0),gpu:a100:2(IDX:1-2)`: one count per GPU type, before its index list. */
const GRES_GPU = /(?:^|,)gpu(?::[^,(]*)?:(\d+)(?=\(|,|$)/g;

/** Allocated GPUs from the GRES in use (known without GPU TRES too); the used TRES otherwise. */
export function nodeGpusAlloc(n: Pick<SlurmNode, 'gres_used' | 'tres_used'>, tres: TresOf = parseTres): number {
  if (n.gres_used !== undefined && n.gres_used !== '') {
    let total = 0;
    for (const m of n.gres_used.matchAll(GRES_GPU)) total += Number(m[1]);
    return total;
  }
  return tres(n.tres_used).gpus ?? 0;
}

/**
 * A node holding a running or suspended job, as slurmctld's union of those jobs' nodes counts
 * it: slurmctld marks it allocated (mixed when partly), and idle again once its last job ended.
 */
export function holdsJobs(n: SlurmNode): boolean {
  return n.state.base === 'ALLOCATED' || n.state.base === 'MIXED';
}

// ---- what one job adds to a group of jobs ----

export interface JobTotals {
  /** slurmctld's `jobs`: pending array tasks one each (whole cluster) or records (user, account). */
  jobs: number;
  states: Record<NativeJobState, number>;
  cpusAlloc: number;
  memoryAllocMiB: number;
  nodes: NodeBits;
  /** The distinct nodes when known otherwise (the whole cluster's, from /nodes). */
  nodesAlloc?: number;
  gpusAlloc: number;
}

export const newTotals = (): JobTotals => ({
  jobs: 0,
  states: countStates(NATIVE_JOB_STATES, []),
  cpusAlloc: 0,
  memoryAllocMiB: 0,
  nodes: new NodeBits(),
  gpusAlloc: 0,
});

/** Running and suspended jobs hold their allocation; pending and finished ones hold none. */
function holdsAllocation(job: SlurmJob): boolean {
  const base = job.state[0];
  return base === 'RUNNING' || base === 'SUSPENDED';
}

/** One job record, as slurmctld adds it: pending and hold count each task of an array record. */
export interface JobView {
  readonly job: SlurmJob;
  readonly names: readonly NativeJobState[];
  readonly tasks: number;
  /** Its nodes while it holds them (running, suspended). */
  readonly hosts: readonly number[];
}

export function jobView(job: SlurmJob, hosts: HostsOf): JobView {
  const held = holdsAllocation(job);
  return { job, names: jobStateNames(job), tasks: arrayTaskCount(job), hosts: held ? hosts(job) : NO_HOSTS };
}

export function addJob(t: JobTotals, v: JobView, jobsAdd: number, tres: TresOf): void {
  t.jobs += jobsAdd;
  for (const n of v.names) t.states[n] += n === 'pending' || n === 'hold' ? v.tasks : 1;
  if (!holdsAllocation(v.job)) return;
  const alloc = tres(v.job.tres_alloc_str);
  t.cpusAlloc += alloc.cpus ?? v.job.cpus ?? 0;
  t.memoryAllocMiB += (alloc.memory_bytes ?? 0) / MIB;
  for (const h of v.hosts) t.nodes.add(h);
  t.gpusAlloc += alloc.gpus ?? 0;
}
