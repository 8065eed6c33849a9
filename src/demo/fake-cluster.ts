/**
 * A deterministic, time-driven simulation of a small Slurm cluster, for the demo, the tests and
 * the benchmarks. Given a seed and a start time it always evolves the same way, whatever the
 * steps `advance()` is called with: time is cut into fixed ticks and every random draw comes from
 * one seeded generator, consumed in the same order tick after tick.
 *
 * What moves: jobs are submitted, wait (Resources / Priority / JobArrayTaskLimit / BeginTime),
 * start, and end COMPLETED, FAILED, CANCELLED or TIMEOUT; finished jobs leave slurmctld after
 * MinJobAge but stay in slurmdbd; array masters hand out tasks within their `%N` limit; nodes are
 * drained with a reason and resumed once empty; a node stops answering, goes DOWN +
 * NOT_RESPONDING after SlurmdTimeout (its jobs are requeued) and comes back; controller counters
 * (RPCs by type and user, scheduler cycles, job totals) only grow while `server_thread_count`
 * and the agent queue wander.
 */
import { ControllerStats, QUEUE_DEPTH } from './fake-controller-stats.js';
import type { ClusterView, FakeAssociation, FakeJob, FakeNode, FakeOutcome, FakeUser } from './fake-cluster-types.js';
import { associationsOf, FAKE_QOS } from './fake-cluster-limits.js';
import { compressHostlist, isTerminal, jobAllocTres } from './fake-cluster-types.js';
import { SPECIALIZED_MEMORY_MIB } from './fake-cluster-derived.js';
import { Prng } from './prng.js';

export * from './fake-cluster-types.js';
export { Prng } from './prng.js';

/** 2025-11-24 16:00:00 UTC, the reference moment of the built fixtures. */
export const DEFAULT_START_MS = 1_764_000_000_000;
export const TICK_SECONDS = 10;
/** Slurm's MinJobAge: how long a finished job stays visible in slurmctld. */
export const MIN_JOB_AGE_SECONDS = 300;
/** Slurm's SlurmdTimeout: how long a node may stay silent before it is set DOWN. */
export const SLURMD_TIMEOUT_SECONDS = 300;
/** Delay before a job requeued after a node failure becomes eligible again. */
const REQUEUE_DELAY_SECONDS = 120;
/** A running job without a time limit reports this end time (start + 1 year). */
const YEAR_SECONDS = 365 * 86_400;
/** How long slurmdbd keeps a finished job here (a real one keeps it for months; memory is finite). */
const ACCOUNTING_RETENTION_SECONDS = 86_400;

/** Per node and per tick: how often things happen (8 nodes: a drain every ~40 min, etc.). */
const RATES = {
  drain: 0.0005,
  notResponding: 0.00025,
  resumeDrained: 0.02,
  submit: 0.03,
} as const;

const DRAIN_REASONS = [
  'GPU health check failed: XID 79',
  'maintenance: IB firmware upgrade',
  'HCA mlx5_2 link flapping',
  'kernel upgrade',
  'ECC errors on DIMM B2',
] as const;

