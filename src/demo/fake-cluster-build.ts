/**
 * The fake cluster's fixed parts: its users, partitions and nodes as built at the start, and the
 * random job shapes it submits (each drawn from the cluster's one generator, in a fixed order).
 */
import type { FakeJob, FakeNode, FakeOutcome, FakeUser } from './fake-cluster-types.js';
import { SPECIALIZED_MEMORY_MIB } from './fake-cluster-derived.js';
import type { Prng } from './prng.js';

/** A running job without a time limit reports this end time (start + 1 year). */
export const YEAR_SECONDS = 365 * 86_400;
export const DRAIN_REASONS = [
  'GPU health check failed: XID 79',
  'maintenance: IB firmware upgrade',
  'HCA mlx5_2 link flapping',
  'kernel upgrade',
  'ECC errors on DIMM B2',
] as const;

export const USERS: readonly FakeUser[] = [
  { name: 'alice', uid: 1001, account: 'ml-research' },
  { name: 'bob', uid: 1002, account: 'physics' },
  { name: 'carol', uid: 1003, account: 'ml-research' },
  { name: 'dave', uid: 1004, account: 'bio' },
  { name: 'erin', uid: 1005, account: 'physics' },
];

const GPU_JOB_NAMES = ['llm-train', 'finetune', 'eval', 'embed', 'rl-rollout'] as const;
const CPU_JOB_NAMES = ['preprocess', 'md-sim', 'align', 'render', 'bench', 'etl'] as const;

export interface PartitionSpec {
  readonly name: string;
  readonly nodes: number;
  /** GPUs per node; GPU nodes carry `gres/gpu=N` in their configured TRES. */
  readonly gpusPerNode?: number;
  /** A multiple of 4 (2 sockets × cores × 2 threads); default 128 on GPU nodes, 64 otherwise. */
  readonly cpusPerNode?: number;
  readonly memoryMiB?: number;
  /** Node name prefix; default: the partition name. */
  readonly prefix?: string;
}

export interface FakeClusterOptions {
  /** Node count when `partitions` is not given (split between a `gpu` and a `cpu` partition). */
  readonly nodes?: number;
  readonly seed?: number;
  readonly startMs?: number;
  readonly partitions?: readonly PartitionSpec[];
  readonly clusterName?: string;
  /** `demo` (default) starts with a scripted set of jobs and one drained node; `none` starts empty. */
  readonly workload?: 'demo' | 'none';
  /** Jobs that run on one node for the cluster's whole life (see PinnedJobs). */
  readonly pinned?: PinnedJobs;
}

/**
 * Jobs with fixed ids running on one node that stays healthy: the demo gives
 * the node agent's synthetic node the same job ids, so the two agents' series
 * join on job_id.
 */
export interface PinnedJobs {
  readonly node: string;
  readonly jobs: readonly { readonly id: number; readonly name: string; readonly gpus: number }[];
}

export interface Partition {
  readonly name: string;
  readonly nodeIdx: readonly number[];
  readonly gpusPerNode: number;
  cursor: number;
}

/** What a new job asks for, before it gets an id. */
export interface JobRequest {
  readonly name: string;
  readonly user: FakeUser;
  readonly partition: string;
  readonly nodeCount: number;
  readonly cpusPerNode: number;
  readonly memPerNodeMiB: number;
  readonly gpusPerNode: number;
  readonly timeLimitMin: number | 'UNLIMITED';
  readonly runSeconds: number;
  readonly outcome: FakeOutcome;
  readonly exitStatus: number;
  readonly tasks?: { readonly count: number; readonly maxRunning: number };
}

export function partitionSpecs(opts: FakeClusterOptions): readonly PartitionSpec[] {
  if (opts.partitions !== undefined) {
    const total = opts.partitions.reduce((s, p) => s + p.nodes, 0);
    const prefixes = opts.partitions.map((p) => p.prefix ?? p.name);
    if (new Set(prefixes).size !== prefixes.length)
      throw new RangeError('partitions need distinct names or prefixes (node names would repeat)');
    if (opts.nodes !== undefined && opts.nodes !== total)
      throw new RangeError(`nodes (${opts.nodes}) disagrees with the partitions' ${total} nodes`);
    if (opts.partitions.length === 0 || total < 1) throw new RangeError('a fake cluster needs at least one node');
    return opts.partitions;
  }
  const n = opts.nodes ?? 8;
  if (!Number.isInteger(n) || n < 1) throw new RangeError(`nodes must be a positive integer, got ${n}`);
  const gpu = Math.ceil(n / 2);
  return gpu === n
    ? [{ name: 'gpu', nodes: n, gpusPerNode: 8 }]
    : [
        { name: 'gpu', nodes: gpu, gpusPerNode: 8 },
        { name: 'cpu', nodes: n - gpu },
      ];
}

