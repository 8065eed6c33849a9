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
 * Fixed parts and random job shapes: fake-cluster-build.ts; the opening scene: fake-cluster-scene.ts.
 */
import { ControllerStats, QUEUE_DEPTH } from './fake-controller-stats.js';
import type { ClusterView, FakeAssociation, FakeJob, FakeNode } from './fake-cluster-types.js';
import { associationsOf, FAKE_QOS } from './fake-cluster-limits.js';
import { compressHostlist, isTerminal, jobAllocTres } from './fake-cluster-types.js';
import {
  buildNodes,
  buildPartitions,
  cpuShape,
  DRAIN_REASONS,
  gpuShape,
  partitionSpecs,
  pickPartition,
  newJob,
  fits,
  pinnedJob,
  randomOutcome,
  USERS,
  withLoad,
  YEAR_SECONDS,
  type FakeClusterOptions,
  type JobRequest,
  type Partition,
  type PinnedJobs,
} from './fake-cluster-build.js';
import { seedDemoWorkload, type SceneTarget } from './fake-cluster-scene.js';
import { Prng } from './prng.js';

export * from './fake-cluster-types.js';
export { Prng } from './prng.js';
export type { FakeClusterOptions, PartitionSpec, PinnedJobs } from './fake-cluster-build.js';

/** 2025-11-24 16:00:00 UTC, the reference moment of the built fixtures. */
export const DEFAULT_START_MS = 1_764_000_000_000;
export const TICK_SECONDS = 10;
/** Slurm's MinJobAge: how long a finished job stays visible in slurmctld. */
export const MIN_JOB_AGE_SECONDS = 300;
/** Slurm's SlurmdTimeout: how long a node may stay silent before it is set DOWN. */
export const SLURMD_TIMEOUT_SECONDS = 300;
/** Delay before a job requeued after a node failure becomes eligible again. */
const REQUEUE_DELAY_SECONDS = 120;
/** How long slurmdbd keeps a finished job here (a real one keeps it for months; memory is finite). */
const ACCOUNTING_RETENTION_SECONDS = 86_400;

/** Per node and per tick: how often things happen (8 nodes: a drain every ~40 min, etc.). */
const RATES = {
  drain: 0.0005,
  notResponding: 0.00025,
  resumeDrained: 0.02,
  submit: 0.03,
} as const;

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
    if ((opts.workload ?? 'demo') === 'demo') seedDemoWorkload(this.scene(), t0);
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
      if (fits(this.nodeList[idx] as FakeNode, job)) found.push(idx);
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
      const job = pinnedJob(pj, node, share, t0);
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
    const priority = 1000 + this.rng.int(0, 4000) + req.nodeCount * req.cpusPerNode;
    this.stats.jobSubmitted(req.user.name);
    return this.setJob(newJob(req, id, t, priority), t);
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

  private hostlist = (idx: readonly number[]): string => compressHostlist(idx.map((i) => this.nodeList[i]!.name));

  // ---------------------------------------------------------------- random and scripted workloads

  protected randomRequest(allowArrays: boolean): JobRequest {
    const part = pickPartition(this.rng, this.parts, this.nodeList.length);
    const user = this.rng.pick(USERS);
    const unlimited = this.rng.chance(0.03);
    const node = this.nodeList[part.nodeIdx[0] as number] as FakeNode;
    const base = part.gpusPerNode > 0 ? gpuShape(this.rng, part, node) : cpuShape(this.rng, part, node, allowArrays);
    const timeLimitMin: number | 'UNLIMITED' = unlimited ? 'UNLIMITED' : base.limit;
    const { outcome, exitStatus } = randomOutcome(this.rng, unlimited);
    const runSeconds =
      outcome === 'TIMEOUT' && timeLimitMin !== 'UNLIMITED'
        ? timeLimitMin * 60
        : Math.min(base.run, base.limit * 60 - 30);
    return { ...base, user, partition: part.name, timeLimitMin, runSeconds, outcome, exitStatus };
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

  /** What the scripted opening scene (fake-cluster-scene.ts) may do to this cluster. */
  private scene(): SceneTarget {
    return {
      parts: this.parts,
      nodes: this.nodeList,
      submit: (req, t) => this.submit(req, t),
      startSeeded: (req, submit, start) => this.startSeeded(req, submit, start),
      drainSeeded: (index, at) => this.drainSeeded(index, at),
      findNodes: (job) => this.findNodes(job),
      startJob: (job, idx, t) => this.startJob(job, idx, t),
      job: (id) => this.ctld.get(id),
      addFinished: (req, submit, end) => this.addFinished(req, submit, end),
    };
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