const USERS: readonly FakeUser[] = [
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

interface Partition {
  readonly name: string;
  readonly nodeIdx: readonly number[];
  readonly gpusPerNode: number;
  cursor: number;
}

/** What a new job asks for, before it gets an id. */
interface JobRequest {
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

export class FakeCluster {
  readonly clusterName: string;
  /** Protected, like the workload helpers below: test/support/big-cluster.ts fills large clusters with them. */
  protected readonly rng: Prng;
  private readonly parts: readonly Partition[];
  private readonly nodeList: FakeNode[];
  /** Insertion order is the order slurmctld lists jobs in. */
  private readonly ctld = new Map<number, FakeJob>();
  private readonly dbd = new Map<number, FakeJob>();
  private readonly stats: ControllerStats;
  private readonly associations: readonly FakeAssociation[];
  private nowMs: number;
  private nextTick: number;
  private nextJobId = 2000;
  /** Nodes that random drains and outages leave alone (they carry pinned jobs). */
  private readonly steady = new Set<number>();
  private nodesChangedAt: number;
  private jobsUpdatedAt: number;

  constructor(opts: FakeClusterOptions = {}) {
    this.clusterName = opts.clusterName ?? 'gpu-lab';
    this.rng = new Prng(opts.seed ?? 1);
    this.nowMs = opts.startMs ?? DEFAULT_START_MS;
    const t0 = Math.floor(this.nowMs / 1000);
    this.nextTick = t0 + TICK_SECONDS;
    this.nodesChangedAt = t0;
    this.jobsUpdatedAt = t0;
    const specs = partitionSpecs(opts);
    this.nodeList = buildNodes(specs, t0);
    this.parts = buildPartitions(specs, this.nodeList);
    this.stats = new ControllerStats(this.rng, USERS, t0);
    // A user's limits on one partition: the GPU one where there is one.
    const limited = specs.find((p) => (p.gpusPerNode ?? 0) > 0) ?? specs[0];
    this.associations = associationsOf(USERS, limited?.name ?? '');
    if (opts.pinned) this.pin(opts.pinned, t0);
    if ((opts.workload ?? 'demo') === 'demo') this.seedDemoWorkload(t0);
    this.schedule(t0);
  }

  /** Current simulated time, ms. */
  get now(): number {
    return this.nowMs;
  }

  /** When a node record last changed (Unix seconds): what `update_time` queries compare with. */
  get nodesUpdatedAt(): number {
    return this.nodesChangedAt;
  }

  /** Moves simulated time forward by `ms`, running every tick that falls inside. */
  advance(ms: number): void {
    if (!Number.isFinite(ms) || ms < 0) throw new RangeError(`advance() needs a non-negative duration, got ${ms}`);
    this.advanceTo(this.nowMs + ms);
  }

  /** Moves simulated time to `ms` (a clock reading); earlier times are ignored. */
  advanceTo(ms: number): void {
    if (ms <= this.nowMs) return;
    while (this.nextTick * 1000 <= ms) {
      this.tick(this.nextTick);
      this.nextTick += TICK_SECONDS;
    }
    this.nowMs = ms;
  }

  /** A consistent snapshot for rendering: arrays are copied, records are immutable. */
  view(): ClusterView {
    return {
      clusterName: this.clusterName,
      now: Math.floor(this.nowMs / 1000),
      nodes: this.nodeList.slice(),
      jobs: [...this.ctld.values()],
      accounting: [...this.dbd.values()],
      diag: this.stats.snapshot(),
      qos: FAKE_QOS,
      associations: this.associations,
      nodesUpdatedAt: this.nodesChangedAt,
      jobsUpdatedAt: this.jobsUpdatedAt,
    };
  }

  // ---------------------------------------------------------------- one tick

  private tick(t: number): void {
    this.finishDue(t);
    this.nodeEvents(t);
    this.submitRandom(t);
    const sched = this.schedule(t);
    this.purge(t);
    this.stats.tick(t, { ...sched, pending: this.countState('PENDING'), running: this.countState('RUNNING') });
  }

  private finishDue(t: number): void {
    const due: FakeJob[] = [];
    for (const j of this.ctld.values()) if (j.state === 'RUNNING' && j.startTime + j.runSeconds <= t) due.push(j);
    for (const j of due) this.finishJob(j, j.startTime + j.runSeconds);
  }

  private purge(t: number): void {
    for (const j of [...this.ctld.values()]) {
      if (isTerminal(j) && j.endTime + MIN_JOB_AGE_SECONDS <= t) this.ctld.delete(j.id);
    }
    for (const j of this.dbd.values()) {
      // Records sit in submission order, roughly end order: stop at the first one still retained.
      if (isTerminal(j) && j.endTime + ACCOUNTING_RETENTION_SECONDS <= t) this.dbd.delete(j.id);
      else if (isTerminal(j)) break;
    }
  }

  // ---------------------------------------------------------------- nodes

  private nodeEvents(t: number): void {
    for (const n of this.nodeList) {
      if (n.downUntil > 0 && n.downUntil <= t) this.recoverNode(n, t);
      else if (n.notRespondingSince > 0 && n.downUntil === 0 && t - n.notRespondingSince >= SLURMD_TIMEOUT_SECONDS)
        this.markDown(n, t);
      else if (n.drain && n.allocCpus === 0 && this.rng.chance(RATES.resumeDrained))
        this.setNode(n, { drain: false, reason: '', reasonSetBy: '', reasonChangedAt: 0 }, t);
    }
    const nodes = this.nodeList.length;
    for (let i = this.rng.count(RATES.drain * nodes); i > 0; i--) {
      const n = this.healthyNode();
      if (n !== undefined)
        this.setNode(
          n,
          { drain: true, reason: this.rng.pick(DRAIN_REASONS), reasonSetBy: 'root', reasonChangedAt: t },
          t,
        );
    }
    for (let i = this.rng.count(RATES.notResponding * nodes); i > 0; i--) {
      const n = this.healthyNode();
      if (n !== undefined) this.setNode(n, { notRespondingSince: t }, t);
    }
  }

  /** A random node that is neither drained, down, silent nor steady (a few tries, then none). */
  private healthyNode(): FakeNode | undefined {
    for (let i = 0; i < 8; i++) {
      const n = this.rng.pick(this.nodeList);
      if (!n.drain && n.downUntil === 0 && n.notRespondingSince === 0 && !this.steady.has(n.index)) return n;
    }
    return undefined;
  }

  private markDown(n: FakeNode, t: number): void {
    const downUntil = t + TICK_SECONDS * this.rng.int(60, 360);
    this.setNode(n, { downUntil, reason: 'Not responding', reasonSetBy: 'slurm', reasonChangedAt: t }, t);
    for (const j of [...this.ctld.values()])
      if (j.state === 'RUNNING' && j.nodeIdx.includes(n.index)) this.requeue(j, t);
  }

  private recoverNode(n: FakeNode, t: number): void {
    this.setNode(
      n,
      {
        downUntil: 0,
        notRespondingSince: 0,
        reason: '',
        reasonSetBy: '',
        reasonChangedAt: 0,
        bootTime: t - 90,
        slurmdStartTime: t - 60,
      },
      t,
    );
    this.stats.nodeRegistered();
  }

  private setNode(n: FakeNode, change: Partial<FakeNode>, t: number): FakeNode {
    const next = withLoad({ ...n, ...change });
    this.nodeList[n.index] = next;
    this.nodesChangedAt = Math.max(this.nodesChangedAt, t);
    return next;
  }

  private allocate(idx: readonly number[], job: FakeJob, sign: 1 | -1, t: number): void {
    for (const i of idx) {
      const n = this.nodeList[i] as FakeNode;
      const change: Partial<FakeNode> = {
        allocCpus: n.allocCpus + sign * job.cpusPerNode,
        allocMemoryMiB: n.allocMemoryMiB + sign * job.memPerNodeMiB,
        allocGpus: n.allocGpus + sign * job.gpusPerNode,
        lastBusy: t,
      };
      this.setNode(n, change, t);
    }
  }

  private fits(n: FakeNode, job: FakeJob): boolean {
    if (n.drain || n.downUntil > 0 || n.notRespondingSince > 0) return false;
    return (
      n.cpus - n.allocCpus >= job.cpusPerNode &&
      usableMemory(n) - n.allocMemoryMiB >= job.memPerNodeMiB &&
      n.gpus - n.allocGpus >= job.gpusPerNode
    );
  }

  /**
   * Next-fit from the partition's cursor (at most `window` nodes), so load spreads and a full
   * partition costs one pass.
   */
  protected findNodes(job: FakeJob, window = Infinity): number[] | undefined {
    const part = this.parts.find((p) => p.name === job.partition);
    if (part === undefined || part.nodeIdx.length < job.nodeCount) return undefined;
    const found: number[] = [];
    const size = part.nodeIdx.length;
    const limit = Math.min(size, window);
    for (let k = 0; k < limit && found.length < job.nodeCount; k++) {
      const idx = part.nodeIdx[(part.cursor + k) % size] as number;
      if (this.fits(this.nodeList[idx] as FakeNode, job)) found.push(idx);
    }
    if (found.length < job.nodeCount) return undefined;
    part.cursor = (part.nodeIdx.indexOf(found[found.length - 1] as number) + 1) % size;
    return found.sort((a, b) => a - b);
  }

  // ---------------------------------------------------------------- jobs

  private pin(p: PinnedJobs, t0: number): void {
    const node = this.nodeList.find((n) => n.name === p.node);
    if (node === undefined) throw new RangeError(`pinned node ${p.node} is not in the cluster`);
    this.steady.add(node.index);
    const share = Math.max(1, p.jobs.length);
    for (const pj of p.jobs) {
      if (pj.gpus > node.gpus)
        throw new RangeError(`pinned job ${pj.id} wants ${pj.gpus} GPUs; ${p.node} has ${node.gpus}`);
      const job: FakeJob = {
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
      this.allocate(job.nodeIdx, job, 1, t0);
      this.stats.jobSubmitted(job.user.name);
      this.stats.jobStarted();
      this.setJob({ ...job, allocTres: jobAllocTres(job, node.gpuType) }, t0);
    }
  }

  private setJob(j: FakeJob, t: number): FakeJob {
    this.ctld.set(j.id, j);
    this.dbd.set(j.id, j);
    this.jobsUpdatedAt = Math.max(this.jobsUpdatedAt, t);
    return j;
  }

  protected submit(req: JobRequest, t: number): FakeJob {
    const id = this.nextJobId++;
    const tasks = req.tasks;
    const job: FakeJob = {
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
      ...(tasks !== undefined
        ? { array: { jobId: id, maxRunning: tasks.maxRunning, pendingTasks: range(0, tasks.count - 1) } }
        : {}),
      restartCnt: 0,
      allocTres: '',
      priority: 1000 + this.rng.int(0, 4000) + req.nodeCount * req.cpusPerNode,
    };
    this.stats.jobSubmitted(req.user.name);
    return this.setJob(job, t);
  }

  /** Starts `job` (or, for a pending array master, its next task) on `idx` at `t`. */
  protected startJob(job: FakeJob, idx: readonly number[], t: number): FakeJob {
    const runner = this.nextArrayTask(job, t) ?? job;
    const gpuType = (this.nodeList[idx[0] as number] as FakeNode).gpuType;
    const endTime = t + (runner.timeLimitMin === 'UNLIMITED' ? YEAR_SECONDS : runner.timeLimitMin * 60);
    const started: FakeJob = {
      ...runner,
      state: 'RUNNING',
      reason: 'None',
      startTime: t,
      endTime,
      nodeIdx: idx,
      nodeList: this.hostlist(idx),
    };
    this.allocate(idx, started, 1, t);
    this.stats.jobStarted();
    return this.setJob({ ...started, allocTres: jobAllocTres(started, gpuType) }, t);
  }

  /**
   * The task a pending array master hands out: a new job record while more tasks remain, the
   * master itself for the last one (Slurm reuses the master's id). Undefined for other jobs.
   */
  private nextArrayTask(job: FakeJob, t: number): FakeJob | undefined {
    const a = job.array;
    if (a?.pendingTasks === undefined || a.pendingTasks.length === 0) return undefined;
    const [task, ...rest] = a.pendingTasks as [number, ...number[]];
    const array = { jobId: a.jobId, maxRunning: a.maxRunning, taskId: task };
    const jittered = Math.round(job.runSeconds * (0.6 + 0.8 * this.rng.next()));
    const runSeconds = job.timeLimitMin === 'UNLIMITED' ? jittered : Math.min(jittered, job.timeLimitMin * 60);
    if (rest.length === 0) return { ...job, array, runSeconds };
    this.setJob({ ...job, array: { ...a, pendingTasks: rest } }, t);
    return { ...job, id: this.nextJobId++, array, runSeconds };
  }

  private finishJob(job: FakeJob, t: number): FakeJob {
    this.allocate(job.nodeIdx, job, -1, t);
    const reason = job.outcome === 'FAILED' ? 'NonZeroExitCode' : job.outcome === 'TIMEOUT' ? 'TimeLimit' : 'None';
    this.stats.jobEnded(job.outcome, job.nodeCount);
    return this.setJob({ ...job, state: job.outcome, reason, endTime: t }, t);
  }

  /** A job whose node failed goes back to the queue; it keeps its TRES, as Slurm's record does. */
  private requeue(job: FakeJob, t: number): void {
    this.allocate(job.nodeIdx, job, -1, t);
    const change = {
      state: 'PENDING',
      reason: 'BeginTime',
      eligibleTime: t + REQUEUE_DELAY_SECONDS,
      startTime: 0,
      endTime: 0,
      nodeIdx: [],
      nodeList: '',
    } as const;
    this.setJob({ ...job, ...change, restartCnt: job.restartCnt + 1 }, t);
  }

  private setReason(job: FakeJob, reason: string, t: number): void {
    if (job.reason !== reason) this.setJob({ ...job, reason }, t);
  }

  /**
   * One main-scheduler pass over the pending jobs by priority. A job that fits starts (even behind a
   * blocked one, as backfill would let it); the first that does not fit in a partition waits for
   * Resources, the later ones for Priority.
   */
  protected schedule(t: number): { tested: number; started: number; backfilled: number } {
    const running = this.runningArrayTasks();
    const blocked = new Set<string>();
    const out = { tested: 0, started: 0, backfilled: 0 };
    for (const job of this.pendingByPriority()) {
      if (job.eligibleTime > t) {
        this.setReason(job, 'BeginTime', t);
        continue;
      }
      if (out.tested++ >= QUEUE_DEPTH) break;
      // Requeued tasks count against the `%N` limit as much as the master's next task does.
      if (
        job.array !== undefined &&
        job.array.maxRunning > 0 &&
        (running.get(job.array.jobId) ?? 0) >= job.array.maxRunning
      ) {
        this.setReason(job, 'JobArrayTaskLimit', t);
        continue;
      }
      const idx = this.findNodes(job);
      if (idx === undefined) {
        this.setReason(job, blocked.has(job.partition) ? 'Priority' : 'Resources', t);
        blocked.add(job.partition);
        continue;
      }
      const started = this.startJob(job, idx, t);
      if (started.array !== undefined) running.set(started.array.jobId, (running.get(started.array.jobId) ?? 0) + 1);
      out.started++;
      if (blocked.has(job.partition)) out.backfilled++;
    }
    return out;
  }

  private pendingByPriority(): FakeJob[] {
    const pending: FakeJob[] = [];
    for (const j of this.ctld.values()) if (j.state === 'PENDING') pending.push(j);
    return pending.sort((a, b) => b.priority - a.priority || a.id - b.id);
  }

  private runningArrayTasks(): Map<number, number> {
    const running = new Map<number, number>();
    for (const j of this.ctld.values()) {
      if (j.state === 'RUNNING' && j.array !== undefined)
        running.set(j.array.jobId, (running.get(j.array.jobId) ?? 0) + 1);
    }
    return running;
  }

  /** New jobs arrive in proportion to the cluster's size; a queue of 4 per node is full. */
  private submitRandom(t: number): void {
    let pending = this.countState('PENDING');
    for (let i = this.rng.count(RATES.submit * this.nodeList.length); i > 0; i--) {
      const req = this.randomRequest(true);
      if (pending >= 4 * this.nodeList.length) continue;
      this.submit(req, t);
      pending++;
    }
  }

  private hostlist(idx: readonly number[]): string {
    return compressHostlist(idx.map((i) => (this.nodeList[i] as FakeNode).name));
  }

  // ---------------------------------------------------------------- random and scripted workloads

  protected randomRequest(allowArrays: boolean): JobRequest {
    const part = this.pickPartition();
    const user = this.rng.pick(USERS);
    const unlimited = this.rng.chance(0.03);
    const base = part.gpusPerNode > 0 ? this.gpuShape(part) : this.cpuShape(part, allowArrays);
    const timeLimitMin: number | 'UNLIMITED' = unlimited ? 'UNLIMITED' : base.limit;
    const { outcome, exitStatus } = this.randomOutcome(unlimited);
    const runSeconds =
      outcome === 'TIMEOUT' && timeLimitMin !== 'UNLIMITED'
        ? timeLimitMin * 60
        : Math.min(base.run, base.limit * 60 - 30);
    return { ...base, user, partition: part.name, timeLimitMin, runSeconds, outcome, exitStatus };
  }

  private pickPartition(): Partition {
    const total = this.nodeList.length;
    let r = this.rng.int(0, total - 1);
    for (const p of this.parts) {
      if (r < p.nodeIdx.length) return p;
      r -= p.nodeIdx.length;
    }
    return this.parts[0] as Partition;
  }

  private gpuShape(part: Partition) {
    const node = this.nodeList[part.nodeIdx[0] as number] as FakeNode;
    const gpus = Math.min(node.gpus, this.rng.pick([1, 2, 4, 8]));
    const nodeCount = Math.min(part.nodeIdx.length, this.rng.chance(0.8) ? 1 : this.rng.pick([2, 4]));
    const share = gpus / node.gpus;
    return {
      name: this.rng.pick(GPU_JOB_NAMES),
      nodeCount,
      gpusPerNode: gpus,
      cpusPerNode: Math.max(1, Math.floor(node.cpus * share)),
      memPerNodeMiB: Math.floor((usableMemory(node) * share) / 1024) * 1024,
      limit: this.rng.pick([240, 720, 1440]),
      run: this.rng.int(10 * 60, 6 * 3600),
    };
  }

  private cpuShape(part: Partition, allowArrays: boolean) {
    const node = this.nodeList[part.nodeIdx[0] as number] as FakeNode;
    const array = allowArrays && this.rng.chance(0.05);
    const cpus = array ? 4 : Math.min(node.cpus, this.rng.pick([2, 4, 8, 16, 32, 64]));
    const tasks = array ? { count: this.rng.int(4, 12), maxRunning: this.rng.int(2, 4) } : undefined;
    return {
      name: array ? 'sweep' : this.rng.pick(CPU_JOB_NAMES),
      nodeCount: array || this.rng.chance(0.9) ? 1 : Math.min(2, part.nodeIdx.length),
      gpusPerNode: 0,
      cpusPerNode: cpus,
      memPerNodeMiB: Math.min(cpus * 2048, usableMemory(node)),
      limit: this.rng.pick([60, 120, 240]),
      run: this.rng.int(2 * 60, 60 * 60),
      ...(tasks !== undefined ? { tasks } : {}),
    };
  }

  private randomOutcome(unlimited: boolean): { outcome: FakeOutcome; exitStatus: number } {
    const r = this.rng.next();
    if (r < 0.78) return { outcome: 'COMPLETED', exitStatus: 0 };
    if (r < 0.88) return { outcome: 'FAILED', exitStatus: this.rng.pick([1, 3, 137]) };
    if (r < 0.94 || unlimited) return { outcome: 'CANCELLED', exitStatus: 0 };
    return { outcome: 'TIMEOUT', exitStatus: 0 };
  }

  protected addFinished(req: JobRequest, submit: number, end: number): void {
    const job = this.submit(req, submit);
    const start = Math.max(submit, end - Math.min(req.runSeconds, end - submit));
    const idx = [this.rng.pick((this.parts.find((p) => p.name === job.partition) as Partition).nodeIdx)];
    const node = this.nodeList[idx[0] as number] as FakeNode;
    const done: FakeJob = {
      ...job,
      startTime: start,
      endTime: end,
      nodeIdx: idx,
      nodeList: node.name,
      allocTres: jobAllocTres(job, node.gpuType),
    };
    const reason = job.outcome === 'FAILED' ? 'NonZeroExitCode' : job.outcome === 'TIMEOUT' ? 'TimeLimit' : 'None';
    this.setJob({ ...done, state: job.outcome, reason }, end);
  }

  /**
   * The demo's opening scene: a 2-node GPU job, an 8-task array with 4 running and `4-7%4`
   * pending, an unlimited notebook, a whole-partition GPU job waiting for Resources and one behind
   * it for Priority, three recently finished jobs, and one drained GPU node.
   */
  private seedDemoWorkload(t0: number): void {
    const gpu = this.parts.find((p) => p.gpusPerNode > 0);
    const cpu = this.parts.find((p) => p.gpusPerNode === 0) ?? gpu;
    const alice = USERS[0] as FakeUser;
    const bob = USERS[1] as FakeUser;
    const ok = { outcome: 'COMPLETED', exitStatus: 0 } as const;
    if (gpu !== undefined) {
      const node = this.nodeList[gpu.nodeIdx[0] as number] as FakeNode;
      const half = Math.max(1, Math.floor(node.gpus / 2));
      const share = half / node.gpus;
      const memory = (fraction: number) => Math.floor((usableMemory(node) * fraction) / 1024) * 1024;
      const nodeCount = Math.min(2, gpu.nodeIdx.length);
      const shape = { gpusPerNode: half, cpusPerNode: Math.floor(node.cpus * share), memPerNodeMiB: memory(share) };
      this.startSeeded(
        {
          ...shape,
          ...ok,
          name: 'llm-train',
          user: alice,
          partition: gpu.name,
          nodeCount,
          timeLimitMin: 1440,
          runSeconds: 20 * 3600,
        },
        t0 - 7300,
        t0 - 7200,
      );
      if (gpu.nodeIdx.length >= 4) this.drainSeeded(gpu.nodeIdx[gpu.nodeIdx.length - 1] as number, t0 - 3600);
      const all = {
        nodeCount: gpu.nodeIdx.length,
        gpusPerNode: node.gpus,
        cpusPerNode: node.cpus,
        memPerNodeMiB: memory(1),
        timeLimitMin: 720,
        runSeconds: 4 * 3600,
        ...ok,
      };
      this.submit({ ...all, name: 'big-sim', user: bob, partition: gpu.name }, t0 - 120);
      this.submit(
        { ...all, nodeCount: Math.min(2, gpu.nodeIdx.length), name: 'finetune', user: alice, partition: gpu.name },
        t0 - 60,
      );
    }
    if (cpu !== undefined) this.seedCpuJobs(cpu, t0, bob, alice);
  }

  private seedCpuJobs(cpu: Partition, t0: number, bob: FakeUser, alice: FakeUser): void {
    const small = { partition: cpu.name, nodeCount: 1, gpusPerNode: 0, exitStatus: 0 } as const;
    const sweep = this.submit(
      {
        ...small,
        name: 'sweep',
        user: bob,
        cpusPerNode: 8,
        memPerNodeMiB: 16_384,
        timeLimitMin: 60,
        runSeconds: 25 * 60,
        outcome: 'COMPLETED',
        tasks: { count: 8, maxRunning: 4 },
      },
      t0 - 600,
    );
    let master = sweep;
    for (let k = 0; k < 4; k++) {
      const idx = this.findNodes(master);
      if (idx === undefined) break;
      this.startJob(master, idx, t0 - 580 + k * 5);
      master = this.ctld.get(sweep.id) as FakeJob;
    }
    const notebook = {
      ...small,
      name: 'notebook',
      user: alice,
      cpusPerNode: 16,
      memPerNodeMiB: 65_536,
      timeLimitMin: 'UNLIMITED',
      runSeconds: Infinity,
      outcome: 'CANCELLED',
    } as const;
    this.startSeeded(notebook, t0 - 2 * 86_400, t0 - 2 * 86_400 + 10);
    const done = { ...small, cpusPerNode: 4, memPerNodeMiB: 8192, timeLimitMin: 60, runSeconds: 600 } as const;
    this.addFinished({ ...done, name: 'eval', user: alice, outcome: 'COMPLETED', exitStatus: 0 }, t0 - 700, t0 - 60);
    this.addFinished({ ...done, name: 'preprocess', user: bob, outcome: 'FAILED', exitStatus: 3 }, t0 - 900, t0 - 100);
    this.addFinished({ ...done, name: 'stuck', user: bob, outcome: 'CANCELLED', exitStatus: 0 }, t0 - 3000, t0 - 200);
  }

  private startSeeded(req: JobRequest, submit: number, start: number): void {
    const job = this.submit(req, submit);
    const idx = this.findNodes(job);
    if (idx !== undefined) this.startJob(job, idx, start);
  }

  private drainSeeded(index: number, at: number): void {
    const n = this.nodeList[index] as FakeNode;
    if (n.allocCpus === 0)
      this.setNode(n, { drain: true, reason: DRAIN_REASONS[0], reasonSetBy: 'root', reasonChangedAt: at }, at);
  }

  private countState(state: FakeJob['state']): number {
    let n = 0;
    for (const j of this.ctld.values()) if (j.state === state) n++;
    return n;
  }
}

// ------------------------------------------------------------------ construction helpers

function partitionSpecs(opts: FakeClusterOptions): readonly PartitionSpec[] {
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

function buildNodes(specs: readonly PartitionSpec[], t0: number): FakeNode[] {
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

function buildPartitions(specs: readonly PartitionSpec[], nodes: readonly FakeNode[]): Partition[] {
  return specs.map((p) => ({
    name: p.name,
    nodeIdx: nodes.filter((n) => n.partition === p.name).map((n) => n.index),
    gpusPerNode: p.gpusPerNode ?? 0,
    cursor: 0,
  }));
}

/** Memory jobs may use: real memory minus what MemSpecLimit keeps for the system. */
function usableMemory(n: FakeNode): number {
  return n.realMemoryMiB - SPECIALIZED_MEMORY_MIB;
}

/** Load and free memory follow the allocation (a little per-node variation, no randomness). */
function withLoad(n: FakeNode): FakeNode {
  const cpuLoad = n.allocCpus * 97 + (n.index % 7) * 3;
  const freeMemMiB = Math.max(0, n.realMemoryMiB - n.allocMemoryMiB - 4096 - (n.index % 5) * 512);
  return { ...n, cpuLoad, freeMemMiB };
}

function range(lo: number, hi: number): number[] {
  const out: number[] = [];
  for (let i = lo; i <= hi; i++) out.push(i);
  return out;
}