export function buildNodes(specs: readonly PartitionSpec[], t0: number): FakeNode[] {
  const nodes: FakeNode[] = [];
  specs.forEach((p, pi) => {
    const gpus = p.gpusPerNode ?? 0;
    const cpus = p.cpusPerNode ?? (gpus > 0 ? 128 : 64);
    if (cpus % 4 !== 0 || cpus < 4) throw new RangeError(`cpusPerNode must be a positive multiple of 4, got ${cpus}`);
    const width = Math.max(3, String(p.nodes).length);
    for (let i = 0; i < p.nodes; i++) {
      const index = nodes.length;
      const node: FakeNode = {
        index,
        name: `${p.prefix ?? p.name}-${String(i + 1).padStart(width, '0')}`,
        address: `10.${20 + pi}.${Math.floor(i / 250)}.${(i % 250) + 1}`,
        partition: p.name,
        sockets: 2,
        coresPerSocket: cpus / 4,
        threadsPerCore: 2,
        cpus,
        realMemoryMiB: p.memoryMiB ?? (gpus > 0 ? 1_031_000 : 257_000),
        gpus,
        gpuType: gpus > 0 ? 'h100' : '',
        features: gpus > 0 ? ['h100', 'ib'] : ['epyc'],
        allocCpus: 0,
        allocMemoryMiB: 0,
        allocGpus: 0,
        drain: false,
        notRespondingSince: 0,
        downUntil: 0,
        reason: '',
        reasonSetBy: '',
        reasonChangedAt: 0,
        bootTime: t0 - 12 * 86_400 - (index % 97) * 60,
        slurmdStartTime: t0 - 12 * 86_400 - (index % 97) * 60 + 40,
        lastBusy: t0 - 3600,
        cpuLoad: 0,
        freeMemMiB: 0,
      };
      nodes.push(withLoad(node));
    }
  });
  return nodes;
}

export function buildPartitions(specs: readonly PartitionSpec[], nodes: readonly FakeNode[]): Partition[] {
  return specs.map((p) => ({
    name: p.name,
    nodeIdx: nodes.filter((n) => n.partition === p.name).map((n) => n.index),
    gpusPerNode: p.gpusPerNode ?? 0,
    cursor: 0,
  }));
}

/** Memory jobs may use: real memory minus what MemSpecLimit keeps for the system. */
export function usableMemory(n: FakeNode): number {
  return n.realMemoryMiB - SPECIALIZED_MEMORY_MIB;
}

/** Load and free memory follow the allocation (a little per-node variation, no randomness). */
export function withLoad(n: FakeNode): FakeNode {
  const cpuLoad = n.allocCpus * 97 + (n.index % 7) * 3;
  const freeMemMiB = Math.max(0, n.realMemoryMiB - n.allocMemoryMiB - 4096 - (n.index % 5) * 512);
  return { ...n, cpuLoad, freeMemMiB };
}

export function range(lo: number, hi: number): number[] {
  const out: number[] = [];
  for (let i = lo; i <= hi; i++) out.push(i);
  return out;
}

/** A new job record for `req`: pending from `t`, an array master when it has tasks. */
export function newJob(req: JobRequest, id: number, t: number, priority: number): FakeJob {
  return {
    id,
    name: req.name,
    user: req.user,
    partition: req.partition,
    state: 'PENDING',
    reason: 'None',
    submitTime: t,
    eligibleTime: t,
    startTime: 0,
    endTime: 0,
    timeLimitMin: req.timeLimitMin,
    nodeCount: req.nodeCount,
    cpusPerNode: req.cpusPerNode,
    memPerNodeMiB: req.memPerNodeMiB,
    gpusPerNode: req.gpusPerNode,
    nodeIdx: [],
    nodeList: '',
    runSeconds: req.runSeconds,
    outcome: req.outcome,
    exitStatus: req.exitStatus,
    ...(req.tasks !== undefined
      ? { array: { jobId: id, maxRunning: req.tasks.maxRunning, pendingTasks: range(0, req.tasks.count - 1) } }
      : {}),
    restartCnt: 0,
    allocTres: '',
    priority,
  };
}

/** Whether `job` fits in what is left of node `n` (which must be up and not drained). */
export function fits(n: FakeNode, job: FakeJob): boolean {
  if (n.drain || n.downUntil > 0 || n.notRespondingSince > 0) return false;
  return (
    n.cpus - n.allocCpus >= job.cpusPerNode &&
    usableMemory(n) - n.allocMemoryMiB >= job.memPerNodeMiB &&
    n.gpus - n.allocGpus >= job.gpusPerNode
  );
}

/** A pinned job as it runs from the start: alone with its siblings on the pinned node, unlimited. */
export function pinnedJob(pj: PinnedJobs['jobs'][number], node: FakeNode, share: number, t0: number): FakeJob {
  return {
    id: pj.id,
    name: pj.name,
    user: USERS[0] as FakeUser,
    partition: node.partition,
    state: 'RUNNING',
    reason: 'None',
    submitTime: t0 - 900,
    eligibleTime: t0 - 900,
    startTime: t0 - 600,
    endTime: t0 - 600 + YEAR_SECONDS,
    timeLimitMin: 'UNLIMITED',
    nodeCount: 1,
    cpusPerNode: Math.floor(node.cpus / share),
    memPerNodeMiB: Math.floor(usableMemory(node) / share),
    gpusPerNode: pj.gpus,
    nodeIdx: [node.index],
    nodeList: node.name,
    runSeconds: Infinity,
    outcome: 'COMPLETED',
    exitStatus: 0,
    restartCnt: 0,
    allocTres: '',
    priority: 5000,
  };
}

// ------------------------------------------------------------------ random job shapes

export function pickPartition(rng: Prng, parts: readonly Partition[], total: number): Partition {
  let r = rng.int(0, total - 1);
  for (const p of parts) {
    if (r < p.nodeIdx.length) return p;
    r -= p.nodeIdx.length;
  }
  return parts[0] as Partition;
}

export function gpuShape(rng: Prng, part: Partition, node: FakeNode) {
  const gpus = Math.min(node.gpus, rng.pick([1, 2, 4, 8]));
  const nodeCount = Math.min(part.nodeIdx.length, rng.chance(0.8) ? 1 : rng.pick([2, 4]));
  const share = gpus / node.gpus;
  return {
    name: rng.pick(GPU_JOB_NAMES),
    nodeCount,
    gpusPerNode: gpus,
    cpusPerNode: Math.max(1, Math.floor(node.cpus * share)),
    memPerNodeMiB: Math.floor((usableMemory(node) * share) / 1024) * 1024,
    limit: rng.pick([240, 720, 1440]),
    run: rng.int(10 * 60, 6 * 3600),
  };
}

export function cpuShape(rng: Prng, part: Partition, node: FakeNode, allowArrays: boolean) {
  const array = allowArrays && rng.chance(0.05);
  const cpus = array ? 4 : Math.min(node.cpus, rng.pick([2, 4, 8, 16, 32, 64]));
  const tasks = array ? { count: rng.int(4, 12), maxRunning: rng.int(2, 4) } : undefined;
  return {
    name: array ? 'sweep' : rng.pick(CPU_JOB_NAMES),
    nodeCount: array || rng.chance(0.9) ? 1 : Math.min(2, part.nodeIdx.length),
    gpusPerNode: 0,
    cpusPerNode: cpus,
    memPerNodeMiB: Math.min(cpus * 2048, usableMemory(node)),
    limit: rng.pick([60, 120, 240]),
    run: rng.int(2 * 60, 60 * 60),
    ...(tasks !== undefined ? { tasks } : {}),
  };
}

export function randomOutcome(rng: Prng, unlimited: boolean): { outcome: FakeOutcome; exitStatus: number } {
  const r = rng.next();
  if (r < 0.78) return { outcome: 'COMPLETED', exitStatus: 0 };
  if (r < 0.88) return { outcome: 'FAILED', exitStatus: rng.pick([1, 3, 137]) };
  if (r < 0.94 || unlimited) return { outcome: 'CANCELLED', exitStatus: 0 };
  return { outcome: 'TIMEOUT', exitStatus: 0 };
}
